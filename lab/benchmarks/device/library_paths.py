"""H200: time every library path of the five example targets, and the contract's timer against Nsight Compute.

Usage (device, repo root):  python3 lab/benchmarks/device/library_paths.py OUT_DIR
Writes OUT_DIR/baseline_choice/<target>.json and OUT_DIR/timer_vs_ncu.json. Each path is timed with the
contract's own timer (``measure`` in templates/hk_contract.py: CUDA graph of N rotated calls over K input
sets of fresh random data totalling > 2x L2) and checked against an fp32 reference.
"""

from __future__ import annotations

import csv
import datetime as dt
import importlib.util
import io
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("hk_contract", ROOT / "templates" / "hk_contract.py")
hk = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hk)
sys.path.insert(0, str(ROOT))

L2_BYTES = torch.cuda.get_device_properties(0).L2_cache_size
CEILING_GBPS = 4020.0  # copy ceiling from ../shared/h200.md; docs/calibration.md has this run's own figure
BF16 = torch.bfloat16


def time_call(fn, arg_sets) -> dict:
    """Median per-call ms of fn over the rotated arg sets, with the contract's timer."""
    k = len(arg_sets)
    res = hk.measure(
        lambda j: fn(*arg_sets[j % k]), k, torch=torch, device_kind="cuda",
        refill=lambda i: None, on_sample_done=lambda i, outs: None, poison=lambda outs: None,
        flush=lambda: None, clock=time.perf_counter, wall=time.perf_counter,
        elapsed_ms=lambda s, e: s.elapsed_time(e),
    )
    return {"ms": res["ms"], "timer": res["timer"], "n_calls": res["n_calls"], "samples_ms": res["samples_ms"]}


def rotated(make, per_set_bytes: int) -> list:
    k = max(2, math.ceil(2 * L2_BYTES / per_set_bytes) + 1)
    return [make() for _ in range(k)]


def rel_err(out, ref) -> float:
    return float(((out.float() - ref.float()).abs().max() / ref.float().abs().max().clamp_min(1e-12)).item())


def rmsnorm_paths():
    x_shape, n = (4096, 8192), 8192
    w = torch.randn(n, device="cuda", dtype=BF16)
    sets = rotated(lambda: (torch.randn(x_shape, device="cuda", dtype=BF16), w), 4096 * 8192 * 2)

    def eager(x, w, eps=1e-6):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)

    paths = {
        "eager composite (x.float(), pow, mean, rsqrt, mul)": eager,
        "torch.nn.functional.rms_norm": lambda x, w: F.rms_norm(x, (n,), w, 1e-6),
        "torch.nn.RMSNorm module (same op)": torch.nn.RMSNorm(n, eps=1e-6, device="cuda", dtype=BF16),
    }
    mod = paths["torch.nn.RMSNorm module (same op)"]
    with torch.no_grad():
        mod.weight.copy_(w)
    paths["torch.nn.RMSNorm module (same op)"] = lambda x, w: mod(x)
    ref = lambda x, w: eager(x.double(), w.double()).double()  # noqa: E731
    moved = 2 * 4096 * 8192 * 2 + n * 2
    return "rmsnorm", paths, sets, ref, moved


def softmax_paths():
    sets = rotated(lambda: (torch.randn(4096, 8192, device="cuda", dtype=BF16),), 4096 * 8192 * 2)
    paths = {
        "torch.softmax(x, -1)": lambda x: torch.softmax(x, -1),
        "torch.nn.functional.softmax(x, -1)": lambda x: F.softmax(x, -1),
        "torch.softmax(x, -1, dtype=float32).to(bf16)": lambda x: torch.softmax(x, -1, dtype=torch.float32).to(BF16),
    }
    ref = lambda x: torch.softmax(x.double(), -1)  # noqa: E731
    return "softmax", paths, sets, ref, 2 * 4096 * 8192 * 2


def gemv_paths():
    x = torch.randn(8192, device="cuda", dtype=BF16)
    sets = rotated(lambda: (torch.randn(8192, 8192, device="cuda", dtype=BF16), x), 8192 * 8192 * 2)
    paths = {
        "torch.mv(w, x)": lambda w, x: torch.mv(w, x),
        "torch.matmul(w, x)": lambda w, x: torch.matmul(w, x),
        "F.linear(x[None], w)[0]": lambda w, x: F.linear(x[None], w)[0],
    }
    ref = lambda w, x: torch.mv(w.double(), x.double())  # noqa: E731
    return "gemv", paths, sets, ref, 8192 * 8192 * 2 + 2 * 8192 * 2


