#!/usr/bin/env bash
# One check of rill's GPU paths on a machine with a GPU, from a packed build (benches/gpu_pack.sh
# makes the folder to carry: it needs neither a build nor ../shared there), in under 6 minutes:
#
#   gpu_check.sh [OUT_DIR] [--pack PACK] [--build DIR] [--data DIR] [--budget SECONDS] [--quick]
#                [--python PY] [--twin FILE] [--twin-device cuda|cpu] [--no-gpu-ok]
#   gpu_check.sh --list-binaries     (the build paths of the binaries it runs, for gpu_pack.sh)
#
# Steps, each with its own timeout (cut to what is left of --budget, default 330 s; a step with no
# time left is SKIP), each logging to OUT_DIR/<step>.log:
#   devices          rill devices (a GPU must be listed)
#   device_query, device_kernels, gpu_devices, gpu_session
#                    the test binaries that need a GPU (device_kernels: every kernel on every device)
#   mlp_cpu, mlp_gpu fashion_mnist_mlp --device cpu|gpu, 1 epoch: GPU accuracy within 0.02 of CPU
#   cnn_cpu, cnn_gpu the same with --model cnn
#   lstm_cpu, lstm_gpu lstm_fashion_mnist --device cpu|gpu, 300 steps: the while-loop LSTM (its
#                    Switch, LoopCond and stacks on the CPU, the cell on the GPU), accuracy >= 0.70
#                    and the GPU's within 0.03 of the CPU's
#   in_graph         in_graph_replication --device gpu --size 2048 --power 4 (results agree)
#   matmul           matmul_devices gpu 8192 (GPU beside CPU)
#   dist_cpu, dist_gpu  distributed_mnist on 1 ps + 2 workers (127.0.0.1, free ports), async, 4000
#                    global steps, workers --device cpu|gpu: GPU accuracy within 0.03 of CPU, and the
#                    chief's step trace shows compute on /device:GPU:0
#   gpu_bench        gpu_bench --benchmark_repetitions=3, aggregates only, OUT_DIR/gpu_bench.json
#   torch            benches/gpu_torch_twin.py (PyTorch, TF32 off): OUT_DIR/torch.json
# then rill beside PyTorch (OUT_DIR/compare.md) and one table: step | status | seconds | key figure
# (also OUT_DIR/summary.md). Status: PASS, FAIL, TIMEOUT, SKIP, NOGPU (did not pass, and the
# machine has no GPU). Exit 0 when every step passed or was skipped; 1 on a FAIL or TIMEOUT; 3
# when there is no GPU (NOGPU steps) unless --no-gpu-ok (a plumbing run on a machine without one).
#
# OUT_DIR: the argument, else $OUT (a folder the GPU machine hands back, where it has one), else
# /tmp/gpu-check-<time>. PACK: pack.tar.xz or pack.tar.gz (device-pack.sh's), or a folder with bin/
# and lib/; default the pack beside this script. --build DIR runs the binaries of a build tree
# instead (no pack). Missing CUDA libraries (cuBLAS, cuDNN, cuRAND) are looked up on the machine
# and added to LD_LIBRARY_PATH. --data: Fashion-MNIST's four IDX files (.gz or raw); default the
# fashion-mnist/ folder beside this script (gpu_pack.sh copies it there), else
# /usr/share/datasets/fashion-mnist (kFashionMnistDir, the Debian package dataset-fashion-mnist).
# The data set travels only in the carried folder: a GPU machine may have no /usr/share
# data and no ../shared. --quick: short runs of everything (a smoke test of the plumbing).
# --twin-device cpu runs the PyTorch twin on the CPU. PY: the python with torch (default $PYTHON,
# else python3).
#
# On the GPU machine, with the folder from gpu_pack.sh carried (here build-gpu-pack):
#   bash build-gpu-pack/gpu_check.sh "$OUT"
# On a machine without a GPU, to check the plumbing:
#   benches/gpu_check.sh /tmp/gpu-check --build build --quick --no-gpu-ok
set -uo pipefail
export LC_ALL=C GTEST_COLOR=no

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# The binaries, as paths in a build tree; in a pack they are bin/<basename>.
binaries=(cli/rill tests/runtime/device_query_test tests/kernels/device/device_kernels_test
          tests/runtime/device_gpu_devices_test tests/runtime/gpu_session_test
          examples/fashion_mnist_mlp examples/lstm_fashion_mnist examples/in_graph_replication examples/matmul_devices
          examples/distributed_mnist benches/gpu_bench)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }

out="${OUT:-}"
pack=""
build=""
data=""
budget=330
quick=0
python="${PYTHON:-python3}"
twin=""
twin_device=cuda
no_gpu_ok=0
while [ $# -gt 0 ]; do
  case "$1" in
    --pack) pack="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --budget) budget="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --python) python="$2"; shift 2 ;;
    --twin) twin="$2"; shift 2 ;;
    --twin-device) twin_device="$2"; shift 2 ;;
    --no-gpu-ok) no_gpu_ok=1; shift ;;
    --list-binaries) printf '%s\n' "${binaries[@]}"; exit 0 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "gpu_check.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done
if ! [[ "$budget" =~ ^[0-9]+$ ]]; then
  echo "gpu_check.sh: --budget '$budget': expected whole seconds" >&2; exit 2
fi
case "$twin_device" in cuda|cpu) ;; *) echo "gpu_check.sh: --twin-device: cuda or cpu" >&2; exit 2 ;; esac
[ -n "$out" ] || out="${TMPDIR:-/tmp}/gpu-check-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$out" || exit 2
out=$(cd "$out" && pwd)
if [ -z "$pack" ] && [ -z "$build" ]; then
  for candidate in "$here/pack.tar.xz" "$here/pack.tar.gz"; do
    [ -f "$candidate" ] && { pack="$candidate"; break; }
  done
  if [ -z "$pack" ]; then
    echo "gpu_check.sh: no pack beside the script: give --pack PACK or --build DIR" >&2; exit 2
  fi
fi
if [ -z "$data" ]; then
  if [ -d "$here/fashion-mnist" ]; then data="$here/fashion-mnist"
  else data=/usr/share/datasets/fashion-mnist; fi
fi
[ -n "$twin" ] || twin="$here/gpu_torch_twin.py"
helpers="$here/gpu_check_util.py"

