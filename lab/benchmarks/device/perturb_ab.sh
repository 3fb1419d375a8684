#!/bin/bash
# What the per-call perturbation costs each side: ROUNDS times, for each TARGET, `hotkernel verify -n N --json`
# in each mode of HK_MODES (default "perturbed plain"): "perturbed" under the contract as it is, "plain" under
# lab/benchmarks/device/no_perturb_patch.py (verify_<round>_<target>_<mode>.json), the contract restored before each.
# (At f4279c7 a third mode, "fused", ran the one-copy perturbation the contract now has, as a patch of the
# contract's two copies: lab/benchmarks/evidence/contract_v2/fused_ab_2041/.)
# A line per verify in steps.txt. Nothing is recorded. Stops starting rounds after BUDGET_S.
# `python lab/benchmarks/drift_tables.py perturb OUT` prints the table.
# Usage (device, repo root; .whl/ carried): bash lab/benchmarks/device/perturb_ab.sh OUT ROUNDS N BUDGET_S TARGET...
set -u
OUT=${1:?usage: perturb_ab.sh OUT ROUNDS N BUDGET_S TARGET...}; ROUNDS=${2:?}; N=${3:?}; BUDGET_S=${4:?}; shift 4
. lab/benchmarks/device/env.sh
mkdir -p "$OUT"
gpu_csv "$OUT/gpu.csv"
SAVED=$(mktemp -d)
cp templates/hk_contract.py "$SAVED/template.py"
S=$SECONDS
for i in $(seq 1 "$ROUNDS"); do
  for t in "$@"; do
    for mode in ${HK_MODES:-perturbed plain}; do
      [ $((SECONDS - S)) -gt "$BUDGET_S" ] && break 3
      cp "$SAVED/template.py" templates/hk_contract.py; cp "$SAVED/template.py" targets/hk_contract.py
      case $mode in
        plain) python3 lab/benchmarks/device/no_perturb_patch.py > /dev/null || exit 1 ;;
      esac
      t0=$SECONDS
      timeout 150 python3 -m hotkernel verify "targets/$t/baseline.py" "targets/$t/candidate.py" -n "$N" --json \
        > "$OUT/verify_${i}_${t}_$mode.json" 2> "$OUT/verify_${i}_${t}_$mode.err"
      echo "$i $t $mode rc=$? wall_s=$((SECONDS - t0)) at=$(date -u +%FT%TZ)" | tee -a "$OUT/steps.txt"
    done
  done
done
cp "$SAVED/template.py" templates/hk_contract.py; cp "$SAVED/template.py" targets/hk_contract.py
