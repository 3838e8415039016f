#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR: stages `meson install` of BUILD_DIR in
# a temporary dir, checks that the installed headers are complete, and builds
# and runs tests/install/consumer.cc against the staged rill with pkg-config,
# as a user builds a program. Exits 77 (skipped) when a tool is missing.
# RILL_CONSUMER_FLAGS: compiler flags the program needs beyond pkg-config's
# (the sanitizers, when the library was built with them).
set -euo pipefail

build_dir="$1"
source_dir="$2"
cxx="${CXX:-c++}"

for tool in meson pkg-config "$cxx"; do
  if ! command -v "$tool" > /dev/null; then
    echo "SKIP: $tool not found"
    exit 77
  fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/rill-install-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT
stage="$work/stage"

# The suite has built everything; installing must not rebuild it.
meson install -C "$build_dir" --destdir "$stage" --no-rebuild --quiet

pc="$(find "$stage" -name rill.pc -path '*/pkgconfig/*')"
if [ -z "$pc" ]; then
  echo "FAIL: no rill.pc installed"
  exit 1
fi
if grep -F -e "$(realpath "$build_dir")" -e "$(realpath "$source_dir")" "$pc"; then
  echo "FAIL: rill.pc refers to the build or source tree"
  exit 1
fi
# The .pc names the real prefix; point it at the staged one. (pkg-config's
# --define-prefix guesses wrong under a multiarch libdir, and
# --define-variable would move the system packages' prefix too.)
prefix="$(sed -n 's/^prefix=//p' "$pc")"
sed -i "s|^prefix=.*|prefix=$stage$prefix|" "$pc"
PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
include_dir="$(pkg-config --variable=includedir rill)/rill"
lib_dir="$(pkg-config --variable=libdir rill)"

status=0
# Every header of the library's folders is installed (CUDA-only ones live
# in cuda/ folders and are installed only with CUDA on).
for folder in graph ops kernels placement runtime transport; do
  while read -r header; do
    if [ ! -f "$include_dir/$header" ]; then
      echo "FAIL: $header is not installed (add it to install_headers in $folder/meson.build)"
      status=1
    fi
  done < <(cd "$source_dir" && find "$folder" -name '*.h' -not -path '*/cuda/*')
done
# What the installed headers include of ours is installed too, generated
# headers (protobuf, op wrappers) included.
while read -r header; do
  while read -r included; do
    if [ ! -f "$include_dir/$included" ]; then
      echo "FAIL: ${header#"$include_dir/"} includes $included, which is not installed"
      status=1
    fi
  done < <(sed -n -E 's@^#include "((graph|ops|kernels|placement|runtime|transport)/[^"]+)".*@\1@p' "$header")
done < <(find "$include_dir" -name '*.h')
[ "$status" = 0 ] || exit 1

flags="$(pkg-config --cflags --libs rill) ${RILL_CONSUMER_FLAGS:-}"
# shellcheck disable=SC2086  # the flags are words
if ! "$cxx" -std=c++20 "$source_dir/tests/install/consumer.cc" -o "$work/consumer" $flags \
    > "$work/compile.log" 2>&1; then
  cat "$work/compile.log"
  echo "FAIL: consumer.cc does not build against the installed rill"
  exit 1
fi
output="$(LD_LIBRARY_PATH="$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/consumer")"
echo "$output"
expected='y = [29, 122, 53, 150]'
if [ "$output" != "$expected" ]; then
  echo "FAIL: expected '$expected'"
  exit 1
fi
echo "PASS"
