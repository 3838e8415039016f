#!/usr/bin/env python3
"""Asynchronous training with workers coming and going, beside a fixed membership, same run.

    benches/elastic_training.py [--build DIR] [--rounds N] [--train_steps N] [--step_delay_ms N]

Each round trains examples/distributed_mnist twice on 1 ps + 2 workers, in an
order that alternates from round to round:

  fixed    the two workers from start to end
  elastic  a third worker joins the live job (--join, through the chief's
           server) after a fifth of the steps; worker 1 is killed at half of
           them, dropped by the chief, and comes back at two thirds

It prints the chief's test accuracy and global steps of every run, then the
median of each and their difference in points. Workers are slowed by
--step_delay_ms so that the changes land while the job trains.
"""
import argparse
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def global_step(path):
    steps = re.findall(r"global step ([0-9]+)", open(path).read())
    return int(steps[-1]) if steps else 0


def wait_for_step(path, step, process, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline and process.poll() is None:
        if global_step(path) >= step:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{path}: global step {step} not reached")


def run(build, mode, steps, delay, workdir):
    program = f"{build}/examples/distributed_mnist"
    hosts = [f"127.0.0.1:{free_port()}" for _ in range(3)]
    common = [f"--ps_hosts={hosts[0]}", f"--worker_hosts={hosts[1]},{hosts[2]}", "--issync=0",
              "--quiet", "--log_every=50", "--validate_every=100000"]
    training = [f"--train_steps={steps}", f"--step_delay_ms={delay}"]
    logs = {}

    def start(name, args):
        logs[name] = f"{workdir}/{mode}-{name}.log"
        return subprocess.Popen([program] + args, stdout=open(logs[name], "w"),
                                stderr=subprocess.STDOUT)

    ps = start("ps", common + ["--job_name=ps", "--task_index=0"])
    chief = start("chief", common + training + ["--job_name=worker", "--task_index=0"])
    worker1 = start("worker1", common + training + ["--job_name=worker", "--task_index=1"])
    others = [worker1]
    if mode == "elastic":
        wait_for_step(logs["chief"], steps // 5, chief)
        others.append(start("joiner", training + [f"--join={hosts[1]}", "--quiet",
                                                  "--log_every=50", "--validate_every=100000"]))
        wait_for_step(logs["chief"], steps // 2, chief)
        worker1.send_signal(signal.SIGKILL)
        worker1.wait()
        wait_for_step(logs["chief"], 2 * steps // 3, chief)
        others.append(start("worker1-back", common + training +
                            ["--job_name=worker", "--task_index=1"]))
    chief.wait(timeout=600)
    for process in others:
        if process.poll() is None:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
    ps.send_signal(signal.SIGTERM)
    ps.wait()
    log = open(logs["chief"]).read()
    result = re.search(r'"test_accuracy": ([0-9.]+).*"global_step": ([0-9]+)', log)
    if chief.returncode != 0 or result is None:
        raise RuntimeError(f"{mode}: the chief failed; see {logs['chief']}")
    changes = len(re.findall(r"membership: (worker [0-9]+ joined|dropped worker)", log))
    return float(result.group(1)), int(result.group(2)), changes


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train_steps", type=int, default=4000)
    parser.add_argument("--step_delay_ms", type=int, default=8)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="rill_elastic_")
    accuracy = {"fixed": [], "elastic": []}
    for round_index in range(args.rounds):
        order = ["fixed", "elastic"] if round_index % 2 == 0 else ["elastic", "fixed"]
        for mode in order:
            value, step, changes = run(args.build, mode, args.train_steps, args.step_delay_ms,
                                       workdir)
            accuracy[mode].append(value)
            print(f"round {round_index + 1} {mode:8s} test accuracy {value:.4f}  "
                  f"global step {step}  membership changes seen by the chief {changes}",
                  flush=True)
    fixed = statistics.median(accuracy["fixed"])
    elastic = statistics.median(accuracy["elastic"])
    print(f"median test accuracy: fixed {fixed:.4f}, elastic {elastic:.4f}, "
          f"difference {100 * (elastic - fixed):+.2f} points (logs in {workdir})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
