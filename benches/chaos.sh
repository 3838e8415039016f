#!/usr/bin/env bash
# Chaos run: between-graph training of Fashion-MNIST (examples/distributed_mnist)
# on 1 ps + 2 workers while a random task is SIGKILLed and restarted every
# 20-30 s, beside a fault-free run of the same number of global steps.
#
#   benches/chaos.sh [SECONDS] [--seed N] [--modes async,sync] [--every MIN-MAX]
#                    [--train_steps N] [--build DIR] [--out DIR] [--quiet]
#
# SECONDS (default 240) is the time per mode: a short calibration run
# measures the steps per second, and the runs get as many global steps as a
# fault-free run does in SECONDS/2 (--train_steps sets them instead). The
# chaos run takes the other half and more. Modes: async (--issync=0) and
# sync (--issync=1 --backup_workers=1: each update takes one of the two
# workers' gradients).
#
# The chaos loop picks, with bash's RANDOM seeded by --seed (printed, so a
# run can be repeated), a delay of 20-30 s (--every), a task (ps, worker 0 =
# chief, worker 1) and a pause of 1-4 s before the task is started again
# with the same flags, its output appended to its log; until the chief
# prints its result, or a hard timeout. Every line a task prints is
# stamped with the time it arrived.
#
# While a run trains, one line on stderr shows the chief's global step, its
# rate over the last 10 s and the time left: redrawn in place on a terminal,
# a plain line every 5 s otherwise; --quiet leaves it out.
#
# Per mode it reports the chief's test accuracy beside the fault-free run's,
# the global steps lost (how far the global step went back when the chief
# restored a checkpoint), the longest stall (the longest time no task saw
# the global step move), the kills per task and the wall time; and it
# checks that nothing acknowledged as saved was lost: every checkpoint the
# chief logged as saved is at the end still listed and readable (every
# tensor, checksums checked), unless the saver's retention (5 kept) retired
# it after five newer saves; every chief session after an acknowledged save
# restored a checkpoint before its first step; and no restore went back
# before the last acknowledged save. Exits 1 on a failure: a run that did
# not finish, a task that exited with an error, a lost save.
set -euo pipefail
export LC_ALL=C

cd "$(dirname "$0")/.."

seconds=240
seed=""
modes="async,sync"
every="20-30"
train_steps=""
build=build
out=""
quiet=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) seed="$2"; shift 2 ;;
    --modes) modes="$2"; shift 2 ;;
    --every) every="$2"; shift 2 ;;
    --train_steps) train_steps="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --quiet) quiet=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    [0-9]*) seconds="$1"; shift ;;
    *) echo "chaos.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
for value in "$seconds" ${seed:+"$seed"} ${train_steps:+"$train_steps"}; do
  if ! [[ "$value" =~ ^[0-9]+$ ]]; then
    echo "chaos.sh: '$value' is not a whole number" >&2; exit 2
  fi
