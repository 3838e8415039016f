#!/usr/bin/env bash
# Packs what benches/gpu_check.sh runs on a GPU machine into one folder to carry there: builds
# nothing (build with CUDA first, e.g. `ninja -C build`), packs the binaries gpu_check.sh lists
# (gpu_check.sh --list-binaries) and the libraries they need through device-pack.sh, and adds
# gpu_check.sh, gpu_check_util.py, gpu_torch_twin.py and the Fashion-MNIST files.
#
#   benches/gpu_pack.sh [OUT_DIR] [--build DIR] [--device-pack PATH] [--data DIR|none] [--gz]
#
#   OUT_DIR        default build-gpu-pack (ignored by git, as every /build*/ is); it is emptied first
#   --build        the build tree with CUDA (default build)
#   --device-pack  default ../shared/tools/device-pack.sh (it writes pack.tar.gz)
#   --data         the four Fashion-MNIST IDX files (default /usr/share/datasets/fashion-mnist, from
#                  the Debian package dataset-fashion-mnist), copied to OUT_DIR/fashion-mnist; none:
#                  leave them out (gpu_check.sh then needs --data DIR on the GPU machine)
#   --gz           keep device-pack.sh's pack.tar.gz (about 47 MiB) instead of recompressing it to
#                  pack.tar.xz (about 17 MiB: the binaries share most of their code, which xz's
#                  64 MiB window finds; it takes about 2 minutes on 2 cores)
#
# OUT_DIR then holds pack.tar.xz, gpu_check.sh, gpu_torch_twin.py, fashion-mnist/ (30 MiB) and
# MANIFEST (commit, binaries, sizes): about 46 MiB, small enough to carry to a GPU machine whose
# file transfers are limited to 64 MiB. There, with the folder at the repository root:
#   bash build-gpu-pack/gpu_check.sh LOG_DIR       (see its --help; allow it 7 minutes)
set -euo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

out="build-gpu-pack"
build=build
device_pack=../shared/tools/device-pack.sh
data=/usr/share/datasets/fashion-mnist
compress=xz
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --device-pack) device_pack="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --gz) compress=gz; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    -*) echo "gpu_pack.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *) out="$1"; shift ;;
  esac
done

fail() { echo "gpu_pack.sh: $*" >&2; exit 1; }
[ -f "$device_pack" ] || fail "no $device_pack (--device-pack PATH)"
mapfile -t binaries < <(bash benches/gpu_check.sh --list-binaries)
missing=()
for b in "${binaries[@]}"; do [ -x "$build/$b" ] || missing+=("$b"); done
[ "${#missing[@]}" -eq 0 ] ||
  fail "not built in $build: ${missing[*]} (a CUDA build: ninja -C $build ${missing[*]})"
ldd "$build/cli/rill" | grep -q libcudart ||
  echo "gpu_pack.sh: warning: $build/cli/rill does not link the CUDA runtime: a build without CUDA?" >&2
if [ "$data" != none ]; then
  for stem in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
              t10k-labels-idx1-ubyte; do
    [ -f "$data/$stem.gz" ] || [ -f "$data/$stem" ] ||
      fail "no ${data}/${stem}[.gz] (install dataset-fashion-mnist, or --data DIR, or --data none)"
  done
fi

# Empty OUT_DIR, but only one this script wrote (or an empty or new one).
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ]; then
  [ -f "$out/MANIFEST" ] || fail "$out is not empty and has no MANIFEST: not a folder gpu_pack.sh wrote"
  rm -rf "$out"
fi
mkdir -p "$out"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
bash "$device_pack" "$build" "$stage" "${binaries[@]}"
if [ "$compress" = xz ]; then
  echo "gpu_pack.sh: recompressing with xz -9 (about 2 minutes on 2 cores)"
  gzip -dc "$stage/pack.tar.gz" | xz -9 -T0 > "$out/pack.tar.xz"
else
  cp "$stage/pack.tar.gz" "$out/"
fi
cp benches/gpu_check.sh benches/gpu_check_util.py benches/gpu_torch_twin.py "$out/"
if [ "$data" != none ]; then
  mkdir -p "$out/fashion-mnist"
  for f in "$data"/{train,t10k}-{images-idx3,labels-idx1}-ubyte{,.gz}; do
    [ -f "$f" ] && cp "$f" "$out/fashion-mnist/"
  done
fi
{
  echo "packed $(date -u +%Y-%m-%dT%H:%M:%SZ) from $repo at $(git describe --always --dirty 2>/dev/null || echo '?')"
  echo "build: $build, buildtype $(grep -o '"name": "buildtype", "value": "[a-z]*"' \
    "$build/meson-info/intro-buildoptions.json" 2>/dev/null | sed 's/.*"value": "//; s/"$//')"
  echo "binaries:"; printf '  %s\n' "${binaries[@]}"
  echo "files:"; (cd "$out" && find . -type f ! -name MANIFEST -exec du -k {} + | sort -k2 | sed 's/^/  /')
} > "$out/MANIFEST"

kib=$(du -sk "$out" | cut -f1)
echo "gpu_pack.sh: $out: $((kib / 1024)) MiB: $(cd "$out" && echo *)"
if [ "$kib" -gt $((64 * 1024)) ]; then
  echo "gpu_pack.sh: warning: over 64 MiB, too large for some transfers (--gz? --data none?)" >&2
fi
echo "on the GPU machine: bash $out/gpu_check.sh \"\$OUT\"   (carry: $out)"
