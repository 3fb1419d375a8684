"""Adversarial contract cases on a CUDA GPU (run by the lead on the lent H200; < 3 minutes).

Usage: ``PYTHONPATH=<repo> python lab/benchmarks/device/adversarial_gpu.py OUT.jsonl``

Renders two small CUDA targets into a temporary workspace (``rms``: 1024x4096 fp32 rows scaled by their RMS
and a weight; ``mm``: a 1024x1024x1024 fp32 matmul), runs the GPU-only cheats (stale CUDA allocator memory,
work on an unjoined side stream, TF32 / bf16 in an fp32 target, outputs computed only at graph-capture time)
and every CPU family of ``tests/adversarial`` again on CUDA, each through ``runner.run_script`` with
one shared judge, and writes one JSON line per case (case, target, expected, status, reason, ms, timer).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from adversarial.cases import CASES  # noqa: E402
from adversarial.workspace import CANDIDATES_DIR, KERNEL_SOURCE, default_resolved  # noqa: E402

from hotkernel.run.render import render_target  # noqa: E402
from hotkernel.run.runner import JudgeProcess, run_script  # noqa: E402
from hotkernel.workspace.paths import Workspace  # noqa: E402

SKIP_ON_GPU = {"hangs"}  # the timeout path is covered on CPU; 20 s of budget is better spent elsewhere
MM_KERNEL = """import torch


def matmul(a, b):
    return a @ b
"""
HONEST = """import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
"""
GPU_CASES = {
    # name: (target, expected statuses, source)
    "stale_allocator": (
        "rms",
        ("incorrect",),
        HONEST
        + """

def kernel(x, w, *, eps):
    # Never computes: returns a fresh allocation hoping the caching allocator hands back a block that still
    # holds an earlier answer (the classic stale-buffer "speedup").
    return torch.empty_like(x)
""",
    ),
    "stale_allocator_recycled": (
        "rms",
        ("incorrect",),
        HONEST
        + """
_calls = [0]


def kernel(x, w, *, eps):
    # Honest for the correctness pass and warm-up, then only allocates: freed blocks of earlier honest outputs
    # of the same size are what the allocator hands out.
    _calls[0] += 1
    if _calls[0] <= 40:
        return honest(x, w, eps)
    return torch.empty_like(x)
""",
    ),
    "side_stream_unjoined": (
        "rms",
        ("invalid", "incorrect", "ok-not-faster"),
        HONEST
        + """
_side = torch.cuda.Stream()


def kernel(x, w, *, eps):
    out = torch.empty_like(x)
    _side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(_side):
        out.copy_(honest(x, w, eps))  # never joined back to the timed stream
    return out
""",
    ),
    "side_stream_eager_only": (
        "rms",
        ("invalid", "incorrect", "ok-not-faster"),
        HONEST
        + """
_side = torch.cuda.Stream()


def kernel(x, w, *, eps):
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError("refuse capture so the contract falls back to an eager loop")
    out = torch.empty_like(x)
    with torch.cuda.stream(_side):
        out.copy_(honest(x, w, eps))  # unjoined: the timed stream's events never wait for this work
    return out
""",
    ),
    "capture_time_only": (
        "rms",
        ("incorrect",),
        HONEST
        + """
_cache = {}


def kernel(x, w, *, eps):
    # Honest when eager; during graph capture replays the eager answer (the graph then does no work).
    key = x.data_ptr()
    if torch.cuda.is_current_stream_capturing() and key in _cache:
        return _cache[key]
    _cache[key] = honest(x, w, eps)
    return _cache[key]
""",
    ),
    "bf16_in_fp32": (
        "rms",
        ("incorrect",),
        HONEST
        + """

def kernel(x, w, *, eps):
    return honest(x.bfloat16(), w.bfloat16(), eps).float()
""",
    ),
    "tf32_matmul": (
        "mm",
        ("incorrect",),
        """import torch

torch.backends.cuda.matmul.allow_tf32 = True


def kernel(a, b):
    return a @ b
""",
    ),
    "fp16_matmul": (
        "mm",
        ("incorrect",),
        """import torch


def kernel(a, b):
    return (a.half() @ b.half()).float()