def attention_paths():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q_shape, kv_shape = (1, 32, 1, 128), (1, 8, 32768, 128)
    q = torch.randn(q_shape, device="cuda", dtype=BF16)
    sets = rotated(lambda: (q, torch.randn(kv_shape, device="cuda", dtype=BF16),
                            torch.randn(kv_shape, device="cuda", dtype=BF16)), 2 * 8 * 32768 * 128 * 2)

    def forced(backend):
        def fn(q, k, v):
            with sdpa_kernel([backend]):
                return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        return fn

    def expand(q, k, v):
        return F.scaled_dot_product_attention(q, k.repeat_interleave(4, 1), v.repeat_interleave(4, 1))

    paths = {
        "SDPA default, enable_gqa=True": lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
        "SDPA forced cuDNN": forced(SDPBackend.CUDNN_ATTENTION),
        "SDPA forced flash": forced(SDPBackend.FLASH_ATTENTION),
        "SDPA forced efficient": forced(SDPBackend.EFFICIENT_ATTENTION),
        "SDPA forced math": forced(SDPBackend.MATH),
        "SDPA default after repeat_interleave of K/V": expand,
    }

    def ref(q, k, v):
        return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), enable_gqa=True)

    return "decode_attention", paths, sets, ref, 2 * 8 * 32768 * 128 * 2 + 2 * 32 * 128 * 2


def int4_paths():
    from kernels import int4_gemv as k4  # the manifest's derive hook (quantize_weight) and reference

    def make():
        raw_x = torch.randn(1, 8192, device="cuda", dtype=BF16)
        raw_w = torch.randn(8192, 8192, device="cuda", dtype=BF16)
        return tuple(k4.quantize_weight(raw_x, raw_w, group_size=128))

    first = make()
    per_set = sum(t.numel() * t.element_size() for t in first[1:])
    sets = [first] + [make() for _ in range(max(2, math.ceil(2 * L2_BYTES / per_set) + 1) - 1)]
    eye = torch.eye(8192, device="cuda", dtype=BF16)

    def dequant_then_mv(x, w_int4, sz):
        weight = k4.int4_gemv(eye, w_int4, sz, group_size=128)  # [K, N] = dequantized weight, transposed
        return (x @ weight)

    paths = {
        "torch.ops.aten._weight_int4pack_mm (tinygemm)": lambda x, w, sz: k4.int4_gemv(x, w, sz, group_size=128),
        "dequantize (tinygemm on identity) then bf16 matmul (strawman)": dequant_then_mv,
    }

    def ref(x, w_int4, sz):
        return k4.int4_gemv(eye, w_int4, sz, group_size=128).double().t().matmul(x.double().t()).t()

    return "int4_gemv", paths, sets, ref, per_set + 8192 * 2 * 2


def choose(builder, out_dir: Path) -> dict:
    try:
        name, paths, sets, ref, moved = builder()
    except Exception as err:  # noqa: BLE001
        return {"builder": builder.__name__, "error": f"{type(err).__name__}: {err}"}
    rows = []
    for label, fn in paths.items():
        row = {"path": label}
        try:
            out = fn(*sets[0])
            torch.cuda.synchronize()
            if ref is not None:
                row["max_rel_error_vs_fp64"] = rel_err(out, ref(*sets[0]))
            row.update(time_call(fn, sets))
            row["share_of_copy_ceiling"] = moved / (row["ms"] * 1e-3) / (CEILING_GBPS * 1e9)
        except Exception as err:  # noqa: BLE001
            row["error"] = f"{type(err).__name__}: {str(err)[:300]}"
        rows.append(row)
        print(name, row.get("path"), row.get("ms"), row.get("error", ""), flush=True)
    ok = [r for r in rows if "ms" in r and r.get("max_rel_error_vs_fp64", 0) < 0.05 and "strawman" not in r["path"]]
    best = min(ok, key=lambda r: r["ms"]) if ok else None
    doc = {
        "target": name, "card": torch.cuda.get_device_name(0), "date": dt.date.today().isoformat(),
        "torch": torch.__version__, "bytes_moved": moved, "copy_ceiling_gbps_assumed": CEILING_GBPS,
        "timer": "hk_contract.measure (CUDA graph of N rotated calls, median of samples)",
        "rotation_sets": len(sets), "paths": rows, "chosen": best["path"] if best else None,
        "rule": "fastest library path whose output is within 5% relative error of the fp64 reference",
    }
    (out_dir / f"{name}.json").write_text(json.dumps(doc, indent=1) + "\n")
    return doc


