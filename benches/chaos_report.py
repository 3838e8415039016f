#!/usr/bin/env python3
"""The report of benches/chaos.sh: reads its runs' logs and checks the saves.

    benches/chaos_report.py OUT RILL SEED MODE...

OUT holds one directory per run (MODE-faultfree, MODE-chaos), each with
`events` (begin, start/kill/exit of a task, end: one line each, stamped),
the tasks' logs (every line stamped with the time it arrived) and the
chief's `logdir`. RILL is the rill binary, to read checkpoints back.
Prints one table row per run and, for a chaos run, what each kill cost;
exits 1 when a run failed or an acknowledged save was lost.
"""
import json
import os
import re
import subprocess
import sys

MAX_TO_KEEP = 5  # The saver's default retention.
TASKS = ("ps", "worker0", "worker1")
STEP = re.compile(r"Worker (\d): local step \d+, global step (\d+),")
SAVED = re.compile(r"CheckpointSaverHook: saved (\S+)")
RESTORED = re.compile(r"SessionManager: restored (\S+)")


def stamped(path):
    """(time, text) of every line of a task's log."""
    if not os.path.exists(path):
        return []
    lines = []
    with open(path, errors="replace") as log:
        for line in log:
            when, _, text = line.rstrip("\n").partition(" ")
            try:
                lines.append((float(when), text))
            except ValueError:
                pass
    return lines


def step_of(prefix):
    return int(prefix.rsplit("-", 1)[1])


def unreadable(rill, prefix):
    """Why the checkpoint cannot be read back, or None: it lists, and every
    tensor reads (its checksum checked)."""
    listing = subprocess.run([rill, "checkpoint", prefix], capture_output=True, text=True)
    if listing.returncode != 0:
        return listing.stderr.strip()
    for row in listing.stdout.splitlines()[1:-1]:
        name = row.split()[0]
        read = subprocess.run([rill, "checkpoint", prefix, "--tensor", name],
                              capture_output=True, text=True)
        if read.returncode != 0:
            return read.stderr.strip()
    return None


