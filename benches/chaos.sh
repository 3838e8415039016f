#!/usr/bin/env bash
# Chaos run: between-graph training of Fashion-MNIST (examples/distributed_mnist)
# on 1 ps + 2 workers while a random task is SIGKILLed and restarted every
# 20-30 s, beside a fault-free run of the same number of global steps.
#
#   benches/chaos.sh [SECONDS] [--seed N] [--modes async,sync] [--train_steps N]
#                    [--build DIR] [--out DIR]
#
# SECONDS (default 240) is the time per mode: a short calibration run
# measures the steps per second, and the runs get as many global steps as a
# fault-free run does in SECONDS/2 (--train_steps sets them instead). The
# chaos run takes the other half and more. Modes: async (--issync=0) and
# sync (--issync=1 --backup_workers=1: each update takes one of the two
# workers' gradients).
#
# The chaos loop picks, with bash's RANDOM seeded by --seed (printed, so a
# run can be repeated), a delay of 20-30 s, a task (ps, worker 0 = chief,
# worker 1) and a pause of 1-4 s before the task is started again with the
# same flags, its output appended to its log; until the chief prints its
# result, or a hard timeout. Every line a task prints is stamped with the
# time it arrived.
#
# Per mode it reports the chief's test accuracy beside the fault-free run's,
# the global steps lost (how far the global step went back when the chief
# restored a checkpoint), the longest stall (the longest time no task saw
# the global step move), the kills per task and the wall time; and it
# checks that nothing acknowledged as saved was lost: every checkpoint the
# chief logged as saved is at the end still listed and readable (every
# tensor, checksums checked), unless the saver's retention (5 kept) retired
# it after five newer saves, and no restore went back before the last
# acknowledged save. Exits 1 on a failure: a run that did not finish, a
# task that exited with an error, a lost save.
set -euo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.."

seconds=240
seed=""
modes="async,sync"
train_steps=""
build=build
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --train_steps) train_steps="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    [0-9]*) seconds="$1"; shift ;;
    *) echo "chaos.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for value in "$seconds" ${seed:+"$seed"} ${train_steps:+"$train_steps"}; do
  if ! [[ "$value" =~ ^[0-9]+$ ]]; then
    echo "chaos.sh: '$value' is not a whole number" >&2; exit 2
  fi
done
if [ "$seconds" -lt 60 ]; then
  echo "chaos.sh: SECONDS $seconds: give at least 60 (kills come every 20-30 s)" >&2; exit 2
fi
bin="$build/examples/distributed_mnist"
rill="$build/cli/rill"
for b in "$bin" "$rill"; do
  if [ ! -x "$b" ]; then
    echo "chaos.sh: $b is missing: ninja -C $build examples/distributed_mnist cli/rill" >&2
    exit 2
  fi
done
[ -n "$seed" ] || seed=$(( $(date +%s) % 100000 ))
RANDOM=$seed
[ -n "$out" ] || out="$(mktemp -d /tmp/rill-chaos.XXXXXX)"
mkdir -p "$out"
echo "chaos.sh: seed $seed, $seconds s per mode, modes $modes, logs in $out"

# Each line stamped with the time it arrived (seconds since the epoch).
stamp() {
  python3 -c 'import sys, time
for line in iter(sys.stdin.readline, ""):
    sys.stdout.write(f"{time.time():.3f} {line}")
    sys.stdout.flush()'
}

now() { printf '%s' "$EPOCHREALTIME"; }

free_ports() {
  python3 -c 'import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))'
}

# The tasks of the run in progress, by name (ps, worker0, worker1).
declare -A pid
run_dir=""
flags=()

# start TASK: starts it with the run's flags, its output stamped and
# appended to RUN/TASK.log.
start() {
  local task="$1" job index
  case "$task" in
    ps) job=ps; index=0 ;;
    worker0) job=worker; index=0 ;;
    worker1) job=worker; index=1 ;;
  esac
  "$bin" "${flags[@]}" --job_name="$job" --task_index="$index" \
    > >(stamp >> "$run_dir/$task.log") 2>&1 &
  pid[$task]=$!
  echo "$(now) start $task ${pid[$task]}" >> "$run_dir/events"
}

