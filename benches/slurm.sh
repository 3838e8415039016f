#!/usr/bin/env bash
# distributed_mnist under a real Slurm: starts a single-node Slurm of this
# machine (slurmctld and slurmd with a minimal slurm.conf in a temporary
# directory, on 127.0.0.1), runs
#   srun -n 3 distributed_mnist --cluster_from slurm --num_ps 1 ...
# and, as its baseline, the same three tasks started by hand with the
# cluster flags. Reports each run's wall time, its workers' result lines and
# whether the job ended by itself (the ps ends once the workers have).
#
#   benches/slurm.sh [--build DIR] [--train_steps N] [--keep]
#
# Exit 0 when both runs trained; 77 when Slurm is not installed
# (scripts/setup.sh slurm) or cannot be started here, saying why; 1 when a
# run failed. --keep leaves the temporary directory (slurm.conf, the
# daemons' logs, the runs' output) in place.
#
# The Slurm it starts authenticates nobody (auth/none, cred/none): it lives
# for this script only, listens on 127.0.0.1, and so needs no munge key.
set -euo pipefail

build=build
train_steps=1000
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --train_steps) train_steps=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "slurm.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

skip() {
  echo "slurm.sh: SKIPPED: $*" >&2
  exit 77
}

for tool in slurmctld slurmd srun sinfo python3; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/setup.sh slurm)"
done
mnist=$(realpath "$build/examples/distributed_mnist" 2>/dev/null || true)
if [ -z "$mnist" ] || [ ! -x "$mnist" ]; then
  echo "slurm.sh: no $build/examples/distributed_mnist; build it first:" \
    "ninja -C $build examples/distributed_mnist" >&2
  exit 2
fi

dir=$(mktemp -d /tmp/rill-slurm.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ "$keep" = 1 ]; then echo "slurm.sh: kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT

# Free ports on 127.0.0.1: two for the daemons, then three in a row for the
# tasks of a run (a task listens on --port_base plus its index on the node).
read -r ctld_port slurmd_port < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
)
free_port_base() {
  python3 - <<'EOF'
import random, socket
for _ in range(200):
    base = random.randrange(20000, 60000)
    socks = []
    try:
        for port in range(base, base + 3):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", port))
        print(base)
        break
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
EOF
}

node=$(hostname -s)
user=$(id -un)
mkdir -p "$dir/state" "$dir/spool" "$dir/log"
cat > "$dir/slurm.conf" <<EOF
ClusterName=rill
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/none
CredType=cred/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No cgroups: containers seldom let a daemon make them.
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=rill Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
export SLURM_CONF=$dir/slurm.conf

slurmctld -c -D -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 &
pids+=($!)

# The node is ready once sinfo calls it idle.
ready=0
for _ in $(seq 60); do
  if [ "$(sinfo -h -N -o %t 2>/dev/null)" = idle ]; then ready=1; break; fi
  for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || break 2; done
  sleep 0.5
done
if [ "$ready" != 1 ]; then
  echo "slurm.sh: the daemons' last words:" >&2
  tail -n 5 "$dir"/log/*.out "$dir"/log/*.log >&2 2>/dev/null || true
  skip "Slurm could not be started here (node state: '$(sinfo -h -N -o %t 2>&1 | head -1)')"
fi
echo "slurm.sh: Slurm $(sinfo -V | awk '{print $2}') up: node $node, $(nproc) CPUs, $dir"

train_flags=(--num_ps 1 --train_steps "$train_steps" --log_every 200 --validate_every 100000
             --quiet)
status=0

# Seconds since `date +%s%N` gave $1.
elapsed() { awk -v start="$1" -v now="$(date +%s%N)" 'BEGIN { print (now - start) / 1e9 }'; }

# Prints the run's wall time and its workers' result lines; fails unless
# it ended with status 0 and both workers gave a result.
report() {
  local name=$1 rc=$2 seconds=$3 out=$4
  local results
  results=$(grep -c '^result: ' "$out" || true)
  printf '%-9s exit %d, %6.1f s, %d worker results\n' "$name" "$rc" "$seconds" "$results"
  grep '^result: ' "$out" | sed 's/^/          /'
  if [ "$rc" != 0 ] || [ "$results" != 2 ]; then
    echo "slurm.sh: $name failed; its output ends:" >&2
    tail -n 20 "$out" >&2
    status=1
  fi
}

# srun: -O lets three tasks share fewer CPUs; the ps must end by itself,
# or srun would wait for ever (timeout bounds that failure).
base=$(free_port_base)
start=$(date +%s%N)
rc=0
timeout 600 srun -n 3 -O --kill-on-bad-exit=1 "$mnist" --cluster_from slurm --port_base "$base" \
  --logdir "$dir/srun-logs" "${train_flags[@]}" >"$dir/srun.out" 2>&1 || rc=$?
report srun "$rc" "$(elapsed "$start")" "$dir/srun.out"

# The baseline: the same tasks started by hand with the cluster flags.
base=$(free_port_base)
cluster=(--ps_hosts "127.0.0.1:$base" --worker_hosts "127.0.0.1:$((base + 1)),127.0.0.1:$((base + 2))")
start=$(date +%s%N)
task_pids=()
timeout 600 "$mnist" "${cluster[@]}" --job_name ps --task_index 0 --ps_exit_with_chief \
  "${train_flags[@]}" >"$dir/flags.out" 2>&1 &
task_pids+=($!)
for w in 0 1; do
  timeout 600 "$mnist" "${cluster[@]}" --job_name worker --task_index "$w" --logdir "$dir/flags-logs" \
    "${train_flags[@]}" >>"$dir/flags.out" 2>&1 &
  task_pids+=($!)
done
rc=0
for pid in "${task_pids[@]}"; do wait "$pid" || rc=$?; done
report by-hand "$rc" "$(elapsed "$start")" "$dir/flags.out"
exit "$status"