done
if ! [[ "$every" =~ ^([0-9]+)-([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -lt 1 ] ||
   [ "${BASH_REMATCH[2]}" -lt "${BASH_REMATCH[1]}" ]; then
  echo "chaos.sh: --every '$every': expected MIN-MAX seconds, 1 <= MIN <= MAX" >&2; exit 2
fi
every_min="${BASH_REMATCH[1]}"
every_span=$(( BASH_REMATCH[2] - BASH_REMATCH[1] + 1 ))
if [ "$seconds" -lt 60 ]; then
  echo "chaos.sh: SECONDS $seconds: give at least 60" >&2; exit 2
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
echo "chaos.sh: seed $seed, $seconds s per mode, modes $modes, a kill every $every s, logs in $out"

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

# The progress line of the run in progress, drawn as rill's ProgressLine
# draws its own: in place on a terminal (at most 5 times a second, as the
# training loop polls), a plain line every 5 s into a pipe or a log.
progress_tty=0
[ -t 2 ] && progress_tty=1
progress_every=$(( progress_tty ? 200000 : 5000000 ))  # Microseconds.
progress_label=""
progress_total=0
progress_begun=0
progress_next=0
progress_shown=0  # A terminal's line is on screen, without its newline.
# Samples (time in microseconds, global step) of the last 10 s: the rate.
progress_times=()
progress_steps=()

usec() { REPLY=${EPOCHREALTIME/./}; }

# duration TENTHS_OF_A_SECOND: "4.7 s", "2:05", "1:01:02" in REPLY.
duration() {
  local tenths=$1 s
  if [ "$tenths" -lt 600 ]; then
    printf -v REPLY '%d.%d s' $((tenths / 10)) $((tenths % 10))
    return
  fi
  s=$(( (tenths + 5) / 10 ))
  if [ "$s" -lt 3600 ]; then
    printf -v REPLY '%d:%02d' $((s / 60)) $((s % 60))
  else
    printf -v REPLY '%d:%02d:%02d' $((s / 3600)) $((s / 60 % 60)) $((s % 60))
  fi
}

# The chief's global step in REPLY: the last one its log names (a step
# line, or the result line at the end); 0 before its first.
chief_step() {
  local found
  found=$(tail -c 8192 "$run_dir/worker0.log" 2>/dev/null |
          grep -oE 'global.step"?:? [0-9]+' | tail -n 1) || true
  REPLY=${found##* }
  [ -n "$REPLY" ] || REPLY=0
}

# progress_write LINE END(0|1): over the terminal's line (ended with a
# newline when END), or a line of its own.
progress_write() {
  if [ "$progress_tty" = 1 ]; then
    printf '\r\033[K%s' "$1" >&2
    if [ "$2" = 1 ]; then printf '\n' >&2; progress_shown=0; else progress_shown=1; fi
  else
    printf '%s\n' "$1" >&2
  fi
}

# progress_count STEP: "LABEL  STEP/TOTAL steps  P%" in REPLY.
progress_count() {
  local percent=$(( progress_total > 0 ? $1 * 100 / progress_total : 100 ))
  [ "$percent" -le 100 ] || percent=100
  printf -v REPLY '%s  %d/%d steps %3d%%' "$progress_label" "$1" "$progress_total" "$percent"
}

# progress_begin LABEL TOTAL: a run of TOTAL global steps starts.
progress_begin() {
  progress_label="$1"
  progress_total="$2"
  usec; progress_begun=$REPLY
  progress_next=$(( progress_begun + progress_every ))
  progress_times=("$progress_begun")
  progress_steps=(0)
}

# progress_tick: draws the line when it is due; cheap otherwise.
progress_tick() {
  [ "$quiet" = 0 ] || return 0
  usec; local at=$REPLY
  [ "$at" -ge "$progress_next" ] || return 0
  progress_next=$(( at + progress_every ))
  chief_step; local step=$REPLY
  # A step that went back (the chief restored a checkpoint) starts the
  # rate's window again.
  if [ "$step" -lt "${progress_steps[-1]}" ]; then progress_times=(); progress_steps=(); fi
  progress_times+=("$at")
  progress_steps+=("$step")
  while [ $(( at - progress_times[0] )) -gt 10000000 ]; do
    progress_times=("${progress_times[@]:1}")
    progress_steps=("${progress_steps[@]:1}")
  done
  progress_count "$step"
  local line=$REPLY span=$(( at - progress_times[0] ))
  if [ "$span" -gt 0 ]; then
    local rate10=$(( (step - progress_steps[0]) * 10000000 / span ))  # Tenths of a step/s.
    line+=" | $((rate10 / 10)).$((rate10 % 10)) steps/s"
    if [ "$rate10" -gt 0 ]; then
      local left=$(( progress_total - step ))
      duration $(( (left > 0 ? left : 0) * 100 / rate10 ))
      line+=" | $REPLY left"
    fi
  fi
  progress_write "$line" 0
}

# progress_finish: the final line, with the mean rate and the time taken.
progress_finish() {
  [ "$quiet" = 0 ] || return 0
  usec; local span=$(( REPLY - progress_begun ))
  chief_step; local step=$REPLY
  progress_count "$step"
  local line=$REPLY
  if [ "$span" -gt 0 ]; then
    local rate10=$(( step * 10000000 / span ))
    line+=" | $((rate10 / 10)).$((rate10 % 10)) steps/s mean"
  fi
  duration $(( span / 100000 ))
  progress_write "$line | $REPLY total" 1
}

# progress_clear: takes a terminal's line off the screen before other output.
progress_clear() {
  if [ "$progress_shown" = 1 ]; then
    printf '\r\033[K' >&2
    progress_shown=0
    progress_next=0
  fi
}

# The tasks of the run in progress, by name (ps, worker0, worker1).
declare -A pid
# Interrupted: no task of ours is left behind. Only jobs this shell still
# runs are killed: a task that ended may have left its id to another process.
cleanup() {
  local p
  [ "$progress_shown" = 0 ] || printf '\n' >&2
  for p in $(jobs -pr); do kill -KILL "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM
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
  local total=2000 flag  # distributed_mnist's default --train_steps
  for flag in "$@"; do [[ "$flag" != --train_steps=* ]] || total=${flag#*=}; done
  progress_begin "${run_dir##*/}" "$total"
  local begin deadline next victim pause
  begin=$(date +%s)
  deadline=$((begin + timeout))
  next=$((begin + every_min + RANDOM % every_span))
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
      progress_clear
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
        progress_clear
        echo "  $(date +%T) killed $victim; restarting it in $pause s"
        sleep "$pause"
        start "$victim"
      fi
      next=$(( $(date +%s) + every_min + RANDOM % every_span ))
    fi
    progress_tick
    sleep 0.2
  done
  finish worker0 5
  progress_finish
  [[ " ${ended[*]} " == *" worker1 "* ]] || finish worker1 120
  [[ " ${ended[*]} " == *" ps "* ]] || stop_ps
  echo "$(now) end" >> "$run_dir/events"
}

# Steps per second of a short fault-free run with FLAGS (the chief's). On
# a machine shared with other work it is only an estimate: --train_steps
# fixes the steps instead.
calibrate() {
  local dir="$1"; shift
  train "$dir" 0 300 --train_steps=4000 "$@"
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
  echo "== $mode: chaos run (a random task killed every $every s)"
  train "$out/$mode-chaos" 1 "$hard" --train_steps="$steps" "${mode_flags[@]}"
done

benches/chaos_report.py "$out" "$rill" "$seed" "${mode_list[@]}" || status=1
exit "$status"