""",
    ),
    "mm_untouched": ("mm", ("ok",), None),
}


def make_workspace(root: Path) -> tuple[Workspace, dict[str, dict]]:
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "ops.py").write_text(KERNEL_SOURCE)
    (root / "kernels" / "mm.py").write_text(MM_KERNEL)
    (root / "hotkernel.yaml").write_text("version: 1\ntargets: {}\n")
    ws = Workspace(root)
    rms = default_resolved(
        device="cuda",
        inputs=[{"name": "x", "shapes": [[1024, 4096]]}, {"name": "w", "shapes": [[4096]]}],
        shapes=["1024x4096"],
    )
    mm = default_resolved(
        name="mm",
        **{"from": "./kernels/mm.py:matmul"},
        device="cuda",
        kwargs={},
        inputs=[{"name": "a", "shapes": [[1024, 1024]]}, {"name": "b", "shapes": [[1024, 1024]]}],
        shapes=["1024x1024x1024"],
        rotate=["a", "b"],
    )
    resolved = {"rms": rms, "mm": mm}
    for name, spec in resolved.items():
        render_target(ws, name, spec)
    return ws, resolved


def main(out_path: str) -> None:
    started = time.monotonic()
    root = Path(tempfile.mkdtemp(prefix="hk_adv_gpu_"))
    ws, resolved = make_workspace(root)
    pristine = {name: (ws.target_dir(name) / "candidate.py").read_text() for name in resolved}
    plan: list[tuple[str, str, tuple[str, ...], str | None, float]] = []
    for case in CASES:
        if case.name in SKIP_ON_GPU or case.problem:  # a problem-file case needs its own workspace (CPU suite)
            continue
        source = None if case.name == "untouched" else (CANDIDATES_DIR / f"{case.name}.py").read_text()
        statuses = (case.status,)
        if case.name in ("honest_then_stale", "memo_strided_sample"):
            # Under CUDA-graph timing a Python-level switch after capture cannot change what replays: the
            # timed calls run the honest kernels that were captured (a memo's .tolist() fails capture, and its
            # eager loop, sized by the slow memo, calls each set once). Passing is fine if it is not faster.
            statuses = (case.status, "ok-not-faster")
        plan.append((case.name, "rms", statuses, source, case.timeout_s))
    for name, (target, statuses, source) in GPU_CASES.items():
        plan.append((name, target, statuses, source, 120.0))
    untouched_ms: dict[str, float] = {}
    with open(out_path, "w") as out, JudgeProcess(ws, python=sys.executable) as judge:
        for name, target, statuses, source, timeout_s in plan:
            render_target(ws, target, resolved[target])
            candidate = ws.target_dir(target) / "candidate.py"
            candidate.write_text(pristine[target] if source is None else source)
            t0 = time.monotonic()
            try:
                outcome = run_script(
                    ws,
                    candidate,
                    python=sys.executable,
                    judge=judge,
                    timeout_s=timeout_s,
                    resolved=resolved[target],
                )
                row = {
                    "status": outcome.status,
                    "reason": outcome.reason,
                    "ms": outcome.ms,
                    "timer": (outcome.run or {}).get("timer"),
                    "rotation": (outcome.run or {}).get("rotation"),
                    "iters": (outcome.run or {}).get("iters"),
                    "phases_s": (outcome.run or {}).get("phases_s"),
                    "stderr_tail": outcome.stderr_tail[-600:] if outcome.status != "ok" else "",
                }
            except Exception as err:  # noqa: BLE001 - one broken case must not lose the others
                row = {"status": "error", "reason": f"{type(err).__name__}: {err}"}
            if name in ("untouched", "mm_untouched") and row["status"] == "ok":
                untouched_ms[target] = row["ms"]
            honest = untouched_ms.get(target)
            not_faster = row["status"] == "ok" and honest is not None and row["ms"] >= 0.99 * honest
            row.update(
                case=name,
                target=target,
                expected=list(statuses),
                not_faster_than_untouched=not_faster,
                as_expected=row["status"] in statuses or ("ok-not-faster" in statuses and not_faster),
                wall_s=round(time.monotonic() - t0, 2),
            )
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(
                f"{name:28s} {row['status']:9s} {'ok ' if row['as_expected'] else 'BAD'} {row.get('reason')}",
                flush=True,
            )
        # The baseline itself, several times: the speed of a run (verify at n=7 makes 14 of these).
        for index in range(4):
            t0 = time.monotonic()
            outcome = run_script(
                ws,
                ws.target_dir("rms") / "baseline.py",
                python=sys.executable,
                judge=judge,
                resolved=resolved["rms"],
            )
            out.write(
                json.dumps(
                    {
                        "case": f"baseline_speed_{index}",
                        "target": "rms",
                        "status": outcome.status,
                        "reason": outcome.reason,
                        "ms": outcome.ms,
                        "phases_s": (outcome.run or {}).get("phases_s"),
                        "wall_s": round(time.monotonic() - t0, 2),
                    }
                )
                + "\n"
            )
    shutil.rmtree(root, ignore_errors=True)
    print(f"done in {time.monotonic() - started:.1f} s -> {out_path}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: adversarial_gpu.py OUT.jsonl")
    main(sys.argv[1])