NCU_KERNELS = {
    "neg 4096x8192 bf16 (streaming, copy-like)": ("neg", (4096, 8192)),
    "F.rms_norm 4096x8192 bf16": ("rms_norm", (4096, 8192)),
    "torch.softmax 4096x8192 bf16": ("softmax", (4096, 8192)),
    "torch.mv 8192x8192 bf16": ("mv", (8192, 8192)),
    "F.rms_norm 1x8192 bf16 (tiny, one row)": ("rms_norm", (1, 8192)),
}


def op_fn(op: str, shape):
    if op == "neg":
        return lambda x: torch.neg(x), [shape]
    if op == "rms_norm":
        w = torch.randn(shape[-1], device="cuda", dtype=BF16)
        return lambda x: F.rms_norm(x, (shape[-1],), w, 1e-6), [shape]
    if op == "softmax":
        return lambda x: torch.softmax(x, -1), [shape]
    v = torch.randn(shape[1], device="cuda", dtype=BF16)
    return lambda w: torch.mv(w, v), [shape]


def ncu_child(op: str, shape) -> None:
    """Launched under ncu: K rotated sets, 30 calls inside an NVTX range named hk."""
    fn, shapes = op_fn(op, shape)
    per = math.prod(shapes[0]) * 2
    sets = rotated(lambda: (torch.randn(shapes[0], device="cuda", dtype=BF16),), per)
    for j in range(6):
        fn(*sets[j % len(sets)])
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("hk")
    for j in range(30):
        fn(*sets[j % len(sets)])
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def timer_vs_ncu(out_dir: Path) -> None:
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    rows = []
    for label, (op, shape) in NCU_KERNELS.items():
        fn, shapes = op_fn(op, shape)
        per = math.prod(shapes[0]) * 2
        sets = rotated(lambda: (torch.randn(shapes[0], device="cuda", dtype=BF16),), per)
        ours = time_call(fn, sets)
        argv = [ncu, "--clock-control", "none", "--cache-control", "none", "--nvtx", "--nvtx-include", "hk/",
                "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw",
                sys.executable, __file__, "--ncu-child", op, "x".join(map(str, shape))]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=180)
        raw_name = f"ncu_{op}_{'x'.join(map(str, shape))}.csv"
        (out_dir / raw_name).write_text(proc.stdout + ("\n# stderr:\n" + proc.stderr if proc.returncode else ""))
        durations = []
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith('"')]
        if lines:
            reader = csv.DictReader(io.StringIO("\n".join(lines)))
            units = next(reader)  # the units row
            unit = units.get("gpu__time_duration.sum", "nsecond")
            scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0}.get(unit, 1e-6)
            for row in reader:
                try:
                    durations.append(float(row["gpu__time_duration.sum"].replace(",", "")) * scale)
                except (KeyError, ValueError):
                    pass
        durations.sort()
        ncu_ms = durations[len(durations) // 2] if durations else None
        rows.append({
            "kernel": label, "timer_ms": ours["ms"], "timer": ours["timer"], "n_calls": ours["n_calls"],
            "timer_samples_ms": ours["samples_ms"], "ncu_median_ms": ncu_ms, "ncu_launches": len(durations),
            "ncu_raw_csv": raw_name,
            "timer_over_ncu": (ours["ms"] / ncu_ms) if ncu_ms else None,
        })
        print(label, ours["ms"], ncu_ms, flush=True)
    doc = {"card": torch.cuda.get_device_name(0), "date": dt.date.today().isoformat(), "torch": torch.__version__,
           "ncu": subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1],
           "ncu_flags": "--clock-control none --cache-control none --nvtx --nvtx-include hk/ --metrics gpu__time_duration.sum",
           "rows": rows}
    (out_dir / "timer_vs_ncu.json").write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    if len(sys.argv) >= 4 and sys.argv[1] == "--ncu-child":
        ncu_child(sys.argv[2], tuple(int(d) for d in sys.argv[3].split("x")))
        return
    out = Path(sys.argv[1])
    (out / "baseline_choice").mkdir(parents=True, exist_ok=True)
    (out / "calibration").mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if os.environ.get("HK_SKIP_NCU") != "1":
        timer_vs_ncu(out / "calibration")
    print(f"timer_vs_ncu done {time.time() - t0:.1f}s", flush=True)
    only = os.environ.get("HK_ONLY")
    for builder in (rmsnorm_paths, softmax_paths, gemv_paths, attention_paths, int4_paths):
        if only and only not in builder.__name__:
            continue
        doc = choose(builder, out / "baseline_choice")
        print(json.dumps({k: doc.get(k) for k in ("target", "chosen", "error")}), flush=True)
    print(f"all done {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