start_time=${EPOCHREALTIME:-$(date +%s.%N)}
now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
left() { awk -v a="$start_time" -v b="$(now)" -v t="$budget" 'BEGIN { printf "%d", t - (b - a) }'; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
background=()
# shellcheck disable=SC2317  # run by the trap
cleanup() {
  local pid
  for pid in "${background[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The table's rows.
names=(); statuses=(); times=(); keys=()
record() {  # NAME STATUS SECONDS KEY
  names+=("$1"); statuses+=("$2"); times+=("$3"); keys+=("$4")
  printf '[%6ss] %-14s %-7s %s\n' "$(elapsed "$start_time")" "$1" "$2" "$4"
}

no_gpu=0
nogpu_pattern='no GPU|no CUDA|has no GPU|no CUDA-capable device|CUDA driver version is insufficient'

# Runs CMD... with a timeout of min(LIMIT, what is left of the budget), output to OUT/NAME.log;
# sets rc (124: timed out) and secs. Returns 1 (and records SKIP) when no time is left.
step_rc=0; step_secs=0
run_step() {
  local name=$1 limit=$2; shift 2
  local t; t=$(left); t=$((t - 3))
  [ "$t" -lt "$limit" ] && limit=$t
  if [ "$limit" -lt 5 ]; then record "$name" SKIP 0 "no time left (--budget $budget)"; return 1; fi
  local begin; begin=$(now)
  { echo "\$ $* (timeout ${limit}s)"; timeout -k 5 "$limit" "$@"; } > "$out/$name.log" 2>&1
  step_rc=$?
  # `timeout` exits 124 when the command ran out of time, 137 when it had to be killed.
  [ "$step_rc" -eq 137 ] && step_rc=124
  step_secs=$(elapsed "$begin")
  return 0
}

# The status of a GPU step that exited RC with log LOG: PASS, TIMEOUT, NOGPU or FAIL.
gpu_status() {
  local rc=$1 log=$2
  if [ "$rc" -eq 0 ]; then echo PASS
  elif [ "$rc" -eq 124 ]; then echo TIMEOUT
  elif [ "$no_gpu" -eq 1 ] && grep -Eq "$nogpu_pattern" "$log"; then echo NOGPU
  else echo FAIL; fi
}

# The last line of LOG matching PATTERN, or "".
last_line() { grep -E "$2" "$1" 2>/dev/null | tail -1; }
# A field of the last "result: {json}" line of LOG (numbers, true/false).
result_field() {
  last_line "$1" '^result: ' | sed -nE "s/.*\"$2\": \"?([^,\"}]*)\"?.*/\1/p"
}
# A failed program's own error line ("program: why"), else the log's last line.
error_line() {
  local line
  line=$(grep -E '^(rill|fashion_mnist_mlp|lstm_fashion_mnist|in_graph_replication|matmul_devices|distributed_mnist): ' "$1" | head -1)
  [ -n "$line" ] || line=$(grep -v '^\$ ' "$1" | grep -v '^ *$' | tail -1)
  echo "${line:0:100}"
}
num_ok() { [[ "$1" =~ ^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]; }
# awk arithmetic on numbers, e.g. calc '%.0f' 'a * 64 / b' A B.
calc() { awk -v a="${3:-0}" -v b="${4:-0}" -v c="${5:-0}" "BEGIN { printf \"$1\", $2 }"; }

# ---- unpack ---------------------------------------------------------------------------------------
# Where BINARY (a build path) is: in the build tree, or bin/ of the unpacked pack.
bin_of() {
  if [ -n "$build" ]; then echo "$build/$1"; else echo "$work/bin/$(basename "$1")"; fi
}

unpack() {
  local begin; begin=$(now)
  if [ -n "$build" ]; then
    local missing=""
    for b in "${binaries[@]}"; do [ -x "$build/$b" ] || missing+=" $b"; done
    if [ -n "$missing" ]; then
      record unpack FAIL "$(elapsed "$begin")" "not built in $build:$missing"; return
    fi
    record unpack PASS "$(elapsed "$begin")" "binaries of $build (no pack)"
    return
  fi
  # A folder gpu_pack.sh wrote: its pack.
  if [ -d "$pack" ] && [ ! -d "$pack/bin" ]; then
    for candidate in "$pack/pack.tar.xz" "$pack/pack.tar.gz"; do
      [ -f "$candidate" ] && { pack=$candidate; break; }
    done
  fi
  {
    echo "pack: $pack"
    if [ -d "$pack" ]; then
      cp -r "$pack/bin" "$pack/lib" "$work/"
    else
      case "$pack" in
        *.tar.xz|*.txz)
          if command -v xz > /dev/null; then tar -C "$work" -xJf "$pack"
          else "$python" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
                 "$pack" "$work"; fi ;;
        *) tar -C "$work" -xzf "$pack" ;;
      esac
    fi
  } > "$out/unpack.log" 2>&1 || {
    record unpack FAIL "$(elapsed "$begin")" "cannot unpack $pack (unpack.log)"; return; }
  export LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The CUDA libraries the pack leaves out (the machine's own): find each one ldd misses.
  local so dir found missing="" added=""
  local dirs=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda/lib
              /usr/local/cuda-*/targets/x86_64-linux/lib /usr/local/cuda-*/lib64
              /usr/lib/x86_64-linux-gnu /usr/local/lib/python3*/dist-packages/nvidia/*/lib
              /usr/lib/python3/dist-packages/nvidia/*/lib /usr/local/lib/python3*/site-packages/nvidia/*/lib
              "$HOME"/.local/lib/python3*/site-packages/nvidia/*/lib /opt/conda/lib/python3*/site-packages/nvidia/*/lib)
  for so in $(for b in "$work"/bin/*; do ldd "$b" 2>/dev/null; done | awk '/not found/ { print $1 }' | sort -u); do
    found=""
    for dir in "${dirs[@]}"; do
      [ -e "$dir/$so" ] && { found=$dir; break; }
    done
    if [ -z "$found" ]; then
      found=$(timeout 60 find / \( -path /proc -o -path /sys -o -path "$work" \) -prune -o \
                -name "$so" -print -quit 2>/dev/null)
      [ -n "$found" ] && found=$(dirname "$found")
    fi
    if [ -n "$found" ]; then
      echo "$so -> $found" >> "$out/unpack.log"
      case ":$LD_LIBRARY_PATH:" in *":$found:"*) ;; *) LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$found"; added+=" $so";; esac
    else
      echo "$so: not found on this machine" >> "$out/unpack.log"; missing+=" $so"
    fi
  done
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >> "$out/unpack.log"
  if [ -n "$missing" ]; then
    record unpack FAIL "$(elapsed "$begin")" "libraries not found:$missing"
  else
    record unpack PASS "$(elapsed "$begin")" "$(find "$work/bin" -type f | wc -l) binaries, $(find "$work/lib" -type f | wc -l) libraries${added:+; from the machine:$added}"
  fi
}

# ---- the steps ------------------------------------------------------------------------------------
step_devices() {
  run_step devices 30 "$(bin_of cli/rill)" devices || return
  local log="$out/devices.log" gpus
  gpus=$(grep -c 'device:GPU:' "$log")
  if [ "$step_rc" -eq 124 ]; then record devices TIMEOUT "$step_secs" "rill devices hung"
  elif [ "$step_rc" -ne 0 ]; then record devices FAIL "$step_secs" "rc $step_rc: $(tail -1 "$log")"
  elif [ "$gpus" -gt 0 ]; then
    record devices PASS "$step_secs" "$gpus GPU: $(last_line "$log" 'device:GPU:0' | sed -E 's/^[^ ]+ +//')"
  else
    no_gpu=1
    record devices NOGPU "$step_secs" "$(last_line "$log" '^GPU' | cut -c1-100)"
  fi
}

step_gtest() {  # NAME BINARY LIMIT
  local name=$1 binary=$2
  run_step "$name" "$3" "$(bin_of "$binary")" || return
  local log="$out/$name.log" passed skipped failed first key status
  passed=$(grep -E '^\[  PASSED  \] [0-9]+' "$log" | awk '{ print $4 }' | tail -1)
  skipped=$(grep -E '^\[  SKIPPED \] [0-9]+ tests?, listed' "$log" | awk '{ print $4 }' | tail -1)
  failed=$(grep -E '^\[  FAILED  \] [0-9]+ tests?, listed' "$log" | awk '{ print $4 }' | tail -1)
  first=$(grep -E '^\[  FAILED  \] [^0-9]' "$log" | head -1 | awk '{ print $4 }' | sed 's/,$//')
  key="${passed:-0} passed"
  [ -n "$skipped" ] && key+=", $skipped skipped"
  [ -n "$failed" ] && key+=", $failed failed (first: ${first##*/})"
  if [ "$step_rc" -eq 124 ]; then status=TIMEOUT; key="timed out; $key"
  elif [ "$step_rc" -ne 0 ]; then status=FAIL; [ -z "$passed$failed" ] && key="crashed (rc $step_rc): $(tail -1 "$log" | cut -c1-80)"
  elif [ -n "$skipped" ] && [ "$no_gpu" -eq 1 ]; then status=NOGPU
  elif [ "${skipped:-0}" -gt "${passed:-0}" ]; then status=FAIL; key+=" (mostly skipped, with a GPU)"
  else status=PASS; fi
  record "$name" "$status" "$step_secs" "$key"
}

