"""Check every speedrun candidate against an fp32 reference, on CPU (Triton interpreter) or on a GPU.

    python lab/speedrun/check_variants.py --device cpu               # small shapes, TRITON_INTERPRET=1 (tests)
    python lab/speedrun/check_variants.py --device cuda --shapes headline --time   # triage on the H200
    python lab/speedrun/check_variants.py --candidate rmsnorm row_w4                # one variant as a candidate file

One JSON line per (target, variant, case) on stdout: ``{"target", "variant", "case", "ok", "max_abs_err",
"worst_ratio", "detail"}`` plus ``ms`` / ``gbps`` / ``ceiling_share`` with ``--time``. ``worst_ratio`` is the
largest ``|out - ref| / (atol + rtol * |ref|)`` (ok when <= 1), with the manifest's tolerances. On CUDA the
int4 case also checks that the test-side port of tinygemm's packing equals ``_convert_weight_to_int4pack``.

Each ``lab/speedrun/<target>/<idea>.py`` holds one idea: its Triton kernel(s), ``make_kernel(**params)`` returning
the candidate ``kernel``, and ``VARIANTS``, the named parameter sets (the names are the variants triaged,
verified and recorded). ``candidate_source`` turns one name into a self-contained candidate file.

The timings here are a quick triage (CUDA-graph replay over rotated inputs), not results: records come only
from ``hotkernel verify`` / ``record``. The tool process never runs this; it imports torch and triton.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import json
import math
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

SPEEDRUN_DIR = Path(__file__).resolve().parent
REPO_ROOT = SPEEDRUN_DIR.parent
TARGETS = ("rmsnorm", "softmax", "gemv", "decode_attention", "int4_gemv")
CEILING_BYTES_PER_S = 4.02e12  # measured device-to-device copy on the lent H200 (../shared/h200.md)
# (atol, rtol) as in hotkernel.yaml (bf16 default 0.02 / 0.02 unless the manifest overrides atol)
TOLERANCES = {"rmsnorm": (0.02, 0.02), "softmax": (1e-5, 0.02), "gemv": (0.02, 0.02),
              "decode_attention": (2e-4, 0.02), "int4_gemv": (1.0, 0.02)}
# bytes each headline call must move (the manifest's `bytes`), for the triage share of the ceiling
HEADLINE_BYTES = {"rmsnorm": 134234112, "softmax": 134217728, "gemv": 134250496,
                  "decode_attention": 134234112, "int4_gemv": 35684352}


# Triton 3.9's interpreter converts fp32 -> bf16 by truncation (the GPU rounds to nearest): decode attention's
# bf16 P (P @ V) then carries a biased 2^-8 error, which over a few hundred tokens reaches ~2e-4 on outputs
# near zero. Small interpreter cases use atol 1e-3 there; a wrong index or layout errs by ~0.1.
INTERPRETER_TOLERANCES = {**TOLERANCES, "decode_attention": (1e-3, 0.02)}
# function names in kernels/<target>.py (the manifest's `from`)
BASELINES = {"rmsnorm": "rms_norm", "softmax": "softmax", "gemv": "gemv",
             "decode_attention": "decode_attention", "int4_gemv": "int4_gemv"}


def idea_files(target: str) -> list[Path]:
    """The idea modules of one target, sorted by name."""
    return sorted(p for p in (SPEEDRUN_DIR / target).glob("*.py") if not p.name.startswith("_"))


def _variants_literal(path: Path) -> dict[str, dict[str, Any]]:
    """The ``VARIANTS`` dict of one module, read from its syntax tree (no import: no torch needed)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == "VARIANTS" for t in targets):
                return ast.literal_eval(node.value)
    raise AssertionError(f"{path}: no VARIANTS dict")


