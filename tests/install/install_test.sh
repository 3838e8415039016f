#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR [CUDA_LIB_DIR]: stages `meson install`
# of BUILD_DIR in a temporary dir, checks that the installed headers are
# complete, and builds tests/install/consumer.cc against the staged rill with
# pkg-config (PKG_CONFIG_PATH alone: rill.pc is relocatable) and with
# -Wall -Wextra -Werror, as a user builds a program, and runs it. With
# CUDA_LIB_DIR (a CUDA build), librill.so and the rill command must carry it
# as a RUNPATH, and the program runs with the loader's cache off, so that the
# CUDA libraries are found through that RUNPATH alone. Exits 77 (skipped)
# when a tool is missing.
# RILL_CONSUMER_FLAGS: compiler flags the program needs beyond pkg-config's
# (the sanitizers, when the library was built with them).
set -euo pipefail

build_dir="$1"
source_dir="$2"
cuda_lib_dir="${3:-}"
cxx="${CXX:-c++}"

for tool in meson pkg-config readelf "$cxx"; do
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
# Installed elsewhere than its prefix, rill.pc must still name the staged
# files: its prefix is relative to its own folder.
if ! grep -q '^prefix=${pcfiledir}/' "$pc"; then
  grep '^prefix=' "$pc"
  echo "FAIL: rill.pc is not relocatable (a build dir set up before meson.build asked for it:"
  echo "      meson configure $build_dir -Dpkgconfig.relocatable=true)"
  exit 1
fi
PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
include_dir="$(pkg-config --variable=includedir rill)/rill"
lib_dir="$(pkg-config --variable=libdir rill)"
if [ "$(realpath -m "$lib_dir")" != "$(realpath "$(dirname "$(dirname "$pc")")")" ]; then
  echo "FAIL: pkg-config names $lib_dir as rill's libdir, not the staged $(dirname "$(dirname "$pc")")"
  exit 1
fi

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

# The CUDA libraries are found through the RUNPATH of what links them.
if [ -n "$cuda_lib_dir" ]; then
  for binary in "$lib_dir/librill.so" "$(find "$stage" -path '*/bin/rill' -type f)"; do
    runpath="$(readelf -d "$binary" | sed -n 's/.*(RUNPATH).*\[\(.*\)\]/\1/p')"
    if [[ ":$runpath:" != *":$cuda_lib_dir:"* ]]; then
      echo "FAIL: ${binary#"$stage"} has RUNPATH '$runpath', without $cuda_lib_dir"
      status=1
    fi
  done
  [ "$status" = 0 ] || exit 1
fi

# A user's warnings, as errors: the dependencies' headers must come in as
# system headers, or Eigen's draw C++20 deprecation warnings.
flags="$(pkg-config --cflags --libs rill) ${RILL_CONSUMER_FLAGS:-}"
# shellcheck disable=SC2086  # the flags are words
if ! "$cxx" -std=c++20 -Wall -Wextra -Werror "$source_dir/tests/install/consumer.cc" \
    -o "$work/consumer" $flags > "$work/compile.log" 2>&1; then
  cat "$work/compile.log"
  echo "FAIL: consumer.cc does not build against the installed rill with -Wall -Wextra -Werror"
  exit 1
fi
if [ -n "$cuda_lib_dir" ]; then
  # The loader's cache (ld.so.conf) off: only the default folders, the
  # staged library's and the RUNPATHs are searched.
  loader="$(readelf -l "$work/consumer" | sed -n 's/.*interpreter: \(.*\)\]/\1/p')"
  output="$("$loader" --inhibit-cache --library-path "$lib_dir" "$work/consumer")"
else
  output="$(LD_LIBRARY_PATH="$lib_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/consumer")"
fi
echo "$output"
expected='y = [29, 122, 53, 150]'
if [ "$output" != "$expected" ]; then
  echo "FAIL: expected '$expected'"
  exit 1
fi
echo "PASS"