# fashion_mnist_mlp (MODEL mlp or cnn) or lstm_fashion_mnist (MODEL lstm) on one device:
# NAME MODEL DEVICE; GPU runs compare with the CPU run's accuracy.
declare -A accuracy_of rate_of
step_fashion() {
  local name=$1 model=$2 device=$3 args=(--epochs 1) tolerance=0.02 floor=0.80
  local program=(examples/fashion_mnist_mlp --model "$model")
  if [ "$model" = lstm ]; then
    program=(examples/lstm_fashion_mnist --quiet); args=(--steps 300); tolerance=0.03; floor=0.70
  fi
  if [ "$quick" -eq 1 ]; then
    args=(--steps 200); [ "$model" != mlp ] && args=(--steps 30); tolerance=0.05; floor=0
  fi
  run_step "$name" 120 "$(bin_of "${program[0]}")" "${program[@]:1}" --device "$device" \
    --data "$data" "${args[@]}" || return
  local log="$out/$name.log" acc steps seconds rate key status
  acc=$(result_field "$log" test_accuracy); steps=$(result_field "$log" steps)
  seconds=$(result_field "$log" train_seconds)
  if [ "$step_rc" -eq 0 ] && num_ok "$acc" && num_ok "$steps" && num_ok "$seconds"; then
    rate=$(calc '%.0f' 'a * 64 / b' "$steps" "$seconds")
    accuracy_of[$name]=$acc; rate_of[$name]=$rate
    key="acc $acc, $rate ex/s ($steps steps)"; status=PASS
    if awk -v a="$acc" -v f="$floor" 'BEGIN { exit !(a < f) }'; then
      status=FAIL; key+="; below $floor"
    fi
    local ref="${name%_gpu}_cpu"
    if [ "$device" = gpu ] && [ -n "${accuracy_of[$ref]:-}" ]; then
      key+="; cpu acc ${accuracy_of[$ref]}, ${rate_of[$ref]} ex/s"
      if awk -v a="$acc" -v b="${accuracy_of[$ref]}" -v t="$tolerance" \
           'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d > t) }'; then
        status=FAIL; key+="; differs by more than $tolerance"
      fi
    fi
  else
    status=$(gpu_status "$step_rc" "$log"); [ "$step_rc" -eq 0 ] && status=FAIL
    [ "$device" = cpu ] && [ "$status" = NOGPU ] && status=FAIL
    key="rc $step_rc: $(error_line "$log")"
  fi
  record "$name" "$status" "$step_secs" "$key"
}