# finish TASK SECONDS: waits for the task to end; records its exit code
# (killed when still running after SECONDS: "timeout").
finish() {
  local task="$1" limit="$2" waited=0 code=0
  while kill -0 "${pid[$task]}" 2>/dev/null && [ "$waited" -lt "$((limit * 10))" ]; do
    sleep 0.1; waited=$((waited + 1))
  done
  if kill -0 "${pid[$task]}" 2>/dev/null; then
    kill -KILL "${pid[$task]}" 2>/dev/null || true
    wait "${pid[$task]}" 2>/dev/null || true
    echo "$(now) exit $task timeout" >> "$run_dir/events"
    return
  fi
  wait "${pid[$task]}" 2>/dev/null || code=$?
  echo "$(now) exit $task $code" >> "$run_dir/events"
}

# stop_ps: a ps serves until it is told to stop (SIGTERM ends it cleanly).
stop_ps() {
  kill -TERM "${pid[ps]}" 2>/dev/null || true
  finish ps 10
}

# train RUN_DIR CHAOS(0|1) TIMEOUT FLAGS...: one run of 1 ps + 2 workers;
# with CHAOS, kills and restarts tasks until the chief is done.
train() {
  run_dir="$1"; local chaos="$2" timeout="$3"; shift 3
  rm -rf "$run_dir"; mkdir -p "$run_dir"
  local ports ps_port w0_port w1_port
  ports=$(free_ports)
  read -r ps_port w0_port w1_port <<< "$ports"
  flags=(--ps_hosts="127.0.0.1:$ps_port" --worker_hosts="127.0.0.1:$w0_port,127.0.0.1:$w1_port"
         --logdir="$run_dir/logdir" --log_every=20 --validate_every=1000000000 "$@")
  echo "$(now) begin" > "$run_dir/events"
  printf '%s\n' "${flags[@]}" > "$run_dir/flags"
  start ps; start worker1; start worker0
  local begin deadline next victim pause
  begin=$(date +%s)
  deadline=$((begin + timeout))
  next=$((begin + 20 + RANDOM % 11))
  local ended=()
  while kill -0 "${pid[worker0]}" 2>/dev/null; do
    # A ps or worker 1 that ended by itself (worker 1 when training is
    # done; anything else is a failure the report shows) is not restarted.
    for task in ps worker1; do
      if ! kill -0 "${pid[$task]}" 2>/dev/null && [[ " ${ended[*]} " != *" $task "* ]]; then
        finish "$task" 0
        ended+=("$task")
      fi
    done
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "$(now) hard_timeout" >> "$run_dir/events"
      echo "  hard timeout after $timeout s: the chief did not finish" >&2
      break
    fi
    if [ "$chaos" = 1 ] && [ "$(date +%s)" -ge "$next" ]; then
      victim=$(( RANDOM % 3 ))
      victim=$(case $victim in 0) echo ps ;; 1) echo worker0 ;; 2) echo worker1 ;; esac)
      pause=$(( 1 + RANDOM % 4 ))
      if kill -0 "${pid[$victim]}" 2>/dev/null; then
        kill -KILL "${pid[$victim]}" 2>/dev/null || true
        wait "${pid[$victim]}" 2>/dev/null || true
        echo "$(now) kill $victim ${pid[$victim]}" >> "$run_dir/events"
        echo "  $(date +%T) killed $victim; restarting it in $pause s"
        sleep "$pause"
        start "$victim"
      fi
      next=$(( $(date +%s) + 20 + RANDOM % 11 ))
    fi
    sleep 0.2
  done
  finish worker0 5
  [[ " ${ended[*]} " == *" worker1 "* ]] || finish worker1 120
  [[ " ${ended[*]} " == *" ps "* ]] || stop_ps
  echo "$(now) end" >> "$run_dir/events"
}

# Steps per second of a short fault-free run with FLAGS (the chief's).
calibrate() {
  local dir="$1"; shift
  train "$dir" 0 300 --train_steps=2000 "$@"
  python3 - "$dir/worker0.log" <<'PY'
import json, sys
lines = [l.split(" ", 1)[1] for l in open(sys.argv[1]) if " result: " in l]
if not lines:
    sys.exit(f"chaos.sh: the calibration run failed; see {sys.argv[1]}")
r = json.loads(lines[-1][len("result: "):])
print(f'{r["global_step"] / r["train_seconds"]:.0f}')
PY
}

