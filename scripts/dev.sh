#!/usr/bin/env bash
# Sets up, builds and runs rill on Debian 12: `scripts/dev.sh demo` runs the
# demo, `scripts/dev.sh test` the whole test suite (with CUDA when nvcc is
# found; the device query also without it), `scripts/dev.sh sanitize` the
# whole suite under AddressSanitizer and UndefinedBehaviorSanitizer. Safe to
# run again: every step skips what is done.
set -euo pipefail

cd "$(dirname "$0")/.."
mode="${1:-}"
case "$mode" in
  demo|test|build|sanitize) ;;
  *) echo "usage: scripts/dev.sh demo|test|build|sanitize" >&2; exit 2 ;;
esac

scripts/setup.sh

jobs="$(nproc)"
werror=()
[ "${CI:-}" = "true" ] && werror=(-Dwerror=true)

configure() {  # configure DIR [meson options...]
  local dir="$1"; shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "${werror[@]}" "$@"
  fi
}

if [ "$mode" = sanitize ]; then
  # Its own build dir, CUDA off: nvcc's objects are not instrumented and the
  # CUDA runtime does not run under ASan. -O1 -g1, as the sanitizers'
  # authors advise: far less compile time than -O2 -g on the Eigen
  # kernels, asserts kept, file:line in the reports. UBSan does not
  # recover, so its first report fails the test like an ASan one.
  # b_lundef=false: an instrumented shared library may leave the sanitizer
  # runtime's symbols to the program. No -Werror: GCC's instrumentation
  # makes its flow warnings report paths that exist only in the
  # instrumented code (in libstdc++ and Eigen), and GCC's manual advises
  # against the combination; the plain build (-Werror in CI) judges the
  # warnings. The noisiest of them is off.
  configure build-sanitize -Dwerror=false -Dcuda=disabled -Doptimization=1 -Ddebug=false \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args="-g1 -fno-sanitize-recover=all -Wno-maybe-uninitialized" \
    -Dcpp_link_args=-fno-sanitize-recover=all
  # What the tests run (not the benchmarks).
  ninja -C build-sanitize -j "$jobs" meson-test-prereq
  # Every process the tests start (rill server, the examples) inherits these.
  # Reports go to files, one per process, because a child's stderr is a log
  # its test may delete and its exit status one a test may not look at: any
  # report fails the run, printed after the tests. Leaks count; only
  # third-party ones are suppressed, each with its reason.
  reports="$PWD/build-sanitize/sanitizer-reports"
  rm -rf "$reports"
  mkdir -p "$reports"
  common="halt_on_error=1:abort_on_error=1:log_path=$reports/report:log_exe_name=1"
  export ASAN_OPTIONS="$common:detect_leaks=1:check_initialization_order=1:strict_init_order=1"
  export UBSAN_OPTIONS="$common:print_stacktrace=1"
  export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0"
  status=0
  meson test -C build-sanitize --print-errorlogs --num-processes "$jobs" \
    --timeout-multiplier 5 || status=1
  # Every report ends with a SUMMARY line; other files hold warnings.
  for report in "$reports"/*; do
    [ -e "$report" ] || continue
    echo "== $report"
    cat "$report"
    grep -q "^SUMMARY: " "$report" && status=1
  done
  exit "$status"
fi

configure build
if [ "$mode" = demo ]; then
  # Only what the demo runs; the test command builds the rest.
  ninja -C build -j "$jobs" cli/rill examples/linear_regression examples/fashion_mnist_mlp \
    examples/matmul_devices examples/in_graph_replication examples/cluster_devices \
    examples/mnist_model_graph examples/distributed_mnist examples/lstm_fashion_mnist
else
  ninja -C build -j "$jobs"
fi

case "$mode" in
  demo)
    status=0
    echo "== linear regression (y = 2x + 10) through a Session, checkpoints and events in a logdir"
    logdir="$(mktemp -d)/linear_regression"
    build/examples/linear_regression --logdir "$logdir"
    build/cli/rill checkpoint "$logdir"
    echo
    echo "== TensorFlow's checkpoint restored into TensorFlow's regression graph by its own saver"
    build/cli/rill run ../shared/testdata/tf_graphs/rust_regression_ckpt.pb --fetch w --fetch b \
      --restore ../shared/testdata/tf_checkpoints/regression-model/variables/variables
    echo
    echo "== Fashion-MNIST, 784-128-10 MLP, Adam, 5 epochs"
    build/examples/fashion_mnist_mlp
    echo
    echo "== matmul_devices: a random matrix times its transpose on /cpu:0"
    build/examples/matmul_devices cpu 1500 2>/dev/null
    echo
    echo "== in-graph replication: A^10 + B^10 on /cpu:0 and /cpu:1, then two towers"
    build/examples/in_graph_replication --size 1000 --power 10
    echo
    echo "== one session API, local and on a cluster of 1 ps + 2 workers with two CPUs each"
    build/examples/cluster_devices
    echo
    echo "== an LSTM whose step is a while loop (gradients through it), Fashion-MNIST rows, 300 steps"
    build/examples/lstm_fashion_mnist --steps 300 --log_every 50
    gru=../shared/testdata/control_flow/dl4j_primitive_gru_dynamic.pb
    if [ -f "$gru" ]; then
      echo "== a tf.nn.dynamic_rnn GRU that TensorFlow wrote: its while loop and TensorArrays"
      build/cli/rill run "$gru" --fetch output \
        --feed 'input=[[[-1.5, -1.25, -1, -0.75, -0.5, -0.25], [0, 0.25, 0.5, 0.75, 1, 1.25]]]'
    fi
    echo
    # One between-graph run of Fashion-MNIST on 1 ps + 2 workers, as the
    # TensorFlow scripts run: train_mnist LOGDIR FLAGS... (the chief's
    # output goes to LOGDIR/chief.log too).
    train_mnist() {
      local logdir="$1"; shift
      local ports ps_port w0_port w1_port ps_pid worker1_pid
      ports=$(python3 -c 'import socket
socks = [socket.socket() for _ in range(3)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))')
      read -r ps_port w0_port w1_port <<< "$ports"
      local cluster=(--ps_hosts="127.0.0.1:$ps_port"
                     --worker_hosts="127.0.0.1:$w0_port,127.0.0.1:$w1_port" --logdir="$logdir"
                     --log_every=500 --validate_every=1000 --save_checkpoint_steps=1000 "$@")
      mkdir -p "$logdir"
      build/examples/distributed_mnist "${cluster[@]}" --job_name=ps --task_index=0 2>/dev/null &
      ps_pid=$!
      build/examples/distributed_mnist "${cluster[@]}" --job_name=worker --task_index=1 \
        > "$logdir/worker1.log" 2>/dev/null &
      worker1_pid=$!
      build/examples/distributed_mnist "${cluster[@]}" --job_name=worker --task_index=0 2>/dev/null |
        tee "$logdir/chief.log" || status=1
      wait "$worker1_pid" || status=1
      kill "$ps_pid"; wait "$ps_pid" 2>/dev/null || true
    }
    echo "== between-graph training: Fashion-MNIST on 1 ps + 2 workers, asynchronous (--issync 0)"
    mnist_logs="$(mktemp -d)"
    train_mnist "$mnist_logs/async" --issync=0 --train_steps=4000 --trace_steps=1
    build/cli/rill checkpoint "$mnist_logs/async"
    ls "$mnist_logs/async" | grep tfevents
    echo
    echo "== the same, synchronous (--issync 1): each step applies the mean of both workers' gradients"
    # 2000 rounds of two batches: as many examples as 4000 asynchronous steps.
    train_mnist "$mnist_logs/sync" --issync=1 --train_steps=2000
    echo
    echo "== asynchronous and synchronous, after the same 256000 examples (the chief's results)"
    python3 - "$mnist_logs" <<'PY' || status=1
import json, sys
print(f"{'mode':12} {'test accuracy':>13} {'examples/s':>11} {'global steps':>12}")
for mode, per_step in (("async", 1), ("sync", 2)):
    with open(f"{sys.argv[1]}/{mode}/chief.log") as log:
        r = json.loads([l for l in log if l.startswith("result: ")][-1][len("result: "):])
    with open(f"{sys.argv[1]}/{mode}/worker1.log") as log:
        w = json.loads([l for l in log if l.startswith("result: ")][-1][len("result: "):])
    seconds = max(r["train_seconds"], w["train_seconds"])
    examples = r["global_step"] * per_step * 64
    print(f"{r['mode']:12} {r['test_accuracy']:13.4f} {examples / seconds:11.0f} {r['global_step']:12}")
PY
    echo
    echo "== rill place: the regression graph for 2 ps tasks and a worker"
    build/cli/rill place ../shared/testdata/tf_graphs/rust_regression_ckpt.pb \
      --cluster 'ps=127.0.0.1:2222,127.0.0.1:2223;worker=127.0.0.1:2224' \
      --replica_device_setter --partition |
      grep -E '\((VariableV2|Assign|ApplyGradientDescent)\)|nodes, |(send|recv) (w|b)[:/]'
    echo
    echo "== the seed MNIST model built with the C++ API"
    build/examples/mnist_model_graph
    echo
    echo "== rill graph on the TensorFlow graphs in ../shared/testdata/tf_graphs"
    for graph in ../shared/testdata/tf_graphs/*.pb ../shared/testdata/tf_graphs/*.pbtxt; do
      build/cli/rill graph "$graph" | head -1 || status=1
    done
    echo
    build/cli/rill devices
    echo
    echo "== what a person sees of the asynchronous run: a report page and a trace of one step"
    build/cli/rill report "$mnist_logs/async" --out "$mnist_logs/async/report.html" || status=1
    for trace in "$mnist_logs"/async/*.trace.json; do
      echo "trace: $trace (open it in https://ui.perfetto.dev or chrome://tracing)"
    done
    exit "$status"
    ;;
  test)
    # A build with CUDA tests the device query without it too
    # (device_query_nocuda), so one build covers both.
    meson test -C build --print-errorlogs --num-processes "$jobs"
    ;;
esac