step_in_graph() {
  local args=(--size 2048 --power 4)
  [ "$quick" -eq 1 ] && args=(--size 256 --power 2)
  run_step in_graph 60 "$(bin_of examples/in_graph_replication)" --device gpu "${args[@]}" || return
  local log="$out/in_graph.log" status key m p g
  m=$(result_field "$log" matpow_agree); p=$(result_field "$log" predictions_agree)
  g=$(result_field "$log" grads_agree)
  if [ "$step_rc" -eq 0 ] && [ -n "$m" ]; then
    key="agree: matpow $m, predictions $p, grads $g; one GPU $(result_field "$log" single_s) s, two $(result_field "$log" two_device_s) s"
    status=PASS; [ "$m/$p/$g" = true/true/true ] || status=FAIL
  else
    status=$(gpu_status "$step_rc" "$log"); [ "$step_rc" -eq 0 ] && status=FAIL
    key="rc $step_rc: $(error_line "$log")"
  fi
  record in_graph "$status" "$step_secs" "$key"
}

step_matmul() {
  local size=8192; [ "$quick" -eq 1 ] && size=512
  run_step matmul 60 "$(bin_of examples/matmul_devices)" gpu "$size" || return
  local log="$out/matmul.log" key
  key=$(last_line "$log" ' beside ')
  [ -n "$key" ] || key="rc $step_rc: $(error_line "$log")"
  record matmul "$(gpu_status "$step_rc" "$log")" "$step_secs" "$key"
}

# Free TCP ports on 127.0.0.1, N of them.
free_ports() {
  "$python" "$helpers" free-ports "$1" 2> /dev/null && return
  local ports=() p
  while [ "${#ports[@]}" -lt "$1" ]; do
    p=$((20000 + RANDOM % 40000))
    (exec 3<> "/dev/tcp/127.0.0.1/$p") 2> /dev/null || ports+=("$p")
  done
  echo "${ports[*]}"
}

