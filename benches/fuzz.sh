#!/usr/bin/env bash
# Fuzzes every target in tests/fuzz with libFuzzer under AddressSanitizer
# and UndefinedBehaviorSanitizer, SECONDS each (default 600), one after
# another, and prints a table: executions, executions per second, coverage
# (libFuzzer's cov: edges and ft: features) and crashes.
#
#   benches/fuzz.sh [SECONDS] [TARGET...]
#
# Installs clang and libFuzzer if missing (scripts/setup.sh fuzz) and
# configures build-fuzz (or $FUZZ_BUILD_DIR) with clang. Each target runs
# on a scratch copy of its corpus (tests/fuzz/corpus/TARGET); crashes and
# logs stay in $FUZZ_RESULTS (default build-fuzz/fuzz-results/<time>).
# Exits 1 when any target crashed: a crash input belongs in
# tests/fuzz/corpus/TARGET/crash-<what> once the bug is fixed, with a test.
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
all_targets=(graph_def wire_message zmtp_stream worker_service master_service npy tensor_json cluster_spec
             tf_config checkpoint event_file)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")
case "$seconds" in
  ''|*[!0-9]*) echo "usage: benches/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

# The longest input worth trying, by target: room for a few graphs or
# frames where the input holds them, little where it is one short text.
max_len() {
  case "$1" in
    graph_def|worker_service|master_service) echo 65536 ;;
    tensor_json|cluster_spec|tf_config) echo 4096 ;;
    *) echo 16384 ;;
  esac
}

scripts/setup.sh fuzz
build="${FUZZ_BUILD_DIR:-build-fuzz}"
# A build step runs a generated program (the op wrappers' generator), whose
# leaks at exit do not matter.
export ASAN_OPTIONS="detect_leaks=0"
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" -Dcuda=disabled -Dfuzz=true \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized
fi
if ! grep -q -- '-fsanitize=fuzzer' "$build/build.ninja"; then
  echo "fuzz: $build was configured without -Dfuzz=true; remove it or set FUZZ_BUILD_DIR" >&2
  exit 2
fi
build_start=$(date +%s)
ninja -C "$build" $(for t in "${targets[@]}"; do echo "tests/fuzz/${t}_fuzzer"; done)
echo "fuzz: build took $(( $(date +%s) - build_start )) s"

results="${FUZZ_RESULTS:-$build/fuzz-results/$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$results"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

rows=()
failed=0
for target in "${targets[@]}"; do
  dir="$results/$target"
  rm -rf "$dir"
  mkdir -p "$dir/corpus"
  cp tests/fuzz/corpus/"$target"/* "$dir/corpus/"
  echo "fuzz: $target for $seconds s (log: $dir/fuzz.log)"
  start=$(date +%s)
  status=0
  "$build/tests/fuzz/${target}_fuzzer" "$dir/corpus" \
    -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2560 -timeout=60 \
    -max_len="$(max_len "$target")" -artifact_prefix="$dir/" >"$dir/fuzz.log" 2>&1 || status=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/fuzz.log" | tail -1)
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$dir/fuzz.log" | tail -1 | awk '{print $2 "/" $4}')
  crashes=$(find "$dir" -maxdepth 1 -type f \
    \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes="?"; fi
  if [ "$status" -ne 0 ] || [ "$crashes" != 0 ]; then
    failed=1
    echo "fuzz: $target FAILED (exit $status); see $dir/fuzz.log"
    grep -m3 -E 'ERROR: |runtime error|check failed' "$dir/fuzz.log" | sed 's/^/  /' || true
  fi
  rows+=("$(printf '| %s | %s | %s | %s | %s | %s |' "$target" "$elapsed" "${execs:-?}" \
    "${rate:-?}" "${cov:-?}" "$crashes")")
done

echo
echo "| target | seconds | executions | exec/s | cov/ft | crashes |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "fuzz: results in $results"
exit "$failed"
