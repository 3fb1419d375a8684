#!/bin/bash
# Back-to-back verifies with the card's state logged each second: does a headline move between verifies, and
# with what? Per round, one `hotkernel verify -n 7 --json` of each target's baseline against its candidate
# (verify_<round>_<target>.json), a line "ROUND TARGET rc=.. wall_s=S at=END" in steps.txt, and
# `nvidia-smi dmon -s pucm -o DT` over the whole watch (dmon.txt); `python lab/benchmarks/drift_tables.py watch OUT`
# prints the table. Stops starting rounds after BUDGET_S.
# Usage (device, repo root; .whl/ carried): bash lab/benchmarks/device/drift_watch.sh OUT ROUNDS BUDGET_S TARGET...
set -u
OUT=${1:?usage: drift_watch.sh OUT ROUNDS BUDGET_S TARGET...}; ROUNDS=${2:?}; BUDGET_S=${3:?}; shift 3
. lab/benchmarks/device/env.sh
mkdir -p "$OUT"
gpu_csv "$OUT/gpu.csv"
nvidia-smi dmon -s pucm -o DT > "$OUT/dmon.txt" 2>&1 &
DMON=$!
sleep 3
S=$SECONDS
for i in $(seq 1 "$ROUNDS"); do
  for t in "$@"; do
    [ $((SECONDS - S)) -gt "$BUDGET_S" ] && break 2
    t0=$SECONDS
    timeout 120 python3 -m hotkernel verify "targets/$t/baseline.py" "targets/$t/candidate.py" -n 7 --json \
      > "$OUT/verify_${i}_$t.json" 2> "$OUT/verify_${i}_$t.err"
    echo "$i $t rc=$? wall_s=$((SECONDS - t0)) at=$(date -u +%FT%TZ)" | tee -a "$OUT/steps.txt"
  done
done
sleep 2
kill "$DMON"