# distributed_mnist on 1 ps + 2 workers: NAME DEVICE.
step_distributed() {
  local name=$1 device=$2 steps=4000 tolerance=0.03 floor=0.82
  [ "$quick" -eq 1 ] && { steps=300; tolerance=0.08; floor=0; }
  local t; t=$(left); t=$((t - 3)); [ "$t" -gt 120 ] && t=120
  if [ "$t" -lt 5 ]; then record "$name" SKIP 0 "no time left (--budget $budget)"; return; fi
  local dir="$out/$name" logdir="$work/$name-logs" ports ps_port w0_port w1_port
  mkdir -p "$dir" "$logdir"
  ports=$(free_ports 3); read -r ps_port w0_port w1_port <<< "$ports"
  local program; program=$(bin_of examples/distributed_mnist)
  local cluster=(--ps_hosts="127.0.0.1:$ps_port" --worker_hosts="127.0.0.1:$w0_port,127.0.0.1:$w1_port"
                 --issync=0 --logdir="$logdir")
  local workers=(--device="$device" --data="$data" --train_steps="$steps" --log_every=500
                 --validate_every=100000)
  local trace=(); [ "$device" = gpu ] && trace=(--trace_steps=2)
  local begin; begin=$(now)
  echo "\$ ${cluster[*]} ${workers[*]} (timeout ${t}s each)" > "$out/$name.log"
  timeout -k 5 "$t" "$program" "${cluster[@]}" --job_name=ps --task_index=0 > "$dir/ps.log" 2>&1 &
  local ps_pid=$!; background+=("$ps_pid")
  timeout -k 5 "$t" "$program" "${cluster[@]}" "${workers[@]}" --job_name=worker --task_index=1 \
    > "$dir/worker1.log" 2>&1 &
  local w1_pid=$!; background+=("$w1_pid")
  timeout -k 5 "$t" "$program" "${cluster[@]}" "${workers[@]}" "${trace[@]}" --job_name=worker \
    --task_index=0 > "$dir/worker0.log" 2>&1
  local rc0=$? rc1
  wait "$w1_pid"; rc1=$?
  kill "$ps_pid" 2> /dev/null; wait "$ps_pid" 2> /dev/null
  step_secs=$(elapsed "$begin")
  for f in worker0 worker1 ps; do echo "== $f"; cat "$dir/$f.log"; done >> "$out/$name.log"
  local acc global s0 s1 rate key status
  acc=$(result_field "$dir/worker0.log" test_accuracy)
  global=$(result_field "$dir/worker0.log" global_step)
  s0=$(result_field "$dir/worker0.log" train_seconds); s1=$(result_field "$dir/worker1.log" train_seconds)
  if [ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ] && num_ok "$acc" && num_ok "$global" && num_ok "$s0"; then
    num_ok "$s1" || s1=$s0
    # Examples over the slower worker's training time: both workers together.
    rate=$(calc '%.0f' 'a * 64 / (b > c ? b : c)' "$global" "$s0" "$s1")
    accuracy_of[$name]=$acc; rate_of[$name]=$rate
    key="acc $acc, $rate ex/s ($global global steps)"; status=PASS
    if awk -v a="$acc" -v f="$floor" 'BEGIN { exit !(a < f) }'; then status=FAIL; key+="; below $floor"; fi
    if [ "$device" = gpu ]; then
      if ! grep -q 'device:GPU:0: compute' "$dir/worker0.log"; then
        status=FAIL; key+="; no compute on the GPU in the trace"
      fi
      if [ -n "${accuracy_of[dist_cpu]:-}" ]; then
        key+="; cpu acc ${accuracy_of[dist_cpu]}, ${rate_of[dist_cpu]} ex/s"
        if awk -v a="$acc" -v b="${accuracy_of[dist_cpu]}" -v t="$tolerance" \
             'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d > t) }'; then
          status=FAIL; key+="; differs by more than $tolerance"
        fi
      fi
    fi
  else
    local rc=$rc0; [ "$rc" -eq 0 ] && rc=$rc1; [ "$rc" -eq 137 ] && rc=124
    status=$(gpu_status "$rc" "$out/$name.log"); [ "$rc" -eq 0 ] && status=FAIL
    [ "$device" = cpu ] && [ "$status" = NOGPU ] && status=FAIL
    key="worker rc $rc0/$rc1: $(cat "$dir/worker0.log" "$dir/worker1.log" > "$work/$name.err"; error_line "$work/$name.err")"
  fi
  record "$name" "$status" "$step_secs" "$key"
}

