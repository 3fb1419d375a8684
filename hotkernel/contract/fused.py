"""One-pass error sums on a CUDA device: the judge's statistics of an output against its reference, read once.

``correctness_statistics`` needs nine sums over every element (matches, squared error, squared reference, the
reference's rounding error, and the shifted first and second moments of output and reference) and the largest
error. Its torch loop builds them from about twenty elementwise kernels per chunk, some 300 bytes of memory
traffic per element in fp64; this Triton kernel reads the output and the reference once (6 to 16 bytes per
element) and accumulates the same sums in fp64, each program over a strided range, then torch adds the programs'
partial sums. Same definitions, another summation order (fp64: the sums agree to about 1e-12 relative).

Used where the output is on a CUDA device and Triton imports (every CUDA build of torch ships it); elsewhere, and
for integer or boolean outputs, the torch loop runs. Stdlib only at top level: triton is imported on first use.
"""

from __future__ import annotations

import math
from typing import Any

FUSED_BLOCK = 512  # elements per program per step (fp64 accumulators: 10 per element of the block)
FUSED_PROGRAMS = 1024  # at most this many programs per launch; each strides over its share of the elements
FUSED_LAUNCH_ELEMENTS = 1 << 30  # elements per launch, so that offsets stay int32
FUSED_SUMS = ("matches", "d2", "r2", "q2", "so", "sr", "oo", "rr", "or")
_FUSED_KERNEL: dict[str, Any] = {}


def fused_kernel() -> Any | None:
    """The compiled-on-first-call Triton kernel, or None where Triton cannot be imported."""
    if "sums" in _FUSED_KERNEL:
        return _FUSED_KERNEL["sums"]
    try:
        import triton
        import triton.language as tl
    except ImportError:
        _FUSED_KERNEL["sums"] = None
        return None

    @triton.jit
    def error_sums(o_ptr, r_ptr, params_ptr, part_ptr, n, BLOCK: tl.constexpr, ROUND: tl.constexpr):  # noqa: ANN001, ANN202
        pid = tl.program_id(0)
        atol = tl.load(params_ptr)
        rtol = tl.load(params_ptr + 1)
        shift_o = tl.load(params_ptr + 2)
        shift_r = tl.load(params_ptr + 3)
        zero = tl.zeros([BLOCK], dtype=tl.float64)
        matches, d2, r2, q2, so, sr, oo, rr, orr, worst = zero, zero, zero, zero, zero, zero, zero, zero, zero, zero
        for start in range(pid * BLOCK, n, tl.num_programs(0) * BLOCK):
            offs = start + tl.arange(0, BLOCK)
            mask = offs < n
            o_raw = tl.load(o_ptr + offs, mask=mask, other=0)
            r = tl.load(r_ptr + offs, mask=mask, other=0).to(tl.float64)
            o = o_raw.to(tl.float64)
            # the reference rounded to the output's dtype, minus itself; through fp32 as torch's conversions go
            if ROUND == 16:  # bf16: round to nearest even on the fp32 bits (no cast: it is exact everywhere)
                bits = r.to(tl.float32).to(tl.uint32, bitcast=True)
                bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
                q = bits.to(tl.float32, bitcast=True).to(tl.float64) - r
            elif ROUND == 32:
                q = r.to(tl.float32).to(tl.float64) - r
            elif ROUND == 64:
                q = r - r
            else:
                q = r.to(tl.float32).to(o_raw.dtype).to(tl.float64) - r
            d = o - r
            error = tl.abs(d)
            worst = tl.maximum(worst, error)  # NaN: found from d2 on the host
            matches += ((error <= tl.abs(r) * rtol + atol) & mask).to(tl.float64)  # NaN never matches
            d2 += d * d
            r2 += r * r
            q2 += q * q
            oc = tl.where(mask, o - shift_o, 0.0)
            rc = tl.where(mask, r - shift_r, 0.0)
            so += oc
            sr += rc
            oo += oc * oc
            rr += rc * rc
            orr += oc * rc
        base = part_ptr + pid * 10
        tl.store(base + 0, tl.sum(matches, axis=0))
        tl.store(base + 1, tl.sum(d2, axis=0))
        tl.store(base + 2, tl.sum(r2, axis=0))
        tl.store(base + 3, tl.sum(q2, axis=0))
        tl.store(base + 4, tl.sum(so, axis=0))
        tl.store(base + 5, tl.sum(sr, axis=0))
        tl.store(base + 6, tl.sum(oo, axis=0))
        tl.store(base + 7, tl.sum(rr, axis=0))
        tl.store(base + 8, tl.sum(orr, axis=0))
        tl.store(base + 9, tl.max(worst, axis=0))

    _FUSED_KERNEL["sums"] = error_sums
    return error_sums


def fused_error_sums(
    torch: Any, out: Any, ref: Any, atol: float, rtol: float, shift_o: float, shift_r: float
) -> tuple[dict[str, float], float] | None:
    """(the nine sums of ``FUSED_SUMS``, the largest absolute error) of a floating ``out`` against ``ref`` (same
    number of elements, any layout), shifted moments about ``shift_o`` and ``shift_r``; None without Triton or
    for another output dtype than fp64, fp32, fp16 and bf16.
    The largest error is NaN when any error is (a NaN output, or inf against inf)."""
    rounding = {torch.bfloat16: 16, torch.float16: 15, torch.float32: 32, torch.float64: 64}.get(out.dtype)
    kernel = fused_kernel() if rounding is not None else None
    if kernel is None:
        return None
    device = out.device
    flat_out, flat_ref = out.reshape(-1), ref.reshape(-1)
    wide = torch.float64
    params = torch.tensor([atol, rtol, shift_o, shift_r], dtype=wide, device=device)
    totals = torch.zeros(9, dtype=wide, device=device)
    worst = torch.zeros((), dtype=wide, device=device)
    n = flat_out.numel()
    for start in range(0, n, FUSED_LAUNCH_ELEMENTS):
        size = min(FUSED_LAUNCH_ELEMENTS, n - start)
        programs = max(1, min(FUSED_PROGRAMS, -(-size // FUSED_BLOCK)))
        partial = torch.empty((programs, 10), dtype=wide, device=device)
        part_out, part_ref = flat_out[start : start + size], flat_ref[start : start + size]
        kernel[(programs,)](part_out, part_ref, params, partial, size, BLOCK=FUSED_BLOCK, ROUND=rounding)
        totals += partial[:, :9].sum(dim=0)
        worst = torch.maximum(worst, partial[:, 9].max())
    sums = dict(zip(FUSED_SUMS, (float(v) for v in totals.tolist()), strict=True))
    largest = float(worst.item()) if n else 0.0
    return sums, (math.nan if math.isnan(sums["d2"]) else largest)
