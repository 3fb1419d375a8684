#!/bin/bash
# Variants of one target head to head, in rounds over time: triage them (check_variants.py --time at the headline
# shapes: triage.jsonl), then ROUNDS times, for each variant in turn, write it as the target's candidate
# (check_variants.candidate_source) and `hotkernel verify -n 7 --json` it against the baseline
# (verify_<round>_<variant>.json, a line in steps.txt). Alternating the variants spreads each one's verifies over
# the whole call, so a slow stretch of the card or of a placement hits them all. Nothing is recorded; the working
# tree's candidate file is restored at the end. `python lab/benchmarks/drift_tables.py spread` / `rounds` read the
# verifies. Stops starting verifies after BUDGET_S.
# Usage (device, repo root; .whl/ carried): bash lab/benchmarks/device/variant_ab.sh OUT TARGET ROUNDS BUDGET_S VARIANT...
set -u
OUT=${1:?usage: variant_ab.sh OUT TARGET ROUNDS BUDGET_S VARIANT...}; TARGET=${2:?}; ROUNDS=${3:?}; BUDGET_S=${4:?}
shift 4
. lab/benchmarks/device/env.sh
mkdir -p "$OUT"
gpu_csv "$OUT/gpu.csv"
CANDIDATE=targets/$TARGET/candidate.py
cp "$CANDIDATE" "$OUT/kept_candidate.py.orig"
timeout 200 python3 lab/speedrun/check_variants.py --device cuda --shapes headline --time --targets "$TARGET" \
  --only "$@" > "$OUT/triage.jsonl" 2> "$OUT/triage.err"
S=$SECONDS
for i in $(seq 1 "$ROUNDS"); do
  for v in "$@"; do
    [ $((SECONDS - S)) -gt "$BUDGET_S" ] && break 2
    python3 -c "import sys; sys.path.insert(0, 'lab/speedrun'); import check_variants as cv; \
open('$CANDIDATE', 'w').write(cv.candidate_source('$TARGET', '$v'))" || exit 1
    t0=$SECONDS
    timeout 120 python3 -m hotkernel verify "targets/$TARGET/baseline.py" "$CANDIDATE" -n 7 --json \
      > "$OUT/verify_${i}_$v.json" 2> "$OUT/verify_${i}_$v.err"
    echo "$i $v rc=$? wall_s=$((SECONDS - t0)) at=$(date -u +%FT%TZ)" | tee -a "$OUT/steps.txt"
  done
done
cp "$OUT/kept_candidate.py.orig" "$CANDIDATE" && rm "$OUT/kept_candidate.py.orig"