step_gpu_bench() {
  local args=(--benchmark_repetitions=3 --benchmark_report_aggregates_only=true
              --benchmark_out="$out/gpu_bench.json" --benchmark_out_format=json)
  [ "$quick" -eq 1 ] && args+=(--benchmark_min_time=0.01)
  run_step gpu_bench 150 "$(bin_of benches/gpu_bench)" "${args[@]}" || return
  local summary status key
  summary=$("$python" "$helpers" bench-summary "$out/gpu_bench.json" 2>&1) ||
    summary=$'errors\tcannot read gpu_bench.json'
  key=${summary#*$'\t'}
  case "$step_rc/${summary%%$'\t'*}" in
    124/*) status=TIMEOUT ;;
    0/ok) status=PASS ;;
    0/nogpu) status=FAIL; [ "$no_gpu" -eq 1 ] && status=NOGPU ;;
    *) status=FAIL ;;
  esac
  record gpu_bench "$status" "$step_secs" "$key"
}

step_torch() {
  local args=(--device "$twin_device" --data "$data" --out "$out/torch.json")
  [ "$quick" -eq 1 ] && args+=(--quick)
  if [ ! -f "$twin" ]; then record torch FAIL 0 "no $twin"; return; fi
  # stdout (the same JSON) goes to the log with the progress lines.
  run_step torch 150 "$python" "$twin" "${args[@]}" || return
  local status key
  key=$("$python" "$helpers" torch-key "$out/torch.json" "$out/gpu_bench.json" 2>&1) ||
    key="no JSON: $(tail -1 "$out/torch.log" | cut -c1-80)"
  if [ "$step_rc" -eq 124 ]; then status=TIMEOUT
  elif [ "$step_rc" -ne 0 ]; then status=FAIL
  elif [[ "$key" == skipped:* ]]; then status=SKIP; [ "$no_gpu" -eq 1 ] && status=NOGPU
  elif [[ "$key" == "no JSON"* ]]; then status=FAIL
  else status=PASS; fi
  record torch "$status" "$step_secs" "$key"
}

# rill beside PyTorch, from gpu_bench.json and torch.json: OUT/compare.md.
compare() {
  [ -f "$out/gpu_bench.json" ] && [ -f "$out/torch.json" ] || return 0
  "$python" "$helpers" compare "$out/gpu_bench.json" "$out/torch.json" > "$work/compare.md" \
    2> /dev/null || return 0
  cp "$work/compare.md" "$out/compare.md"
  echo; cat "$out/compare.md"
}

# ---- run ------------------------------------------------------------------------------------------
echo "gpu_check: logs in $out; data $data; budget ${budget}s$([ "$quick" -eq 1 ] && echo ', quick')"
unpack
if [ "${statuses[0]}" = PASS ]; then
  step_devices
  step_gtest device_query tests/runtime/device_query_test 30
  step_gtest device_kernels tests/kernels/device/device_kernels_test 120
  step_gtest gpu_devices tests/runtime/device_gpu_devices_test 60
  step_gtest gpu_session tests/runtime/gpu_session_test 60
  step_fashion mlp_cpu mlp cpu
  step_fashion mlp_gpu mlp gpu
  step_fashion cnn_cpu cnn cpu
  step_fashion cnn_gpu cnn gpu
  step_fashion lstm_cpu lstm cpu
  step_fashion lstm_gpu lstm gpu
  step_in_graph
  step_matmul
  step_distributed dist_cpu cpu
  step_distributed dist_gpu gpu
  step_gpu_bench
fi
step_torch
compare

echo
{
  echo "| step | status | seconds | key figure |"
  echo "|---|---|---|---|"
  for i in "${!names[@]}"; do
    echo "| ${names[$i]} | ${statuses[$i]} | ${times[$i]} | ${keys[$i]} |"
  done
} | tee "$out/summary.md"

failed=0; nogpu=0
for s in "${statuses[@]}"; do
  case "$s" in FAIL|TIMEOUT) failed=1 ;; NOGPU) nogpu=1 ;; esac
done
echo
echo "gpu_check: $(elapsed "$start_time") s; logs in $out"
if [ "$failed" -eq 1 ]; then exit 1; fi
if [ "$nogpu" -eq 1 ] && [ "$no_gpu_ok" -eq 0 ]; then
  echo "gpu_check: no GPU on this machine: nothing on a GPU was checked (--no-gpu-ok to accept)" >&2
  exit 3
fi
exit 0
