#!/usr/bin/env python3
"""How fast a job trains after its chief is killed and restarted, beside the same run before.

    benches/restarted_chief.py [--build DIR[,DIR2...]] [--rounds N] [--before S] [--after S]
                               [--window S] [--pause S] [--curve] [--transport shm|ipc|tcp]
                               [--out DIR] [-- EXTRA distributed_mnist FLAGS]

Each round starts examples/distributed_mnist as 1 ps + 2 workers, asynchronous
(--issync=0), on 127.0.0.1 ports; after --before seconds of training (default
30) the chief (worker 0) is killed with SIGKILL, and after --pause seconds (1)
started again with the same flags; it trains --after seconds more (45). Every
line a task prints is stamped with the time it arrived; the workers' step lines
(--log_every) give each worker's local steps over time, and the job's global
steps per second in a window is the sum of both workers' rates there.

Per round it prints the rate over the last 15 s before the kill (the baseline
of that round), then the rate in each --window (10 s) after the restarted chief's
first step, each as a share of the baseline, with worker 1's and the chief's
own rates, the time from the restart to the chief's first step, and how many
MB/s the ps sent the chief by tcp (from `ss`) before the kill and midway
after the restart: about 0 while large tensors go through shared memory
(--transport shm, the default), tens of MB/s when the ps's client of the
restarted chief sends them by tcp. With
--rounds N, plain and --curve rounds alternate when --curve is "both" (and
the builds' rounds when --build names several), and the last lines give the
medians. --curve (or --curve both) makes keys with
`rill keygen` and passes --curve_keys to every task.
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

STEP_LINE = re.compile(r"^Worker (\d+): local step (\d+), global step (\d+)")


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Task:
    """A task's process; its stdout lines, stamped, in `lines` and a log file."""

    def __init__(self, name, argv, log_path, err_path):
        self.name = name
        self.lines = []  # (time, line)
        self.log = open(log_path, "a")
        self.process = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                        stderr=open(err_path, "a"), text=True)
        self.started = time.time()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.process.stdout:
            now = time.time()
            self.lines.append((now, line.rstrip("\n")))
            self.log.write(f"{now:.3f} {line}")
            self.log.flush()

    def steps(self):
        """(time, local step) of each step line."""
        out = []
        for t, line in list(self.lines):
            m = STEP_LINE.match(line)
            if m:
                out.append((t, int(m.group(2))))
        return out

    def first_line_time(self, text):
        for t, line in list(self.lines):
            if text in line:
                return t
        return None

    def kill(self, sig=signal.SIGKILL):
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.thread.join(timeout=5)


def steps_in(samples, start, end):
    """Local steps a worker made in [start, end], from its (time, step) samples
    (linear between samples; 0 outside them)."""

    def at(t):
        if not samples or t <= samples[0][0]:
            return samples[0][1] if samples else 0
        for (t0, s0), (t1, s1) in zip(samples, samples[1:]):
            if t0 <= t <= t1:
                return s0 + (s1 - s0) * (t - t0) / (t1 - t0) if t1 > t0 else s1
        return samples[-1][1]

    return at(end) - at(start)