def variant_index(target: str) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every variant of one target: name -> (its idea module, its parameters), sorted by name."""
    index: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in idea_files(target):
        for name, params in _variants_literal(path).items():
            assert name not in index, f"{target}: variant {name} is in both {index[name][0].name} and {path.name}"
            index[name] = (path, params)
    return dict(sorted(index.items()))


@functools.cache
def load_module(path: Path) -> ModuleType:
    """Import one self-contained file by path (an idea module or a baseline), once."""
    spec = importlib.util.spec_from_file_location(f"speedrun_{path.parent.name}_{path.stem}", path)
    assert spec is not None and spec.loader is not None, f"cannot import {path}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def variant_kernel(target: str, name: str) -> Callable[..., Any]:
    """The candidate ``kernel`` of one variant: its module's ``make_kernel`` at its parameters."""
    path, params = variant_index(target)[name]
    return load_module(path).make_kernel(**params)


WHO = "Claude (Anthropic), Triton kernel lab/speedrun/{target}/{module}, variant {variant}"  # last word: the variant
RUN_ALONE = '''

if __name__ == "__main__":  # python targets/<name>/candidate.py: one run under the workspace's contract
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import hk_contract

    hk_contract.main(__file__)
'''


def variant_who(target: str, name: str) -> str:
    """The author of a variant as records name it (``hotkernel sync`` reads it from the candidate's ``WHO``)."""
    path, _ = variant_index(target)[name]
    return WHO.format(target=target, module=path.name, variant=name)


def candidate_source(target: str, name: str) -> str:
    """A self-contained candidate file for one variant: its idea module, the lines that pick its parameters and
    name its author, and the block that lets ``python targets/<name>/candidate.py`` run it under the contract."""
    path, _ = variant_index(target)[name]
    return (f'{path.read_text().rstrip()}\n\n\nkernel = make_kernel(**VARIANTS["{name}"])\n'
            f'WHO = {variant_who(target, name)!r}\n{RUN_ALONE}')


def variant_hypothesis(target: str, name: str) -> str:
    """The hypothesis of one variant: its ``- `name` (...): ...`` entry in the module docstring, on one line (up to
    the next entry, a blank line or the end)."""
    path, _ = variant_index(target)[name]
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    found = re.search(rf"^- `{re.escape(name)}` \((.*?)\): (.*?)(?=^- `|\n[ \t]*\n|\Z)", doc,
                      re.MULTILINE | re.DOTALL)
    assert found, f"{path}: no hypothesis for variant {name}"
    return " ".join(found.group(2).split())


