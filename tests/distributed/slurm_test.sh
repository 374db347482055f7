#!/usr/bin/env bash
# A real Slurm on this machine: munged and a one-node cluster (slurmctld,
# slurmd; 2 CPUs) started in a temporary folder and stopped at the end.
# Runs examples/030-slurm as a user would (an array of shards with
# journals, one shard requeued and resumed, the shards merged), then a
# data-parallel case on 2 ranks under srun and under mpirun.
#   tests/distributed/slurm_test.sh SOURCE_DIR BUILD_DIR
# Needs root (slurmd runs jobs as their user) and Debian's slurm-wlm,
# munge and openmpi-bin (scripts/setup.sh --test); without them it fails.
set -euo pipefail
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)

missing() {
  echo "slurm_test: $1" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || missing "needs root to start slurmd"
for tool in slurmctld slurmd munged srun sbatch mpirun; do
  command -v "$tool" >/dev/null || missing "no $tool (scripts/setup.sh --test)"
done
[[ -r /etc/munge/munge.key ]] || missing "no /etc/munge/munge.key"

tmp=$(mktemp -d /tmp/paradnn-slurm.XXXXXX)
pids=()
cleanup() {
  set +e
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  [[ -f $tmp/munge/munged.pid ]] && kill "$(cat "$tmp/munge/munged.pid")" 2>/dev/null
  wait 2>/dev/null
  sleep 0.5
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "slurm_test: FAILED: $*" >&2
  squeue -a >&2
  for log in "$tmp"/*.log; do echo "== $log" >&2; tail -20 "$log" >&2; done
  exit 1
}

# munged as the munge user, its socket in the temporary folder.
mkdir -p "$tmp/munge"
chown munge: "$tmp/munge"
chmod 711 "$tmp"
runuser -u munge -- munged --socket="$tmp/munge/munge.socket" \
  --pid-file="$tmp/munge/munged.pid" --log-file="$tmp/munge/munged.log" \
  --seed-file="$tmp/munge/munged.seed" --key-file=/etc/munge/munge.key \
  || fail "munged did not start"

# Ports of our own, so that a machine's own Slurm (or a parallel test run)
# is not disturbed.
base=$((17000 + $$ % 2000 * 2))
node=$(hostname)
mkdir -p "$tmp/state" "$tmp/spool"
cat >"$tmp/slurm.conf" <<CONF
ClusterName=paradnn-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge/munge.socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobRequeue=1
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf
slurmctld -D -f "$SLURM_CONF" >"$tmp/slurmctld.out.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" >"$tmp/slurmd.out.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  if sinfo -h -o %t 2>/dev/null | grep -qx idle; then break; fi
  sleep 0.2
done
sinfo -h -o %t | grep -qx idle || fail "the node did not come up"
echo "slurm_test: slurmctld and slurmd up ($(sinfo -V))"

# The example, from a folder of its own: build/ and configs/ as in a clone.
work=$tmp/work
mkdir -p "$work"
ln -s "$build" "$work/build"
ln -s "$src/configs" "$work/configs"
cd "$work"
mkdir -p results
export PARADNN_SWEEP=configs/smoke.yaml PARADNN_STEPS=2 PARADNN_THREADS=1
sbatch --wait --array=0-1 --cpus-per-task=1 --time=10 \
  "$src/examples/030-slurm/paradnn-array.sbatch" >"$tmp/sbatch.log" 2>&1 ||
  fail "the array job failed: $(cat "$tmp/sbatch.log")"
for shard in 0 1; do
  [[ -s results/smoke.$shard.0.json ]] || fail "shard $shard wrote no results"
done
echo "slurm_test: array of 2 shards done"

# Shard 0 is requeued as after a preemption that hit its last case: the
# journal loses that case, and the task runs it alone on restart.
job=$(sed -n 's/^Submitted batch job //p' "$tmp/sbatch.log")
lines=$(wc -l <results/smoke.0.journal)
sed -i '$d' results/smoke.0.journal
scontrol requeue "${job}_0" || fail "scontrol requeue ${job}_0"
# Slurm holds a requeued job back for a while before it is eligible again.
scontrol update JobId="${job}_0" StartTime=now ||
  fail "scontrol update StartTime=now"
for _ in $(seq 300); do
  [[ -s results/smoke.0.1.json ]] && [[ -z $(squeue -h -j "$job") ]] && break
  sleep 0.2
done
[[ -s results/smoke.0.1.json ]] || fail "the requeued shard wrote no results"
grep -q "resuming: $((lines - 1)) cases already done" results/slurm-"${job}"_0.out ||
  fail "the requeued shard did not resume: $(tail -5 results/slurm-"${job}"_0.out)"
ran=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['benchmarks']))" results/smoke.0.1.json)
[[ $ran == 1 ]] || fail "the requeued shard ran $ran cases, expected 1"
[[ $(wc -l <results/smoke.0.journal) == "$lines" ]] || fail "journal not completed"
echo "slurm_test: requeued shard resumed and ran 1 case"

build/paradnn merge results/smoke.*.json -o results/smoke.json \
  --config configs/smoke.yaml >"$tmp/merge.log" 2>&1 ||
  fail "merge: $(cat "$tmp/merge.log")"
# Every case of the sweep, and the one run again (it is in the first
# attempt's results too: it was not killed here, only forgotten).
grep -q " 1 duplicates, 0 missing" "$tmp/merge.log" ||
  fail "merge: $(cat "$tmp/merge.log")"
echo "slurm_test: merged: $(tail -1 "$tmp/merge.log")"

# The data-parallel example: the smoke sweep's training cases on 2 ranks
# (one node here, where the example asks for two), then its report against
# the shards' results of one rank each.
sbatch --wait --nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 \
  "$src/examples/030-slurm/paradnn-dp.sbatch" >"$tmp/sbatch-dp.log" 2>&1 ||
  fail "the data-parallel job failed: $(cat "$tmp/sbatch-dp.log") $(cat results/slurm-dp-*.out)"
grep -q "paradnn: [1-9][0-9]* passed, [0-9]* skipped, 0 failed" results/slurm-dp-*.out ||
  fail "the data-parallel job: $(tail -5 results/slurm-dp-*.out)"
build/paradnn report results/smoke.dp2.json --scaling results/smoke.json \
  -o "$tmp/report" >"$tmp/report.log" 2>&1 || fail "report: $(cat "$tmp/report.log")"
[[ -s $tmp/report/scaling_throughput.svg ]] || fail "no scaling plot"
echo "slurm_test: data-parallel sweep on 2 ranks: $(grep -o 'paradnn: .*' results/slurm-dp-*.out | tail -1)"

# A data-parallel case on 2 ranks: srun's and then Open MPI's environment.
fc=FC/layers:2/nodes:32/input:64/output:10/batch:8/torch/fp32/train
check_ranks() {
  python3 - "$1" "$2" <<'PY' || fail "$2: $(cat "$1")"
import json, sys
out = json.load(open(sys.argv[1]))
ctx = out["context"]
assert ctx["paradnn_world_size"] == "2", ctx
assert ctx["paradnn_rendezvous"].endswith("(" + sys.argv[2] + ")"), ctx
(b,) = out["benchmarks"]
assert "error_message" not in b, b
assert b["allreduce_bytes_per_step"] == 3466 * 4, b
PY
  echo "slurm_test: 2 ranks under $2: $(python3 -c "import json,sys; b=json.load(open(sys.argv[1]))['benchmarks'][0]; print('%.3f ms/step, all-reduce %.0f%% of it' % (b['real_time'], 100*b['time_allreduce_frac']))" "$1")"
}
# The results go to a file rank 0 writes itself: Open MPI 5's forwarding of
# the ranks' output once spliced a line of stderr into stdout's JSON.
srun -n 2 --cpus-per-task=1 build/paradnn --paradnn_case=$fc \
  --paradnn_threads=1 --benchmark_out="$tmp/srun.json" >"$tmp/srun.log" \
  2>&1 || fail "srun -n 2: $(cat "$tmp/srun.log")"
check_ranks "$tmp/srun.json" slurm
env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 2 \
  build/paradnn --paradnn_case=$fc --paradnn_threads=1 \
  --benchmark_out="$tmp/mpirun.json" >"$tmp/mpirun.log" 2>&1 ||
  fail "mpirun -np 2: $(cat "$tmp/mpirun.log")"
check_ranks "$tmp/mpirun.json" mpi
echo "slurm_test: passed"