def tcp_bytes_sent(pid, port):
    """Bytes the process `pid` sent so far by tcp to 127.0.0.1:`port` (None without `ss`)."""
    try:
        listing = subprocess.run(["ss", "-tinpH", "dst", f"127.0.0.1:{port}"], capture_output=True,
                                 text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    total, mine = 0, False
    for line in listing.splitlines():
        if not line.startswith((" ", "\t")):
            mine = f"pid={pid}," in line
        elif mine:
            m = re.search(r"bytes_sent:(\d+)", line)
            total += int(m.group(1)) if m else 0
    return total


def tcp_rate(pid, port, seconds=5.0):
    """MB/s the process `pid` sends by tcp to `port`, over `seconds` from now."""
    first = tcp_bytes_sent(pid, port)
    time.sleep(seconds)
    last = tcp_bytes_sent(pid, port)
    return None if first is None or last is None else max(0, last - first) / seconds / 1e6


def wait_until(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise RuntimeError(f"timed out waiting for {what}")


def one_round(args, build, curve_keys, out):
    program = f"{build}/examples/distributed_mnist"
    ps_port, w0_port, w1_port = free_ports(3)
    logdir = tempfile.mkdtemp(prefix="logdir-", dir=out)
    common = [f"--ps_hosts=127.0.0.1:{ps_port}",
              f"--worker_hosts=127.0.0.1:{w0_port},127.0.0.1:{w1_port}",
              "--issync=0", "--quiet", f"--log_every={args.log_every}",
              "--validate_every=100000000", "--train_steps=100000000",
              f"--logdir={logdir}", f"--transport={args.transport}"]
    if curve_keys:
        common.append(f"--curve_keys={curve_keys}")
    common += args.extra

    def start(name, job, index):
        return Task(name, [program] + common + [f"--job_name={job}", f"--task_index={index}"],
                    f"{out}/{name}.log", f"{out}/{name}.err")

    tasks = {}
    try:
        tasks["ps"] = start("ps", "ps", 0)
        tasks["worker1"] = start("worker1", "worker", 1)
        tasks["chief"] = start("chief", "worker", 0)
        wait_until(lambda: len(tasks["chief"].steps()) >= 2 and len(tasks["worker1"].steps()) >= 2,
                   120, "both workers' first steps")
        first = max(tasks["chief"].steps()[0][0], tasks["worker1"].steps()[0][0])
        # What the ps sends the chief by tcp: nearly nothing while large
        # tensors go through shared memory.
        time.sleep(max(0.0, first + args.before - 6 - time.time()))
        tcp_before = tcp_rate(tasks["ps"].process.pid, w0_port)
        time.sleep(max(0.0, first + args.before - time.time()))
        kill_time = time.time()
        tasks["chief"].kill()
        old_chief = tasks.pop("chief")
        time.sleep(args.pause)
        restart_time = time.time()
        tasks["chief"] = start("chief", "worker", 0)
        wait_until(lambda: tasks["chief"].first_line_time("Session initialization complete")
                   is not None, 120, "the restarted chief's session")
        begin = tasks["chief"].first_line_time("Session initialization complete")
        time.sleep(max(0.0, begin + args.after / 2 - time.time()))
        tcp_after = tcp_rate(tasks["ps"].process.pid, w0_port)
        time.sleep(max(0.0, begin + args.after - time.time()))
        end = time.time()
    finally:
        for task in tasks.values():
            task.kill(signal.SIGTERM if task.name == "ps" else signal.SIGKILL)

    w1 = tasks["worker1"].steps()
    c_old = old_chief.steps()
    c_new = [(begin, 0)] + tasks["chief"].steps()  # Its first step line comes after --log_every.
    b0, b1 = kill_time - args.baseline, kill_time
    base_w1 = steps_in(w1, b0, b1) / args.baseline
    base_c = steps_in(c_old, b0, b1) / args.baseline
    result = {"baseline": base_w1 + base_c, "baseline_worker1": base_w1, "baseline_chief": base_c,
              "startup_s": begin - restart_time, "down_worker1": steps_in(w1, kill_time, begin) /
              max(1e-9, begin - kill_time), "ps_to_chief_tcp_mb_s": [tcp_before, tcp_after],
              "windows": []}
    t = begin
    while t + args.window <= end + 1e-6:
        r1 = steps_in(w1, t, t + args.window) / args.window
        rc = steps_in(c_new, t, t + args.window) / args.window
        result["windows"].append({"from_s": round(t - begin, 1), "rate": r1 + rc,
                                  "worker1": r1, "chief": rc})
        t += args.window
    return result


def show(label, r):
    base = r["baseline"]
    print(f"{label}: before the kill {base:.0f} global steps/s (worker 1 {r['baseline_worker1']:.0f},"
          f" chief {r['baseline_chief']:.0f}); worker 1 alone while the chief was down "
          f"{r['down_worker1']:.0f}; restarted chief's first step {r['startup_s']:.1f} s after its start")
    tcp = r["ps_to_chief_tcp_mb_s"]
    if None not in tcp:
        print(f"  the ps sent the chief {tcp[0]:.1f} MB/s by tcp before the kill, {tcp[1]:.1f} MB/s "
              "after the restart (large tensors by shared memory: about 0)")
    for w in r["windows"]:
        print(f"  after +{w['from_s']:5.1f} s: {w['rate']:6.0f} steps/s ({w['rate'] / base:5.2f} of before;"
              f" worker 1 {w['worker1']:.0f}, chief {w['chief']:.0f})")
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build",
                        help="a build directory, or several separated by commas: their rounds "
                             "alternate, for a before/after comparison in the same run")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--before", type=float, default=30)
    parser.add_argument("--baseline", type=float, default=15)
    parser.add_argument("--after", type=float, default=45)
    parser.add_argument("--window", type=float, default=10)
    parser.add_argument("--pause", type=float, default=1)
    parser.add_argument("--log_every", type=int, default=50)
    parser.add_argument("--curve", nargs="?", const="yes", default="no", choices=["no", "yes", "both"])
    parser.add_argument("--transport", default="shm", choices=["shm", "ipc", "tcp"])
    parser.add_argument("--out", default="")
    parser.add_argument("--json", action="store_true", help="print each round's result as JSON too")
    parser.add_argument("extra", nargs="*", help="more distributed_mnist flags (after --)")
    args = parser.parse_args()
    if args.baseline > args.before:
        parser.error("--baseline must not exceed --before")
    builds = args.build.split(",")
    for build in builds:
        for binary in ("examples/distributed_mnist", "cli/rill"):
            if not os.access(f"{build}/{binary}", os.X_OK):
                sys.exit(f"restarted_chief.py: {build}/{binary} is missing: "
                         f"ninja -C {build} examples/distributed_mnist cli/rill")
    out = args.out or tempfile.mkdtemp(prefix="rill-restarted-chief.")
    os.makedirs(out, exist_ok=True)
    keys = ""
    if args.curve != "no":
        keys = f"{out}/keys"
        if not os.path.isdir(keys):
            subprocess.run([f"{builds[0]}/cli/rill", "keygen", keys], check=True,
                           stdout=subprocess.DEVNULL)
    # (build, CURVE or not), alternated round by round.
    variants = [(b, c) for b in builds
                for c in {"no": [False], "yes": [True], "both": [False, True]}[args.curve]]

    def label(variant):
        build, curve = variant
        return (f"{build}" if len(builds) > 1 else "") + (" (CURVE)" if curve else "")

    print(f"restarted_chief.py: {args.rounds} rounds, logs in {out}")
    results = {v: [] for v in variants}
    for i in range(args.rounds):
        order = variants if i % 2 == 0 else variants[::-1]
        for v in order:
            round_dir = f"{out}/round{i}-{variants.index(v)}"
            os.makedirs(round_dir, exist_ok=True)
            r = one_round(args, v[0], keys if v[1] else "", round_dir)
            results[v].append(r)
            show(f"round {i} {label(v)}".rstrip(), r)
            if args.json:
                print("result: " + json.dumps(r))
    for v in variants:
        rs = results[v]
        n = min(len(r["windows"]) for r in rs)
        shares = [statistics.median(r["windows"][k]["rate"] / r["baseline"] for r in rs)
                  for k in range(n)]
        print(f"median over {len(rs)} rounds {label(v)}: before "
              f"{statistics.median(r['baseline'] for r in rs):.0f} steps/s; after the restart, "
              "per window, as a share of the same round's before: " +
              ", ".join(f"{s:.2f}" for s in shares) +
              f"; startup {statistics.median(r['startup_s'] for r in rs):.1f} s")


if __name__ == "__main__":
    main()