class Run:
    def __init__(self, path, rill):
        with open(f"{path}/events") as f:
            self.events = [line.split() for line in f]
        self.begin = float(self.events[0][0])
        self.end = float(self.events[-1][0])
        self.kills = [(float(e[0]), e[2]) for e in self.events if e[1] == "kill"]
        self.failures = []
        for e in self.events:
            # The ps ends when it is told to (SIGTERM) at the end.
            if e[1] == "exit" and e[3] != "0" and not (e[2] == "ps" and e[3] == "143"):
                self.failures.append(f"{e[2]} ended with {e[3]} at {float(e[0]) - self.begin:.0f} s")
            elif e[1] == "hard_timeout":
                self.failures.append("hard timeout: the chief never finished")
        logs = {t: stamped(f"{path}/{t}.log") for t in TASKS}
        self.result, self.chief_end = None, self.end
        for when, text in logs["worker0"]:
            if text.startswith("result: "):
                self.result, self.chief_end = json.loads(text[len("result: "):]), when
        if self.result is None:
            self.failures.append("the chief printed no result")
        self.sessions_recreated = sum(1 for t in ("worker0", "worker1") for _, text in logs[t]
                                      if "creating a new session" in text)
        # The global step as each worker saw it; the chief's acknowledged
        # saves and its restores.
        self.seen = sorted((when, int(m.group(1)), int(m.group(2)))
                           for t in ("worker0", "worker1") for when, text in logs[t]
                           if (m := STEP.search(text)))
        self.saves, self.restores = [], []
        for when, text in logs["worker0"]:
            if m := SAVED.search(text):
                self.saves.append((when, m.group(1)))
            elif m := RESTORED.search(text):
                self.restores.append((when, m.group(1)))
        self._check_restores(logs["worker0"])
        self._steps_lost()
        self._stalls()
        self._check_saves(rill, f"{path}/logdir")

    def _check_restores(self, chief_log):
        """Every chief session (a new chief, or one re-created after an
        error) restores the newest checkpoint before its first step once
        one was acknowledged: a chief that starts over has lost the saves."""
        acked, acked_at_start, starting, restored = False, False, None, False
        for when, text in chief_log:
            if "Initializing session..." in text or "creating a new session" in text:
                starting, acked_at_start, restored = when, acked, False
            elif RESTORED.search(text):
                restored = True
            elif SAVED.search(text):
                acked = True
            elif STEP.search(text) and starting is not None:
                if acked_at_start and not restored:
                    self.failures.append(
                        f"the chief's session of {starting - self.begin:.1f} s started over "
                        f"without restoring the acknowledged checkpoints")
                starting = None

    def _kill_before(self, when):
        """The index of the last kill at or before `when`, or None."""
        last = None
        for i, (killed, _) in enumerate(self.kills):
            if killed <= when:
                last = i
        return last

    def _steps_lost(self):
        """At each restore, the highest step seen since the last one less the
        restored step; a restore never goes back before the last
        acknowledged save."""
        timeline = sorted([(w, "seen", s) for w, _, s in self.seen] +
                          [(w, "saved", p) for w, p in self.saves] +
                          [(w, "restored", p) for w, p in self.restores],
                          key=lambda e: e[0])
        self.lost, self.lost_by_kill = 0, {}
        self.restored_by_kill = {}
        high, last_saved = 0, None
        for when, kind, value in timeline:
            if kind == "seen":
                high = max(high, value)
            elif kind == "saved":
                last_saved = value
                high = max(high, step_of(value))
            else:
                step = step_of(value)
                lost = max(0, high - step)
                self.lost += lost
                kill = self._kill_before(when)
                self.lost_by_kill[kill] = self.lost_by_kill.get(kill, 0) + lost
                self.restored_by_kill.setdefault(kill, []).append(os.path.basename(value))
                high = step
                if last_saved is not None and step < step_of(last_saved):
                    self.failures.append(
                        f"restored {value} at {when - self.begin:.1f} s, before the last "
                        f"acknowledged save {last_saved}")

    def _stalls(self):
        """The longest time in which no worker saw the global step change,
        from the first step logged to the last; each gap is counted against
        the kill before the step that ended it."""
        moved, last = [], {}
        for when, worker, step in self.seen:
            if last.get(worker) != step:
                moved.append(when)
            last[worker] = step
        self.stall, self.stall_at, self.stall_by_kill = 0.0, 0.0, {}
        for a, b in zip(moved, moved[1:]):
            kill = self._kill_before(b)
            self.stall_by_kill[kill] = max(self.stall_by_kill.get(kill, 0.0), b - a)
            if b - a > self.stall:
                self.stall, self.stall_at = b - a, a - self.begin

    def _check_saves(self, rill, logdir):
        """Every acknowledged checkpoint is still listed in the state file and
        reads back, unless five newer ones were saved after it (the saver
        retired it)."""
        listed = set()
        state = f"{logdir}/checkpoint"
        if os.path.exists(state):
            with open(state) as f:
                for line in f:
                    if m := re.match(r'all_model_checkpoint_paths: "(.*)"', line):
                        listed.add(os.path.normpath(os.path.join(logdir, m.group(1))))
        last_ack = {}
        for when, prefix in self.saves:
            last_ack[prefix] = when
        self.saves_checked, self.saves_lost = 0, []
        for prefix, when in sorted(last_ack.items(), key=lambda kv: kv[1]):
            newer = {p for w, p in self.saves if w > when and p != prefix}
            if len(newer) >= MAX_TO_KEEP and not os.path.exists(prefix + ".index"):
                continue
            self.saves_checked += 1
            if os.path.normpath(prefix) not in listed:
                self.saves_lost.append(f"{prefix}: not listed in {state}")
            elif (why := unreadable(rill, prefix)) is not None:
                self.saves_lost.append(f"{prefix}: {why}")
        self.failures += [f"acknowledged save lost: {s}" for s in self.saves_lost]

    def kills_by_task(self):
        return "/".join(str(sum(1 for _, t in self.kills if t == task)) for task in TASKS)


def main():
    out, rill, seed, modes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    ok = True
    rows = []
    for mode in modes:
        for name in ("faultfree", "chaos"):
            run = Run(f"{out}/{mode}-{name}", rill)
            for failure in run.failures:
                print(f"FAIL {mode} {name}: {failure}")
                ok = False
            rows.append((mode, name, run))

    for mode, name, run in rows:
        if not run.kills:
            continue
        print(f"\n{mode} chaos run, kill by kill (time since the start):")
        for i, (when, task) in enumerate(run.kills):
            restored = ", ".join(run.restored_by_kill.get(i, [])) or "no restore"
            print(f"  {when - run.begin:6.1f} s  {task:8} {restored}; "
                  f"{run.lost_by_kill.get(i, 0)} steps lost; "
                  f"longest stall {run.stall_by_kill.get(i, 0.0):.1f} s")

    print(f"\nseed {seed}; logs in {out}")
    print("| mode | run | wall s | global steps | test accuracy | steps lost | longest stall s "
          "| kills ps/w0/w1 | restores | sessions re-created | saves acked / checked "
          "| saves lost |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mode, name, run in rows:
        res = run.result or {}
        stall = f"{run.stall:.1f} (at {run.stall_at:.0f} s)" if run.stall else "-"
        print(f"| {mode} | {'fault-free' if name == 'faultfree' else name} "
              f"| {run.chief_end - run.begin:.0f} | {res.get('global_step', '-')} "
              f"| {res.get('test_accuracy', '-')} | {run.lost} | {stall} | {run.kills_by_task()} "
              f"| {len(run.restores)} | {run.sessions_recreated} "
              f"| {len(run.saves)} / {run.saves_checked} | {len(run.saves_lost)} |")
    print("\nnothing acknowledged as saved lost, every run finished: " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
