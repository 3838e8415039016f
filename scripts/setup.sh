#!/usr/bin/env bash
# Installs the Debian 12 packages rill builds with. Does nothing when they
# are all present; otherwise needs root (or sudo).
#   scripts/setup.sh        what the build and the tests need
#   scripts/setup.sh fuzz   also clang and libFuzzer (benches/fuzz.sh)
#   scripts/setup.sh torch  also PyTorch, the baseline of benches/distributed_training.py
#   scripts/setup.sh slurm  also Slurm's daemons and srun (benches/slurm.sh)
#   scripts/setup.sh bench  also pyzmq, the real client of benches/stranger_probe.py
set -euo pipefail

packages=(
  g++ meson ninja-build pkg-config
  protobuf-compiler libprotobuf-dev
  libzmq3-dev cppzmq-dev libsodium-dev
  libeigen3-dev libfmt-dev libabsl-dev zlib1g-dev libleveldb-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libdnnl-dev dataset-fashion-mnist graphviz
  # tests/cli/report_render_test.py draws a `rill report` page headless.
  chromium
  # tests/cluster/mpirun_test.cc starts distributed_mnist with a real mpirun.
  openmpi-bin
  # tests/deploy/kubernetes_test.py loads the manifests deploy/kubernetes/render.py writes.
  python3-yaml
)
for group in "$@"; do
  case "$group" in
    # libclang-rt-14-dev holds libFuzzer and the sanitizer runtimes.
    fuzz) packages+=(clang libclang-rt-14-dev) ;;
    # Without the pthread OpenBLAS, PyTorch's CPU kernels run 10-20x slower.
    torch) packages+=(python3-torch python3-numpy libopenblas0-pthread) ;;
    # benches/slurm.sh starts a single-node Slurm (no munge: auth/none).
    slurm) packages+=(slurmctld slurmd slurm-client) ;;
    # benches/stranger_probe.py calls a server as a ZeroMQ DEALER would.
    bench) packages+=(python3-zmq) ;;
    *) echo "setup: unknown package group '$group' (known: fuzz, torch, slurm, bench)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
