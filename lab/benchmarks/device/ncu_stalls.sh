#!/bin/bash
# Where the warps of a speedrun variant wait, on the lent H200: `hotkernel profile --set full` of the target's
# baseline and each variant (lab/benchmarks/device/profile_pair.py builds the headline inputs), then the per-kernel
# stall breakdown (ncu's raw `smsp__average_warps_issue_stalled_*_per_issue_active` counters: warps stalled per
# issued instruction, by reason), the details page, and the source page: every SASS instruction with its sampled
# stall reasons (`source.csv`), as text.
#
# HK_CACHE_CONTROL=all flushes the caches before each replay pass, so the weights come from DRAM as they do in a
# timed call; the default, none, leaves them in L2 across the passes (durations L2-warm, see the evidence README).
#
# Usage (device, repo root, carrying .whl; after h200_round.sh's pip step, or alone):
#   bash lab/benchmarks/device/ncu_stalls.sh OUT_DIR TARGET KERNEL_REGEX VARIANT...
# Writes OUT_DIR/<variant>/{profile.json,details.txt,stalls.csv,source.csv} and OUT_DIR/log.txt; about 30 s a variant.
set -u
OUT=${1:?usage: ncu_stalls.sh OUT_DIR TARGET KERNEL_REGEX VARIANT...}; TARGET=${2:?target}; REGEX=${3:?kernel regex}
shift 3
. lab/benchmarks/device/env.sh
NCU=${NCU:-$(command -v ncu)}
mkdir -p "$OUT" && : > "$OUT/log.txt"
for variant in "$@"; do
  dir=$OUT/$variant && rm -rf "$dir" /tmp/hk_stalls && mkdir -p "$dir"
  t0=$SECONDS
  # two launches of each kernel after one warm-up call each (profile_pair.py calls baseline and variant 3 times)
  python3 -m hotkernel profile --set full --cache-control "${HK_CACHE_CONTROL:-none}" -k "$REGEX" -c 6 --out /tmp/hk_stalls --json \
    -- python3 lab/benchmarks/device/profile_pair.py "$TARGET" "$variant" > "$dir/profile.json" 2> "$dir/profile.err"
  rc=$?
  "$NCU" --import /tmp/hk_stalls/report.ncu-rep --page details --print-units base > "$dir/details.txt" 2>&1
  "$NCU" --import /tmp/hk_stalls/report.ncu-rep --page raw --csv --print-units base \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active \
    > "$dir/stalls.csv" 2>&1
  "$NCU" --import /tmp/hk_stalls/report.ncu-rep --page source --csv --print-source sass > "$dir/source.csv" 2>&1
  echo "$variant rc=$rc wall_s=$((SECONDS - t0))" >> "$OUT/log.txt"
done
cat "$OUT/log.txt"