status=0
IFS=, read -r -a mode_list <<< "$modes"
for mode in "${mode_list[@]}"; do
  case "$mode" in
    async) mode_flags=(--issync=0) ;;
    sync) mode_flags=(--issync=1 --backup_workers=1) ;;
    *) echo "chaos.sh: unknown mode '$mode' (async or sync)" >&2; exit 2 ;;
  esac
  # Checkpoints every 2 s: a ps kill loses about that much.
  mode_flags+=(--save_checkpoint_secs=2)
  steps="$train_steps"
  if [ -z "$steps" ]; then
    calibrate "$out/$mode-calibration" "${mode_flags[@]}" > "$out/$mode-calibration.rate"
    rate=$(cat "$out/$mode-calibration.rate")
    steps=$(python3 -c "print(max(1000, round($rate * $seconds / 2 / 100) * 100))")
    echo "== $mode: $rate steps/s fault-free, so $steps global steps per run"
  fi
  hard=$(( seconds * 3 + 300 ))
  echo "== $mode: fault-free run"
  train "$out/$mode-faultfree" 0 "$hard" --train_steps="$steps" "${mode_flags[@]}"
  echo "== $mode: chaos run (a random task killed every 20-30 s)"
  train "$out/$mode-chaos" 1 "$hard" --train_steps="$steps" "${mode_flags[@]}"
done

python3 - "$out" "$rill" "$seed" "${mode_list[@]}" <<'PY' || status=1
import json, os, re, subprocess, sys

out, rill, seed, modes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
MAX_TO_KEEP = 5  # The saver's default retention.
TASKS = ("ps", "worker0", "worker1")
STEP = re.compile(r"Worker (\d): local step \d+, global step (\d+),")
SAVED = re.compile(r"CheckpointSaverHook: saved (\S+)")
RESTORED = re.compile(r"SessionManager: restored (\S+)")


def stamped(path):
    if not os.path.exists(path):
        return []
    lines = []
    for line in open(path, errors="replace"):
        when, _, text = line.rstrip("\n").partition(" ")
        try:
            lines.append((float(when), text))
        except ValueError:
            pass
    return lines


def step_of(prefix):
    return int(prefix.rsplit("-", 1)[1])


def readable(prefix):
    """The checkpoint lists and every tensor reads back (checksums checked)."""
    listing = subprocess.run([rill, "checkpoint", prefix], capture_output=True, text=True)
    if listing.returncode != 0:
        return listing.stderr.strip()
    rows = listing.stdout.splitlines()[1:-1]
    for name in (row.split()[0] for row in rows):
        read = subprocess.run([rill, "checkpoint", prefix, "--tensor", name],
                              capture_output=True, text=True)
        if read.returncode != 0:
            return read.stderr.strip()
    return None


