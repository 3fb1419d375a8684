#!/bin/bash
# Run hotkernel's insight tools end to end on the lent H200; keep every output for docs/platform-matrix.md and
# tests/fixtures/h200/insight/ (a small real .ncu-rep, a chrome trace, the tools' JSON results).
#
# Usage (device, repo root; the carried wheels give pydantic & co, see ../shared/device/carry-wheels.sh):
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD
#   bash lab/benchmarks/device/capture_fixtures.sh "$OUT"
# Writes $OUT/insight_h200.tar.gz (everything) and $OUT/insight_log.txt (each command, exit code, wall time).
set -u
ROOT=${1:?usage: capture_fixtures.sh OUT_DIR}
DIR=/tmp/hk_insight/insight
WS=/tmp/hk_insight_ws
LOG=$ROOT/insight_log.txt
rm -rf /tmp/hk_insight "$WS" && mkdir -p "$DIR" "$WS" "$ROOT" && : > "$LOG"
touch "$WS/hotkernel.yaml"
export HOTKERNEL_WORKSPACE=$WS HOTKERNEL_PYTHON=python3 TRITON_CACHE_DIR=/tmp/hk_insight_triton
rm -rf "$TRITON_CACHE_DIR"

cat > "$DIR/workload.py" <<'PY'
import torch, triton, triton.language as tl, torch.nn.functional as F

@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + offs, (x * rstd * w).to(tl.bfloat16), mask=mask)

def rmsnorm(x, w, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=8)
    return y

x = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16)
w = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
W = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
v = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    rmsnorm(x, w); F.rms_norm(x, (8192,), w, 1e-6); torch.softmax(x, -1); torch.mv(W, v)
torch.cuda.synchronize()
PY

hk() {  # hk NAME TIMEOUT ARGS...: run `hotkernel ARGS`, save NAME.out / NAME.err, log it
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout "$limit" python3 -m hotkernel "$@" > "$DIR/$name.out" 2> "$DIR/$name.err"
  local rc=$?
  printf '$ hotkernel %s\n# rc=%s wall=%ss\n' "$*" "$rc" "$((SECONDS - t0))" >> "$LOG"
}

hk gpu 60 gpu --json
hk calibrate 300 calibrate --json
hk roofline_copy 60 roofline --flops 0 --bytes 134217728 --json
hk roofline_gemm 60 roofline --flops 1.1e12 --bytes 4.0e8 --dtype bf16 --json
hk trace 300 trace "$DIR/workload.py" --out "$DIR/trace" --json
hk profile_ncu 300 profile --tool ncu -k rmsnorm -c 2 --cache-control none --out "$DIR/ncu" --json -- python3 "$DIR/workload.py"
hk top_ncu_rep 120 top "$DIR/ncu/report.ncu-rep" --json
hk top_chrome 60 top "$DIR/trace/trace.json" -n 5 --json
hk disasm 120 disasm triton-cache -k rmsnorm_kernel --max-lines 40 --json
hk profile_ncu_timeout 120 profile --tool ncu --timeout 5 --out "$DIR/ncu_timeout" --json -- python3 "$DIR/workload.py"
hk profile_nsys 300 profile --tool nsys --timeout 280 --out "$DIR/nsys" --json -- python3 -c "import torch; x = torch.ones(10, device='cuda'); torch.cuda.synchronize()"
ls -la "$DIR"/* >> "$LOG" 2>&1
du -sh "$DIR"/* >> "$LOG" 2>&1
tar -C /tmp/hk_insight -czf "$ROOT/insight_h200.tar.gz" insight
