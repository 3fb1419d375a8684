"""Margins of the scale-aware correctness checks: honest kernels vs wrong outputs, per dtype, on any device.

For softmax and rmsnorm 4096x8192, gemv 8192x8192 and decode attention (32 query heads over 8 KV heads of
a 32K cache), each in bf16, fp16, fp32 (and fp8 inputs for rmsnorm/gemv/softmax), it computes the judge's
reference (the op on inputs upcast to fp32, fp64 for fp32), then for every case the statistics of
hotkernel/contract/correctness.py (rel_l2, corr) against their bounds, and which checks pass. Honest cases:
torch's own op in the dtype, an fp32-accumulating manual version cast to the dtype, torch.compile of it, an
all-low-precision manual version (informative). Wrong cases: zeros, a constant, the op on another input set,
the op on inputs rounded through a narrower format (fp8 e4m3; also bf16 for fp16, bf16 and TF32 for fp32; on
CUDA, informative, fp32 with TF32 allowed). Margin = bound / value for honest cases and value / bound for wrong
ones (in 1 - corr for the correlation): above 1 means on the right side.

    python lab/benchmarks/correctness_margins.py --device cpu  --out lab/benchmarks/evidence/correctness_margins_cpu.json
    python lab/benchmarks/correctness_margins.py --device cuda --out lab/benchmarks/evidence/correctness_margins_h200.json

Needs only torch (the checks are loaded from their file). Exit status 1 when a case lands on the wrong side.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("correctness", ROOT / "hotkernel" / "contract" / "correctness.py")
correctness = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(correctness)

DTYPES = {
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
    "fp32": torch.float32,
    "fp8_e4m3": torch.float8_e4m3fn,
    "fp8_e5m2": torch.float8_e5m2,
}
EPS = 1e-6


def round_tf32(t: torch.Tensor) -> torch.Tensor:
    """fp32 values rounded to TF32's 10 mantissa bits (round half up on the magnitude)."""
    bits = t.float().contiguous().view(torch.int32)
    return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)


