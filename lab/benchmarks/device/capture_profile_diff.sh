#!/bin/bash
# Capture what `hotkernel profile diff` reads, on the lent H200, for tests/fixtures/h200/profile_diff/.
#
# Two variants of one Triton rmsnorm kernel (8 warps per row, and 1 warp per row: 256 fp32 values per thread, so
# registers, occupancy and local-memory spills move), profiled by ncu with the basic set plus the counters diff adds
# (instructions executed, local-memory bytes); then `hotkernel profile diff` end to end: two commands, the two
# .ncu-rep files it wrote (read through NVIDIA's ncu_report there), and the rmsnorm target's baseline against its
# candidate. Every command's stdout/stderr is kept verbatim; the log lists command, exit code and wall time.
#
# Usage (device, repo root), carrying [".whl"]: the wheels the device lacks (pydantic, pydantic-core,
# annotated-types, typing-inspection, typing-extensions, ruamel.yaml, filelock; ../shared/device/carry-wheels.sh):
#   bash lab/benchmarks/device/capture_profile_diff.sh "$OUT"
# Writes $OUT/profile_diff/ (CSV pages, JSON results, the .ncu-rep files under 2 MB, log.txt); about 2 minutes.
set -u
OUT_ROOT=${1:?usage: capture_profile_diff.sh OUT_DIR}
. lab/benchmarks/device/env.sh
DIR=$OUT_ROOT/profile_diff
WORK=/tmp/hk_profile_diff
NCU=${NCU:-/usr/local/cuda/bin/ncu}
LOG=$DIR/log.txt
EXTRA=$(python3 -c "from hotkernel.insight.profile_diff import EXTRA_METRICS as m; print(','.join(m))") || exit 1
rm -rf "$WORK" "$DIR" && mkdir -p "$WORK" "$DIR" && : > "$LOG"
export HOTKERNEL_PYTHON=python3 TRITON_CACHE_DIR=$WORK/triton_cache

cat > "$WORK/rmsnorm_variants.py" <<'PY'
"""One Triton rmsnorm kernel, two launch shapes: `wide` (8 warps per row) and `narrow` (1 warp per row)."""
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + offs, (x * rstd * w).to(tl.bfloat16), mask=mask)


warps = {"wide": 8, "narrow": 1}[sys.argv[1]]
x = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16)
w = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
y = torch.empty_like(x)
for _ in range(3):
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.shape[1], 1e-6, BLOCK=8192, num_warps=warps)
torch.cuda.synchronize()
PY

# shellcheck source=lab/benchmarks/device/capture_step.sh
. "$(dirname "$0")/capture_step.sh"

step versions 30 bash -c "$NCU --version; python3 -c 'import torch, triton; print(torch.__version__, triton.__version__)'; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader"
# 1. the ncu pages diff parses, live: details (display names + the extra counters by raw name) per variant
for v in wide narrow; do
  step "details_$v" 60 "$NCU" --clock-control none --set basic --metrics "$EXTRA" -k regex:rmsnorm -c 2 \
    --csv --page details python3 "$WORK/rmsnorm_variants.py" "$v"
done
# 2. diff profiles two commands (report per side, through hotkernel's profile machinery)
step diff_commands 120 python3 -m hotkernel profile diff --command "python3 $WORK/rmsnorm_variants.py wide" \
  --command "python3 $WORK/rmsnorm_variants.py narrow" -k rmsnorm -c 2 --timeout 50 --out "$WORK/cmd" --json
for side in a b; do
  rep=$WORK/cmd/$side/report.ncu-rep
  step "rep_${side}_raw" 60 "$NCU" --import "$rep" --csv --page raw
  step "rep_${side}_details" 60 "$NCU" --import "$rep" --csv --page details
  [ -f "$rep" ] && [ "$(stat -c %s "$rep")" -lt 2000000 ] && cp "$rep" "$DIR/rep_$side.ncu-rep"
done
# 3. the same two reports diffed as files (NVIDIA's ncu_report module reads them here), as a table and as JSON
step diff_reports 60 python3 -m hotkernel profile diff "$WORK/cmd/a/report.ncu-rep" "$WORK/cmd/b/report.ncu-rep"
step diff_reports_json 60 python3 -m hotkernel profile diff "$WORK/cmd/a/report.ncu-rep" \
  "$WORK/cmd/b/report.ncu-rep" --json
# 4. the rmsnorm target of this repository: baseline (F.rms_norm) against candidate (Triton), 3 launches each
step diff_target 100 python3 -m hotkernel profile diff --target rmsnorm -k norm -c 3 --timeout 45 \
  --out "$WORK/target" --json
for side in a b; do
  [ -f "$WORK/target/$side/report.ncu-rep" ] && step "target_${side}_raw" 60 "$NCU" --import \
    "$WORK/target/$side/report.ncu-rep" --csv --page raw
done
for side in a b; do
  cp "$WORK/target/$side/ncu.stdout" "$DIR/target_${side}_ncu.stdout" 2>/dev/null
  cp "$WORK/target/$side/ncu.stderr" "$DIR/target_${side}_ncu.stderr" 2>/dev/null
done
ls -la "$WORK"/cmd/* "$WORK"/target/* >> "$LOG" 2>&1