def analyse(run):
    events = [l.split() for l in open(f"{run}/events")]
    begin = float(events[0][0])
    end = float(events[-1][0])
    kills = {t: 0 for t in TASKS}
    failures = []
    for e in events:
        if e[1] == "kill":
            kills[e[2]] += 1
        elif e[1] == "exit" and e[3] != "0" and not (e[2] == "ps" and e[3] == "143"):
            failures.append(f"{e[2]} ended with {e[3]}")
        elif e[1] == "hard_timeout":
            failures.append("hard timeout: the chief never finished")
    logs = {t: stamped(f"{run}/{t}.log") for t in TASKS}
    result = None
    chief_end = end
    for when, text in logs["worker0"]:
        if text.startswith("result: "):
            result, chief_end = json.loads(text[len("result: "):]), when
    if result is None:
        failures.append("the chief printed no result")
    # The global step as each worker saw it, the saves the chief
    # acknowledged and the checkpoints it restored, in time order.
    seen, timeline = [], []
    for task in ("worker0", "worker1"):
        for when, text in logs[task]:
            if m := STEP.search(text):
                seen.append((when, int(m.group(1)), int(m.group(2))))
    for when, text in logs["worker0"]:
        if m := SAVED.search(text):
            timeline.append((when, "saved", m.group(1)))
        elif m := RESTORED.search(text):
            timeline.append((when, "restored", m.group(1)))
    timeline += [(when, "seen", step) for when, _, step in seen]
    timeline.sort(key=lambda e: e[0])

    # Steps lost: at each restore, the highest step seen since the last
    # restore less the restored step. A restore never goes back before
    # the last acknowledged save.
    lost, restores, high, last_saved = 0, 0, 0, None
    for when, kind, value in timeline:
        if kind == "seen":
            high = max(high, value)
        elif kind == "saved":
            last_saved = value
            high = max(high, step_of(value))
        else:
            restores += 1
            step = step_of(value)
            lost += max(0, high - step)
            high = step
            if last_saved is not None and step < step_of(last_saved):
                failures.append(f"restored {value} at {when - begin:.1f} s, before the last "
                                f"acknowledged save {last_saved}")

    # The longest stall: the longest time in which no worker saw the
    # global step change, from the first step logged to the last.
    moved, last = [], {}
    for when, worker, step in sorted(seen):
        if last.get(worker) != step:
            moved.append(when)
        last[worker] = step
    stall, stall_at = 0.0, 0.0
    for a, b in zip(moved, moved[1:]):
        if b - a > stall:
            stall, stall_at = b - a, a - begin

    # Nothing acknowledged as saved is lost: each acknowledged checkpoint is
    # still readable unless five newer ones were saved after it.
    acked = [(when, value) for when, kind, value in timeline if kind == "saved"]
    last_ack = {}
    for when, prefix in acked:
        last_ack[prefix] = when
    lost_saves, checked = [], 0
    for prefix, when in sorted(last_ack.items(), key=lambda kv: kv[1]):
        newer = {p for w, p in acked if w > when and p != prefix}
        if len(newer) >= MAX_TO_KEEP and not os.path.exists(prefix + ".index"):
            continue  # Retired by the saver.
        checked += 1
        if (why := readable(prefix)) is not None:
            lost_saves.append(f"{prefix}: {why}")
    failures += [f"acknowledged save lost: {s}" for s in lost_saves]
    sessions = sum(1 for t in ("worker0", "worker1") for _, text in logs[t]
                   if "creating a new session" in text)
    return {
        "result": result, "wall": chief_end - begin, "kills": kills, "lost": lost,
        "restores": restores, "stall": stall, "stall_at": stall_at, "saves": len(acked),
        "checked": checked, "lost_saves": lost_saves, "failures": failures,
        "recreated": sessions,
    }


ok = True
rows = []
for mode in modes:
    free = analyse(f"{out}/{mode}-faultfree")
    chaos = analyse(f"{out}/{mode}-chaos")
    for name, r in (("fault-free", free), ("chaos", chaos)):
        for failure in r["failures"]:
            print(f"FAIL {mode} {name}: {failure}")
            ok = False
    rows.append((mode, free, chaos))

print()
print(f"seed {seed}; logs in {out}")
print("| mode | run | wall s | global steps | test accuracy | steps lost | longest stall s "
      "| kills ps/w0/w1 | restores | sessions re-created | saves acked / checked | saves lost |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for mode, free, chaos in rows:
    for name, r in (("fault-free", free), ("chaos", chaos)):
        res = r["result"] or {}
        k = r["kills"]
        stall = f"{r['stall']:.1f} (at {r['stall_at']:.0f} s)" if r["stall"] else "-"
        print(f"| {mode} | {name} | {r['wall']:.0f} | {res.get('global_step', '-')} "
              f"| {res.get('test_accuracy', '-')} | {r['lost']} | {stall} "
              f"| {k['ps']}/{k['worker0']}/{k['worker1']} | {r['restores']} | {r['recreated']} "
              f"| {r['saves']} / {r['checked']} | {len(r['lost_saves'])} |")
print()
print("nothing acknowledged as saved lost, every run finished: " + ("PASS" if ok else "FAIL"))
sys.exit(0 if ok else 1)
PY
exit "$status"