def pack_tinygemm_reference(q: Any, inner_k_tiles: int) -> Any:
    """Pure-torch port of CUDA `_convert_weight_to_int4pack` (q int32 [N, K] in 0..15, even k high nibble).

    Output int32 [N/8, K/(16*IKT), 32, IKT/2]; word [nt, ko, t, j], nibble p holds q[8 nt + t // 4,
    16 IKT ko + 32 j + 2 (t % 4) + 8 (p % 4) + p // 4] (aten/src/ATen/native/cuda/int4mm.cu).
    """
    import torch

    n, k = q.shape
    ikt = inner_k_tiles
    n_tiles, k_outer = n // 8, k // (16 * ikt)
    lane = torch.arange(32, device=q.device)
    j = torch.arange(ikt // 2, device=q.device)
    p = torch.arange(8, device=q.device)
    rows = torch.arange(n_tiles, device=q.device)[:, None, None, None, None] * 8 + (lane // 4)[:, None, None]
    cols = (torch.arange(k_outer, device=q.device)[:, None, None, None] * 16 * ikt + 32 * j[:, None]
            + 2 * (lane % 4)[:, None, None] + 8 * (p % 4) + p // 4)
    rows, cols = torch.broadcast_tensors(rows, cols)
    words = (q[rows, cols].to(torch.int64) << (4 * p)).sum(-1)
    return torch.where(words >= 2**31, words - 2**32, words).to(torch.int32)


def make_cases(target: str, shapes: str, device: str) -> list[tuple[str, tuple, dict, Callable[[], Any]]]:
    """(case name, inputs, kwargs, fp32 reference thunk) for one target."""
    import torch
    import torch.nn.functional as F

    bf16 = torch.bfloat16

    def randn(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, device=device, dtype=torch.float32).to(bf16)

    cases: list[tuple[str, tuple, dict, Callable[[], Any]]] = []
    if target == "rmsnorm":
        for rows, cols in ([(37, 200), (8, 1024)] if shapes == "small" else [(4096, 8192)]):
            x, w = randn(rows, cols), randn(cols)

            def ref(x: torch.Tensor = x, w: torch.Tensor = w) -> torch.Tensor:
                xf = x.float()
                return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()

            cases.append((f"{rows}x{cols}", (x, w), {"eps": 1e-6}, ref))
    elif target == "softmax":
        for rows, cols in ([(37, 200), (5, 1000)] if shapes == "small" else [(4096, 8192)]):
            x = randn(rows, cols)
            cases.append((f"{rows}x{cols}", (x,), {"dim": -1}, lambda x=x: torch.softmax(x.float(), -1)))
    elif target == "gemv":
        for rows, cols in ([(100, 300), (64, 2048)] if shapes == "small" else [(8192, 8192)]):
            w, x = randn(rows, cols), randn(cols)
            cases.append((f"{rows}x{cols}", (w, x), {}, lambda w=w, x=x: w.float() @ x.float()))
    elif target == "decode_attention":
        dims = [(1, 8, 2, 700, 64), (2, 8, 2, 333, 32)] if shapes == "small" else [(1, 32, 8, 32768, 128)]
        for batch, hq, hkv, seq, d in dims:
            q, k, v = randn(batch, hq, 1, d), randn(batch, hkv, seq, d), randn(batch, hkv, seq, d)

            def ref(q: torch.Tensor = q, k: torch.Tensor = k, v: torch.Tensor = v) -> torch.Tensor:
                return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)

            cases.append((f"{batch}x{hq}x{hkv}x{seq}x{d}", (q, k, v), {"enable_gqa": True}, ref))
    elif target == "int4_gemv":
        sys.path.insert(0, str(REPO_ROOT))
        from kernels.int4_gemv import INNER_K_TILES, dequantize_groups, quantize_groups

        dims = [(1, 64, 1024, 128, 8), (2, 40, 512, 128, 4)] if shapes == "small" else [(1, 8192, 8192, 128,
                                                                                           INNER_K_TILES)]
        for m, n, k, group, ikt in dims:
            x, w = randn(m, k), torch.randn(n, k, device=device)
            q, scales, zeros = quantize_groups(w, group)
            packed = pack_tinygemm_reference(q, ikt)
            if device == "cuda":
                q_uint8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
                real = torch.ops.aten._convert_weight_to_int4pack(q_uint8, ikt)
                assert torch.equal(real, packed), "pack_tinygemm_reference differs from CUDA's packing"
            sz = torch.stack([scales, zeros], -1).transpose(0, 1).contiguous()

            def ref(x: torch.Tensor = x, q: torch.Tensor = q, s: torch.Tensor = scales,
                    z: torch.Tensor = zeros, g: int = group) -> torch.Tensor:
                return x.float() @ dequantize_groups(q, s, z, g).t()

            cases.append((f"{m}x{n}x{k}/g{group}/ikt{ikt}", (x, packed, sz), {"group_size": group}, ref))
    return cases


def compare(out: Any, ref: Any, target: str, device: str) -> tuple[bool, float, float, str]:
    """(ok, max abs error, worst error / allowed ratio, detail) with the manifest's tolerances."""
    atol, rtol = (TOLERANCES if device == "cuda" else INTERPRETER_TOLERANCES)[target]
    if tuple(out.shape) != tuple(ref.shape):
        return False, math.inf, math.inf, f"shape {tuple(out.shape)} != {tuple(ref.shape)}"
    diff = (out.float() - ref).abs()
    if not bool(diff.isfinite().all()):
        return False, math.inf, math.inf, "non-finite output"
    ratio = float((diff / (atol + rtol * ref.abs())).max())
    return ratio <= 1.0, float(diff.max()), ratio, ""


def time_variant(fn: Callable[..., Any], inputs: tuple, kwargs: dict, bytes_per_call: int) -> float:
    """Median ms per call: CUDA-graph replay over input sets rotated through > 3x L2 (triage only)."""
    import torch

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    sets = max(2, math.ceil(3 * l2 / bytes_per_call))
    rotated = [tuple(t.clone() for t in inputs) for _ in range(sets)]
    calls = max(sets, 20)
    for args in rotated:
        fn(*args, **kwargs)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(calls):
            fn(*rotated[i % sets], **kwargs)
    return graph_replay_ms(graph, calls)


def graph_replay_ms(graph: Any, calls: int, replays: int = 7) -> float:
    """Median ms per call over `replays` timed replays of a captured CUDA graph of `calls` calls."""
    import torch

    samples = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) / calls)
    return sorted(samples)[len(samples) // 2]


def run(targets: list[str], device: str, shapes: str, timing: bool, only: list[str] | None = None) -> int:
    """Check (and optionally time) every variant (or those whose name contains one of ``only``); print one
    JSON line each; return the number of failures."""
    import torch

    torch.manual_seed(0)
    failures = 0
    for target in targets:
        cases = make_cases(target, shapes, device)
        names: list[str | None] = [n for n in variant_index(target) if not only or any(word in n for word in only)]
        if timing and device == "cuda":
            names.insert(0, None)  # the manifest's baseline, timed the same way
        for name in names:
            record: dict[str, Any] = {"target": target, "variant": "baseline" if name is None else name}
            try:
                if name is None:
                    fn = getattr(load_module(REPO_ROOT / "kernels" / f"{target}.py"), BASELINES[target])
                else:
                    fn = variant_kernel(target, name)
            except Exception as exc:  # noqa: BLE001 - reported per variant, the run goes on
                failures += 1
                row = {**record, "case": None, "ok": False, "detail": f"import: {exc!r}"}
                print(json.dumps(row), flush=True)
                continue
            for case, inputs, kwargs, ref in cases:
                row = {**record, "case": case}
                try:
                    out = fn(*inputs, **kwargs)
                    ok, max_err, ratio, detail = compare(out, ref(), target, device)
                    row.update(ok=ok, max_abs_err=max_err, worst_ratio=ratio, detail=detail)
                    if timing and ok and device == "cuda":
                        ms = time_variant(fn, inputs, kwargs, HEADLINE_BYTES[target])
                        gbps = HEADLINE_BYTES[target] / (ms * 1e-3) / 1e9 if shapes == "headline" else None
                        row.update(ms=ms, gbps=gbps,
                                   ceiling_share=None if gbps is None else gbps * 1e9 / CEILING_BYTES_PER_S)
                except Exception as exc:  # noqa: BLE001 - reported per variant, the run goes on
                    row.update(ok=False, detail=f"{type(exc).__name__}: {exc}"[:500])
                failures += not row["ok"]
                print(json.dumps(row), flush=True)
    return failures


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, set the interpreter up for CPU runs (before triton is imported), run the checks."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--shapes", choices=("small", "headline"), default="small")
    parser.add_argument("--targets", nargs="*", default=list(TARGETS), choices=TARGETS)
    parser.add_argument("--time", action="store_true", help="CUDA-graph triage timing (cuda only)")
    parser.add_argument("--only", nargs="*", default=None, metavar="SUBSTRING",
                        help="only the variants whose name contains one of these (the baseline is kept)")
    parser.add_argument("--candidate", nargs=2, metavar=("TARGET", "VARIANT"),
                        help="print the self-contained candidate file of one variant and exit")
    args = parser.parse_args(argv)
    if args.candidate:
        print(candidate_source(*args.candidate), end="")
        return 0
    if args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    return 1 if run(args.targets, args.device, args.shapes, args.time, args.only) else 0


if __name__ == "__main__":
    sys.exit(main())
