#!/bin/bash
# One device call of a round of H200 measurements, by step (each writes under a scratch folder <step>/, a line in
# steps.txt; OUT receives steps.txt, gpu.csv, round.tar.gz with every step's files, and records.tar.gz from sync):
#   timing    lab/benchmarks/device/verify_timing.py: CLI verify -n 7 of rmsnorm on a fresh machine, then warm,
#             then in-process with its tool-side profile (run it first: "cold" means the first torch import)
#   sync      lab/benchmarks/device/h200_sync.sh: sync --from-scratch of the GPU targets, twice while $HK_SYNC_BUDGET_S
#             (default 400) allows (records.tar.gz)
#   margins   lab/benchmarks/correctness_margins.py --device cuda
#   aa        lab/benchmarks/device/contract_v2.py steps 5,6: adversarial GPU suite, scale-aware cases, A/A verifies
#             and fresh int4 verifies
#   suites    lab/benchmarks/device/suites.sh (KernelBench level 1 import and verifies; needs kb/ carried)
#   profile   lab/benchmarks/device/capture_profile_diff.sh (ncu captures for `hotkernel profile diff`)
#   target_diff  lab/benchmarks/device/capture_target_diff.sh on $HK_DIFF_TARGET (default int4_gemv), kernels
#             $HK_DIFF_REGEX (default 'int4|tinygemm')
#   stalls    lab/benchmarks/device/ncu_stalls.sh with the caches flushed: $HK_STALLS_TARGET (default int4_gemv),
#             kernels $HK_STALLS_REGEX (default 'int4_gemv|tinygemm'), variants $HK_STALLS_VARIANTS
#   read_floor  lab/benchmarks/device/int4_read_floor.py (the int4 weight stream read alone, at the kept grid)
#   speedrun  check_variants.py triage of $HK_TRIAGE_ONLY on $HK_SPEEDRUN_TARGETS (default: int4_gemv
#             decode_attention), then lab/benchmarks/device/speedrun.py on them (HK_MAX_TRIES, HK_BUDGET_S); its
#             records: speedrun_records.tar.gz
#   competitors  lab/benchmarks/device/competitors_check.py, modes $HK_COMPETITOR_MODES, $HK_COMPETITOR_BUDGET_S
#   first_launch  lab/benchmarks/device/triton_first_launch.py (a Triton candidate's first call in a fresh process)
#   compile_more  suites.sh --kinds compile at --scale 0.125 on $HK_COMPILE_PROBLEMS ($HK_COMPILE_BUDGET_S)
#   warm      lab/benchmarks/device/verify_warm.sh: CLI verify -n 7 of $HK_WARM_TARGET (default rmsnorm), three times
#   gpumode   lab/benchmarks/device/gpumode_check.py: lab/gpumode's GPU MODE-format tasks imported, A/A verified,
#             and the destination-passing submissions (correct, untouched, bf16) verified ($HK_GPUMODE_BUDGET_S)
#   level3    suites.sh on KernelBench level 3 (kb/level3 carried): import and fit at its own shapes, A/A verifies
#             of up to $HK_L3_COUNT problems ($HK_L3_BUDGET_S), then compile verifies of $HK_L3_COMPILE problems
#   own_shape suites.sh A/A verifies at KernelBench's own shapes of $HK_OWN_PROBLEMS ($HK_OWN_BUDGET_S, one
#             verify at most $HK_OWN_VERIFY_S)
# Usage (device, repo root; carry .whl and, for suites/aa, kb):
#   HOTKERNEL_GIT_COMMIT=<commit> bash lab/benchmarks/device/h200_round.sh OUT timing,sync,margins
set -u
OUT=${1:?usage: h200_round.sh OUT STEPS}; STEPS=${2:?steps, e.g. timing,sync,margins}
. lab/benchmarks/device/env.sh
export HK_KB_DIR=$PWD/kb
WORK=$(mktemp -d /tmp/hk_round_XXXX)
SPEEDRUN_TARGETS=${HK_SPEEDRUN_TARGETS:-int4_gemv decode_attention}
mkdir -p "$OUT"
gpu_csv "$OUT/gpu.csv"
step() {  # step NAME COMMAND...: runs it, logs its wall time and exit code
  local name=$1; shift; local t0=$SECONDS
  "$@" > "$WORK/$name/stdout.txt" 2> "$WORK/$name/stderr.txt"
  echo "$name rc=$? wall_s=$((SECONDS - t0)) at=$(date -u +%FT%TZ)" | tee -a "$OUT/steps.txt"
  tar czf "$OUT/round.tar.gz" -C "$WORK" .  # after every step: a call cut short still brings back what ran
}
for s in ${STEPS//,/ }; do
  mkdir -p "$WORK/$s"
  case $s in
    timing) step timing python3 lab/benchmarks/device/verify_timing.py "$WORK/timing" ;;
    sync) step sync bash lab/benchmarks/device/h200_sync.sh "$WORK/sync" "${HK_SYNC_BUDGET_S:-400}" ;;
    margins) step margins python3 lab/benchmarks/correctness_margins.py --device cuda \
               --out "$WORK/margins/correctness_margins_h200.json" ;;
    aa) step aa python3 lab/benchmarks/device/contract_v2.py "$WORK/aa" --steps 5,6 --budget-s 270 ;;
    suites) step suites bash lab/benchmarks/device/suites.sh "$WORK/suites" ;;
    profile) step profile bash lab/benchmarks/device/capture_profile_diff.sh "$WORK/profile" ;;
    target_diff) step target_diff bash lab/benchmarks/device/capture_target_diff.sh "$WORK/target_diff" \
                   "${HK_DIFF_TARGET:-int4_gemv}" "${HK_DIFF_REGEX:-int4|tinygemm}" ;;
    stalls) HK_CACHE_CONTROL=all step stalls bash lab/benchmarks/device/ncu_stalls.sh "$WORK/stalls" \
              "${HK_STALLS_TARGET:-int4_gemv}" "${HK_STALLS_REGEX:-int4_gemv|tinygemm}" $HK_STALLS_VARIANTS ;;
    read_floor) step read_floor timeout 300 python3 lab/benchmarks/device/int4_read_floor.py \
                  "$WORK/read_floor/read_floor.jsonl" ;;
    speedrun) mkdir -p "$WORK/triage"
              step triage timeout 200 python3 lab/speedrun/check_variants.py --device cuda --shapes headline --time \
                --targets $SPEEDRUN_TARGETS --only $HK_TRIAGE_ONLY
              cp "$WORK/triage/stdout.txt" "$WORK/speedrun/triage.jsonl"
              GIT_DIR=/nonexistent-hotkernel-git-dir step speedrun timeout 420 python3 lab/benchmarks/device/speedrun.py "$WORK/speedrun/triage.jsonl" \
                "$WORK/speedrun/log" $SPEEDRUN_TARGETS
              tar czf "$OUT/speedrun_records.tar.gz" results hotkernel.lock LEADERBOARD.md README.md targets \
                roofline_*.svg ;;
    competitors) step competitors python3 lab/benchmarks/device/competitors_check.py "$WORK/competitors" \
                   "${HK_COMPETITOR_BUDGET_S:-150}" "${HK_COMPETITOR_MODES:-compile-reduce-overhead}" ;;
    first_launch) step first_launch python3 lab/benchmarks/device/triton_first_launch.py "$WORK/first_launch" ;;
    compile_more) SUITES_BUDGET_S=${HK_COMPILE_BUDGET_S:-240} step compile_more bash lab/benchmarks/device/suites.sh \
                    "$WORK/compile_more" --kinds compile --scale 0.125 --no-fit --problems "$HK_COMPILE_PROBLEMS" ;;
    own_shape) SUITES_BUDGET_S=${HK_OWN_BUDGET_S:-240} step own_shape bash lab/benchmarks/device/suites.sh \
                 "$WORK/own_shape" --kinds aa --scale 1 --no-fit --count 100 --problems "$HK_OWN_PROBLEMS" \
                 --verify-timeout-s "${HK_OWN_VERIFY_S:-90}" ;;
    warm) step warm bash lab/benchmarks/device/verify_warm.sh "$WORK/warm" "${HK_WARM_TARGET:-rmsnorm}" ;;
    gpumode) step gpumode python3 lab/benchmarks/device/gpumode_check.py "$WORK/gpumode" \
               --budget-s "${HK_GPUMODE_BUDGET_S:-200}" ;;
    level3) HK_KB_DIR=$PWD/kb/level3 SUITES_BUDGET_S=${HK_L3_BUDGET_S:-300} step level3 bash \
              lab/benchmarks/device/suites.sh "$WORK/level3" --kinds aa --scale 1 --count "${HK_L3_COUNT:-50}" \
              --verify-timeout-s 90
            [ -n "${HK_L3_COMPILE:-}" ] && HK_KB_DIR=$PWD/kb/level3 SUITES_BUDGET_S=${HK_L3_COMPILE_BUDGET_S:-200} \
              step level3_compile bash lab/benchmarks/device/suites.sh "$WORK/level3_compile" --kinds compile \
              --scale 1 --no-fit --problems "$HK_L3_COMPILE" --verify-timeout-s 120 ;;
    *) echo "unknown step $s" | tee -a "$OUT/steps.txt" ;;
  esac
done
# At most 8 files come back: the records tarball apart, everything else in one bundle.
[ -f "$WORK/sync/records.tar.gz" ] && mv "$WORK/sync/records.tar.gz" "$OUT/records.tar.gz"
tar czf "$OUT/round.tar.gz" -C "$WORK" .
cat "$OUT/steps.txt"; tail -3 "$WORK"/*/stderr.txt 2>/dev/null | tail -30
