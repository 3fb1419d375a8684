#!/bin/bash
# `hotkernel profile diff --target` of one target on the lent H200, kept verbatim for tests/fixtures/h200/:
# the target's baseline against its candidate, each profiled through the contract (ncu, caches flushed), then the
# two .ncu-rep files diffed as files (read through NVIDIA's ncu_report module there, launch configuration
# included), and both reports' raw pages as CSV (the path a machine without ncu_report takes).
#
# Usage (device, repo root, carrying .whl; after h200_round.sh's pip step, or alone):
#   bash lab/benchmarks/device/capture_target_diff.sh OUT_DIR TARGET KERNEL_REGEX [LAUNCHES]
# Writes OUT_DIR/target_diff_<TARGET>/{diff_target.out,diff_reports.out,diff_reports_json.out,rep_<side>_raw.out,
# log.txt}; about a minute.
set -u
OUT_ROOT=${1:?usage: capture_target_diff.sh OUT_DIR TARGET KERNEL_REGEX [LAUNCHES]}; TARGET=${2:?target}
REGEX=${3:?kernel regex}; LAUNCHES=${4:-4}
. lab/benchmarks/device/env.sh
DIR=$OUT_ROOT/target_diff_$TARGET
WORK=/tmp/hk_target_diff_$TARGET
NCU=${NCU:-$(command -v ncu)}
LOG=$DIR/log.txt
rm -rf "$WORK" "$DIR" && mkdir -p "$WORK" "$DIR" && : > "$LOG"

# shellcheck source=lab/benchmarks/device/capture_step.sh
. "$(dirname "$0")/capture_step.sh"

step versions 30 bash -c "$NCU --version; python3 -c 'import torch, triton; print(torch.__version__, triton.__version__)'; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader"
step diff_target 200 python3 -m hotkernel profile diff --target "$TARGET" -k "$REGEX" -c "$LAUNCHES" --timeout 90 \
  --out "$WORK/target"
for side in a b; do
  rep=$WORK/target/$side/report.ncu-rep
  step "rep_${side}_raw" 60 "$NCU" --import "$rep" --csv --page raw
  cp "$WORK/target/$side/ncu.stdout" "$DIR/target_${side}_ncu.stdout" 2>/dev/null
done
step diff_reports 60 python3 -m hotkernel profile diff "$WORK/target/a/report.ncu-rep" "$WORK/target/b/report.ncu-rep"
step diff_reports_json 60 python3 -m hotkernel profile diff "$WORK/target/a/report.ncu-rep" \
  "$WORK/target/b/report.ncu-rep" --json
ls -la "$WORK"/target/* >> "$LOG" 2>&1
cat "$LOG"
