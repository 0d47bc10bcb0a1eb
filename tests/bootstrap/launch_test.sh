#!/bin/bash
# Runs bootstrap_check as N ranks under one launcher and passes when the
# launcher exits 0 and every rank printed "bootstrap <kind> rank <r> of <N> ok".
#
# usage: launch_test.sh <launcher> <N> <kind> <bootstrap_check> [<lcirun>]
#   launcher: local (no launcher; N must be 1), lcirun, hydra (PMI-1),
#             hydra-pmi2 (LCI_BOOTSTRAP=pmi2), mpirun (PMIx),
#             srun-pmi2, srun-pmix (srun --mpi=pmi2|pmix; needs SLURM_CONF,
#             e.g. the cluster of tools/slurm_local.sh)
#
# Every launcher is kept on loopback: hydra with -iface lo on host
# 127.0.0.1, OpenMPI's out-of-band channel with oob_tcp_if_include=lo (its
# PMIx server listens on 127.0.0.1 already), lcirun always. OpenMPI keeps its
# session directory under TMPDIR, so it points into the test's own TEST_TMPDIR.
# srun talks to the cluster that SLURM_CONF names (its slurmctld and slurmd
# listen on 127.0.0.1 under tools/slurm_local.sh); a missing or unusable one
# fails the test, never skips it.
set -u
launcher=$1
ranks=$2
kind=$3
check=$4
lcirun=${5:-}
output="${TEST_TMPDIR}/output.txt"
# Below Bazel's own limit for size = "small" (60 s), so a hang reports here.
limit_s=45

# The launcher's own variables must not leak in from the caller.
unset LCI_BOOTSTRAP PMI_FD PMI_RANK PMI_SIZE PMI_ID PMI_PORT PMI_JOBID \
  PMI_VERSION PMIX_RANK PMIX_NAMESPACE LCIRUN_ADDR LCIRUN_RANK LCIRUN_SIZE \
  LCIRUN_JOB SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID

# srun's own bounds: the job's time limit (minutes) ends it inside Slurm even
# if srun itself is killed; --overcommit lets 4 ranks share a 2-CPU node;
# --kill-on-bad-exit ends the other ranks as soon as one fails.
srun_flags=(--job-name=lci-launch-test --time=1 --overcommit
  --kill-on-bad-exit=1 -n "$ranks")
case "$launcher" in
  srun-*)
    if [ -z "${SLURM_CONF:-}" ] || [ ! -r "$SLURM_CONF" ]; then
      echo "FAIL: SLURM_CONF='${SLURM_CONF:-}' names no readable slurm.conf;" \
        "start tools/slurm_local.sh and pass --test_env=SLURM_CONF"
      exit 1
    fi ;;
esac

case "$launcher" in
  local)
    timeout "$limit_s" "$check" ;;
  lcirun)
    timeout "$limit_s" "$lcirun" -n "$ranks" "$check" ;;
  hydra)
    timeout "$limit_s" mpiexec.hydra -launcher fork -iface lo \
      -hosts 127.0.0.1 -n "$ranks" "$check" ;;
  hydra-pmi2)
    LCI_BOOTSTRAP=pmi2 timeout "$limit_s" mpiexec.hydra -launcher fork \
      -iface lo -hosts 127.0.0.1 -n "$ranks" "$check" ;;
  mpirun)
    TMPDIR="$TEST_TMPDIR" timeout "$limit_s" mpirun.openmpi \
      --allow-run-as-root --oversubscribe --mca oob_tcp_if_include lo \
      -np "$ranks" "$check" ;;
  srun-pmi2)
    timeout -k 5 "$limit_s" srun --mpi=pmi2 "${srun_flags[@]}" "$check" ;;
  srun-pmix)
    timeout -k 5 "$limit_s" srun --mpi=pmix "${srun_flags[@]}" "$check" ;;
  *)
    echo "unknown launcher $launcher"; exit 2 ;;
esac >"$output" 2>&1
status=$?
cat "$output"

failed=0
if [ "$status" -ne 0 ]; then
  echo "FAIL: $launcher exited with status $status"
  failed=1
fi
for ((rank = 0; rank < ranks; rank++)); do
  if ! grep -q "bootstrap $kind rank $rank of $ranks ok" "$output"; then
    echo "FAIL: no ok line from rank $rank ($kind, $ranks ranks)"
    failed=1
  fi
done
exit "$failed"