def through(fmt: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """A function rounding a tensor through ``fmt`` and back to fp32."""
    if fmt == "tf32":
        return round_tf32
    return lambda t: t.to(DTYPES[fmt]).float()


def softmax_acc(x: torch.Tensor, acc: torch.dtype) -> torch.Tensor:
    xf = x.to(acc)
    e = (xf - xf.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


def rmsnorm_acc(x: torch.Tensor, w: torch.Tensor, acc: torch.dtype) -> torch.Tensor:
    xf = x.to(acc)
    return xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS) * w.to(acc)


def gemv_acc(w: torch.Tensor, x: torch.Tensor, acc: torch.dtype) -> torch.Tensor:
    return w.to(acc) @ x.to(acc)


def attention_acc(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, acc: torch.dtype) -> torch.Tensor:
    groups = q.shape[1] // k.shape[1]
    kf = k.to(acc).repeat_interleave(groups, dim=1)
    vf = v.to(acc).repeat_interleave(groups, dim=1)
    scores = (q.to(acc) @ kf.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, -1) @ vf


# op -> (input shapes, torch's own op on inputs of the target dtype, the same op with a chosen accumulator)
def ops(
    rows: int, cols: int, seq: int
) -> dict[str, tuple[list[tuple[int, ...]], Callable[..., Any], Callable[..., Any]]]:
    return {
        "softmax": ([(rows, cols)], lambda x: torch.softmax(x, -1), softmax_acc),
        "rmsnorm": ([(rows, cols), (cols,)], lambda x, w: F.rms_norm(x, (x.shape[-1],), w, EPS), rmsnorm_acc),
        "gemv": ([(cols, cols), (cols,)], torch.mv, gemv_acc),
        "attention": (
            [(1, 32, 1, 128), (1, 8, seq, 128), (1, 8, seq, 128)],
            lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
            attention_acc,
        ),
    }


def make_inputs(shapes: list[tuple[int, ...]], dtype: torch.dtype, seed: int, device: str) -> list[torch.Tensor]:
    """Standard-normal fp32 data cast to the target dtype, as the contract draws it."""
    generator = torch.Generator(device=device).manual_seed(seed)
    return [torch.randn(s, generator=generator, device=device, dtype=torch.float32).to(dtype) for s in shapes]


def cases(
    name: str,
    dtype_name: str,
    inputs: list[torch.Tensor],
    fresh: list[torch.Tensor],
    ref: torch.Tensor,
    native: Callable[..., Any],
    acc_op: Callable[..., Any],
    compile_ok: bool,
) -> list[tuple[str, str, Callable[[], torch.Tensor]]]:
    """(case, expectation, make output) for one op and dtype; expectation 'correct', 'incorrect' or 'informative'."""
    dtype = DTYPES[dtype_name]
    fp8 = dtype_name.startswith("fp8")
    out_dtype = torch.bfloat16 if fp8 else dtype  # an fp8 kernel's output is usually bf16
    low = [t.to(torch.bfloat16) for t in inputs] if fp8 else inputs
    found: list[tuple[str, str, Callable[[], torch.Tensor]]] = [
        ("torch_op", "correct", lambda: native(*low).to(out_dtype)),
        ("fp32_accumulate", "correct", lambda: acc_op(*inputs, torch.float32).to(out_dtype)),
    ]
    if name == "gemv":
        found.append(("x_at_w", "correct", lambda: (low[1].unsqueeze(0) @ low[0].t()).squeeze(0).to(out_dtype)))
    if dtype_name != "fp32":
        found.append(("all_low_precision", "informative", lambda: acc_op(*low, low[0].dtype).to(out_dtype)))
    if fp8 and name != "softmax":  # fp8 softmax outputs (~1e-4) are mostly under e4m3's smallest subnormal
        found.append(("fp8_output", "correct", lambda: acc_op(*inputs, torch.float32).to(dtype)))
    if compile_ok:
        torch._dynamo.reset()  # a fresh compile per op and dtype (the lambda's code object is shared)
        compiled = torch.compile(lambda *xs: acc_op(*xs, torch.float32).to(out_dtype), dynamic=False)
        found.append(("torch_compile", "correct", lambda: compiled(*inputs)))
    constant = 1.0 / ref.shape[-1] if name == "softmax" else float(ref.double().mean())
    found += [
        ("zeros", "incorrect", lambda: torch.zeros(ref.shape, dtype=out_dtype, device=ref.device)),
        ("constant", "incorrect", lambda: torch.full(ref.shape, constant, dtype=out_dtype, device=ref.device)),
        ("other_inputs", "incorrect", lambda: native(*[t.to(low[0].dtype) for t in fresh]).to(out_dtype)),
    ]
    rounding = {"bf16": ["fp8_e4m3"], "fp16": ["fp8_e4m3", "bf16"], "fp32": ["fp8_e4m3", "bf16", "tf32"]}
    for fmt in rounding.get(dtype_name, ["fp8_e5m2"] if dtype_name == "fp8_e4m3" else []):
        expect = "informative" if fp8 else "incorrect"
        found.append(
            (
                f"inputs_through_{fmt}",
                expect,
                lambda fmt=fmt: acc_op(*[through(fmt)(t) for t in inputs], torch.float32).to(out_dtype),
            )
        )
    if dtype_name == "fp32" and inputs[0].is_cuda and name in ("gemv", "attention"):
        found.append(("tf32_enabled", "informative", lambda: with_tf32(lambda: native(*inputs))))
    return found


def with_tf32(make: Callable[[], torch.Tensor]) -> torch.Tensor:
    """``make()`` with TF32 allowed in cuBLAS and cuDNN (whether a kernel uses it is the library's choice)."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        return make()
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def margins(stats: dict[str, float], tol: dict[str, float], honest: bool) -> dict[str, float | None]:
    """Bound / value for honest outputs, value / bound for wrong ones (in 1 - corr for the correlation)."""
    rel_bound = correctness.correctness_norm_bound(stats, tol["rel_l2_max"])
    corr_bound = correctness.correctness_corr_bound(stats, tol["min_corr"])
    rel, corr = stats["rel_l2"], stats["corr"]
    gap, gap_bound = (1.0 - corr if math.isfinite(corr) else 1.0), 1.0 - corr_bound

    def ratio(a: float, b: float) -> float | None:
        return None if not (math.isfinite(a) and math.isfinite(b)) else (math.inf if b == 0 else a / b)

    return {
        "rel_l2_bound": rel_bound,
        "corr_bound": corr_bound,
        "rel_l2_margin": ratio(rel_bound, rel) if honest else ratio(rel, rel_bound),
        "corr_margin": ratio(gap_bound, gap) if honest else ratio(gap, gap_bound),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    device = args.device
    table = ops(args.rows, args.cols, args.seq)
    results: list[dict[str, Any]] = []
    wrong_side: list[str] = []
    for dtype_name in args.dtypes.split(","):
        tol = correctness.tolerances(dtype_name, {})
        wide = torch.float64 if dtype_name == "fp32" else torch.float32
        for name in args.ops.split(","):
            shapes, native, acc_op = table[name]
            if dtype_name.startswith("fp8") and name == "attention":
                continue
            inputs = make_inputs(shapes, DTYPES[dtype_name], 1234, device)
            fresh = make_inputs(shapes, DTYPES[dtype_name], 4321, device)
            with torch.no_grad():
                ref = native(*[t.to(wide) for t in inputs])  # what the judge computes
                found = cases(name, dtype_name, inputs, fresh, ref, native, acc_op, not args.no_compile)
                for case, expect, make in found:
                    started = time.perf_counter()
                    out = make()
                    made_s = time.perf_counter() - started
                    if device == "cuda":
                        torch.cuda.synchronize()
                        torch.cuda.reset_peak_memory_stats()
                        base = torch.cuda.memory_allocated()
                    started = time.perf_counter()
                    checks = correctness.check_outputs(torch, [out], [ref], tol)
                    if device == "cuda":
                        torch.cuda.synchronize()
                    check_s = time.perf_counter() - started
                    peak = torch.cuda.max_memory_allocated() - base if device == "cuda" else None
                    stats = correctness.correctness_statistics(torch, out, ref, tol["atol"], tol["rtol"])
                    verdict = "correct" if all(c["ok"] for c in checks) else "incorrect"
                    row = {
                        "op": name,
                        "dtype": dtype_name,
                        "out_dtype": str(out.dtype).replace("torch.", ""),
                        "case": case,
                        "expect": expect,
                        "verdict": verdict,
                        "checks": {c["name"]: c["ok"] for c in checks},
                        "rel_l2": stats["rel_l2"],
                        "corr": stats["corr"],
                        "max_abs_error": stats["max_abs_error"],
                        "rel_l2_rounded": stats["rel_l2_rounded"],
                        **margins(stats, tol, expect != "incorrect"),
                        "numel": out.numel(),
                        "make_s": round(made_s, 3),
                        "check_s": round(check_s, 3),
                        "check_peak_extra_bytes": peak,
                    }
                    results.append(row)
                    if expect != "informative" and verdict != expect:
                        wrong_side.append(f"{name} {dtype_name} {case}: {verdict}, expected {expect}")
                    print(
                        json.dumps(
                            {
                                k: row[k]
                                for k in (
                                    "op",
                                    "dtype",
                                    "case",
                                    "verdict",
                                    "rel_l2",
                                    "corr",
                                    "rel_l2_margin",
                                    "corr_margin",
                                    "check_s",
                                )
                            }
                        ),
                        flush=True,
                    )
                    del out
    return {
        "device": torch.cuda.get_device_name() if device == "cuda" else platform.processor() or platform.machine(),
        "device_kind": device,
        "torch": torch.__version__,
        "shapes": {"rows": args.rows, "cols": args.cols, "seq": args.seq},
        "chunk_elements": correctness.CORRECTNESS_CHUNK_ELEMENTS,
        "bounds": {d: correctness.tolerances(d, {}) for d in args.dtypes.split(",")},
        "rounding_factor": correctness.CORRECTNESS_ROUNDING_FACTOR,
        "wrong_side": wrong_side,
        "summary": summarize(results),
        "cases": results,
    }


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per dtype: the honest case nearest each bound and the wrong case nearest it, with their margins."""
    summary: dict[str, Any] = {}
    for dtype in dict.fromkeys(row["dtype"] for row in results):
        rows = [row for row in results if row["dtype"] == dtype]
        entry: dict[str, Any] = {}
        for group, expect in (("honest", "correct"), ("sloppy", "informative"), ("wrong", "incorrect")):
            chosen = [row for row in rows if row["expect"] == expect and row["rel_l2_margin"] is not None]
            if expect == "informative":
                chosen = [row for row in chosen if row["case"] == "all_low_precision"]
            for stat in ("rel_l2", "corr"):
                usable = [row for row in chosen if row[f"{stat}_margin"] is not None]
                if group == "wrong" and stat == "corr":  # rounded inputs are the norm check's to catch
                    usable = [row for row in usable if not row["case"].startswith("inputs_through")]
                if usable:
                    row = min(usable, key=lambda r, s=stat: r[f"{s}_margin"])
                    entry[f"{group}_{stat}"] = {
                        "case": f"{row['op']} {row['case']}",
                        "value": row[stat],
                        "bound": row[f"{stat}_bound"],
                        "margin": row[f"{stat}_margin"],
                    }
        summary[dtype] = entry
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--rows", type=int, default=4096, help="softmax/rmsnorm rows (default 4096)")
    parser.add_argument("--cols", type=int, default=8192, help="softmax/rmsnorm columns, gemv N = K (default 8192)")
    parser.add_argument("--seq", type=int, default=32768, help="attention KV length (default 32768)")
    parser.add_argument("--dtypes", default="bf16,fp16,fp32,fp8_e4m3,fp8_e5m2")
    parser.add_argument("--ops", default="softmax,rmsnorm,gemv,attention")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile cases")
    parser.add_argument("--out", type=Path, required=True, help="the JSON file to write")
    args = parser.parse_args()
    started = time.perf_counter()
    report = run(args)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    for line in report["wrong_side"]:
        print("WRONG SIDE:", line)
    raise SystemExit(1 if report["wrong_side"] else 0)


if __name__ == "__main__":
    main()
