#!/bin/bash
# One device call of a round of H200 measurements, by step (each writes under a scratch folder <step>/, a line in
# steps.txt; OUT receives steps.txt, gpu.csv, round.tar.gz with every step's files, and records.tar.gz from sync):
#   timing    benchmarks/device/verify_timing.py: CLI verify -n 7 of rmsnorm on a fresh machine, then warm,
#             then in-process with its tool-side profile (run it first: "cold" means the first torch import)
#   sync      benchmarks/device/h200_sync.sh: sync --from-scratch of the GPU targets, twice (records.tar.gz)
#   margins   benchmarks/correctness_margins.py --device cuda
#   aa        benchmarks/device/contract_v2.py steps 5,6: adversarial GPU suite, scale-aware cases, A/A verifies
#             and fresh int4 verifies
#   suites    benchmarks/device/suites.sh (KernelBench level 1 import and verifies; needs kb/ carried)
#   profile   benchmarks/device/capture_profile_diff.sh (ncu captures for `hotkernel profile diff`)
# Usage (device, repo root; carry .whl and, for suites/aa, kb):
#   HOTKERNEL_GIT_COMMIT=<commit> bash benchmarks/device/h200_round.sh OUT timing,sync,margins
set -u
OUT=${1:?usage: h200_round.sh OUT STEPS}; STEPS=${2:?steps, e.g. timing,sync,margins}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HOTKERNEL_PYTHON=python3 HK_KB_DIR=$PWD/kb
WORK=$(mktemp -d /tmp/hk_round_XXXX)
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,power.limit --format=csv > "$OUT/gpu.csv" 2>&1
step() {  # step NAME COMMAND...: runs it, logs its wall time and exit code
  local name=$1; shift; local t0=$SECONDS
  "$@" > "$WORK/$name/stdout.txt" 2> "$WORK/$name/stderr.txt"
  echo "$name rc=$? wall_s=$((SECONDS - t0)) at=$(date -u +%FT%TZ)" | tee -a "$OUT/steps.txt"
}
for s in ${STEPS//,/ }; do
  mkdir -p "$WORK/$s"
  case $s in
    timing) step timing python3 benchmarks/device/verify_timing.py "$WORK/timing" ;;
    sync) step sync bash benchmarks/device/h200_sync.sh "$WORK/sync" 300 ;;
    margins) step margins python3 benchmarks/correctness_margins.py --device cuda \
               --out "$WORK/margins/correctness_margins_h200.json" ;;
    aa) step aa python3 benchmarks/device/contract_v2.py "$WORK/aa" --steps 5,6 --budget-s 270 ;;
    suites) step suites bash benchmarks/device/suites.sh "$WORK/suites" ;;
    profile) step profile bash benchmarks/device/capture_profile_diff.sh "$WORK/profile" ;;
    *) echo "unknown step $s" | tee -a "$OUT/steps.txt" ;;
  esac
done
# At most 8 files come back: the records tarball apart, everything else in one bundle.
[ -f "$WORK/sync/records.tar.gz" ] && mv "$WORK/sync/records.tar.gz" "$OUT/records.tar.gz"
tar czf "$OUT/round.tar.gz" -C "$WORK" .
cat "$OUT/steps.txt"; tail -3 "$WORK"/*/stderr.txt 2>/dev/null | tail -30
