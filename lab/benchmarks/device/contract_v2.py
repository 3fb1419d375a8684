"""Contract v2 (protocol 2) on the lent H200: overhead, verify walls, verdicts. One JSONL file under OUT_DIR.

Usage: ``PYTHONPATH=<repo> python lab/benchmarks/device/contract_v2.py OUT_DIR [--steps 1,2,5,6,3,4] [--budget-s 540]``
(``lab/benchmarks/device/contract_v2.sh`` is the exact device command). ``--dry-run`` runs every step on CPU at
tiny shapes (what CI checks). Steps, in the order given, each time-boxed (its share of what is left), every
result appended to ``OUT_DIR/contract_v2.jsonl`` as it comes (one JSON object per line, ``step`` names it):

1. ``overhead``: per-run overhead (process wall minus timed kernel work) of an elementwise bf16 target with
   outputs of 64 MB, 512 MB, 2 GB and 6 GB (goals: <= 3 s at 64 MB, <= 8 s at 6 GB); two runs per size, the
   second with a warm judge;
2. ``verify_rmsnorm``: wall of ``hotkernel verify -n 7`` of this repo's rmsnorm target (goal <= 20 s);
5. ``adversarial`` (``lab/benchmarks/device/adversarial_gpu.py``) and ``scale_aware``: zeros, a constant, another
   input set's output and fp8-rounded inputs on a bf16 softmax 4096x8192 and a bf16 rmsnorm (incorrect), and
   honest Triton / torch / cuBLAS / torch.compile kernels (correct);
6. ``aa``: A/A verifies (candidate = baseline) for the false-verdict rate; ``int4``: five fresh verifies of the
   kept int4 candidate (goal: speedups within 3%);
3. ``kb_softmax``: KernelBench level 1 ``23_Softmax`` at its own shape (4096x393216 fp32), verify n=3 (goal
   <= 120 s); the problem file comes from ``$HK_KB_DIR`` (copied into a temporary workspace, never the repo);
4. ``kb_gelu``: ``88_MinGPTNewGelu`` (8192x8192 fp32) with a ``torch.compile`` candidate (must be faster) and
   one compiled with ``mode="max-autotune"`` (a real verdict).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from hotkernel.run.render import initial_candidate, render_target  # noqa: E402
from hotkernel.run.runner import JudgeProcess, run_script  # noqa: E402
from hotkernel.run.verify import verify  # noqa: E402
from hotkernel.workspace.paths import Workspace  # noqa: E402

STEP_ORDER = "1,2,5,6,3,4"
STEP_WEIGHTS = {"1": 70, "2": 45, "5": 150, "6": 140, "3": 80, "4": 90}  # seconds when the whole budget is there
OUTPUT_SIZES_BYTES = {"64MB": 64 << 20, "512MB": 512 << 20, "2GB": 2 << 30, "6GB": 6 << 30}
ELEMENTWISE = '''import torch


def scale(x):
    return x * 2
'''
SOFTMAX = '''import torch


def softmax(x):
    return torch.softmax(x, dim=-1)
'''
RMSNORM = '''import torch


def rms_norm(x, w, *, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)
'''
KB_WRAPPER = '''"""KernelBench problem {stem}: the baseline is the problem's own Model (built once, inputs passed through)."""
import importlib.util
import pathlib

_spec = importlib.util.spec_from_file_location("kb_{key}", pathlib.Path(__file__).with_name("{stem}.py"))
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
MODEL = _module.Model(*_module.get_init_inputs())


def model(x):
    return MODEL(x)
'''


class Budget:
    """Seconds left for the whole script; each step gets its weight's share of what is left."""

    def __init__(self, total_s: float) -> None:
        self.deadline = time.monotonic() + total_s

    def left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def share(self, step: str, pending: list[str]) -> float:
        weights = sum(STEP_WEIGHTS[s] for s in pending) or 1
        return self.left() * STEP_WEIGHTS[step] / weights


class Out:
    """Append-only JSONL, flushed per line (a killed run keeps what it had)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "contract_v2.jsonl"
        self.handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in main

    def row(self, step: str, **fields: Any) -> None:
        fields = {"step": step, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields}
        self.handle.write(json.dumps(fields, default=str) + "\n")
        self.handle.flush()
        print(json.dumps(fields, default=str)[:400], flush=True)


def resolved(name: str, ref: str, inputs: list[tuple[str, list[int]]], dtype: str, device: str, **extra: Any) -> dict:
    spec = {
        "name": name, "from": ref, "reference": None, "derive": None, "derived_inputs": None,
        "inputs": [{"name": n, "shapes": [shape]} for n, shape in inputs],
        "shapes": ["x".join(map(str, inputs[0][1]))], "dtype": dtype, "kwargs": {}, "rotate": [inputs[0][0]],
        "flops": None, "bytes": None, "min_bytes": None, "atol": {"bf16": 0.02, "fp32": 1e-4}[dtype],
        "rtol": {"bf16": 0.02, "fp32": 1e-4}[dtype], "seed": None, "iters": None, "device": device,
    }
    spec.update(extra)
    return spec


def scratch_workspace(kernels: dict[str, str]) -> Workspace:
    root = Path(tempfile.mkdtemp(prefix="hk_v2_"))
    (root / "kernels").mkdir()
    for name, text in kernels.items():
        (root / "kernels" / name).write_text(text)
    (root / "hotkernel.yaml").write_text("version: 1\ntargets: {}\n")
    return Workspace(root)


def repo_workspace() -> Workspace:
    """A copy of this repository's workspace (manifest, kernels, targets) with every target re-rendered."""
    from hotkernel.manifest.load import load_manifest
    from hotkernel.manifest.resolve import resolved_target

    root = Path(tempfile.mkdtemp(prefix="hk_v2_repo_"))
    for item in ("hotkernel.yaml", "kernels", "targets", "speedrun", "schemas"):
        source = REPO / item
        if source.is_dir():
            shutil.copytree(source, root / item, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.is_file():
            shutil.copy2(source, root / item)
    ws = Workspace(root)
    manifest = load_manifest(ws.manifest)
    for name in manifest.targets:
        render_target(ws, name, resolved_target(manifest, name))
    return ws


def run_row(outcome: Any) -> dict[str, Any]:
    run = outcome.run or {}
    shape = (run.get("per_shape") or [{}])[0]
    kernel_s = shape.get("timed_kernel_s")
    return {"status": outcome.status, "reason": outcome.reason, "ms": outcome.ms, "wall_s": outcome.wall_s,
            "timed_kernel_s": kernel_s,
            "overhead_s": None if kernel_s is None else round(outcome.wall_s - kernel_s, 3),
            "phases_s": run.get("phases_s"), "timer": run.get("timer"), "iters": run.get("iters"),
            "rotation": run.get("rotation"), "transport": run.get("transport"), "tolerances": run.get("tolerances"),
            "reference_precision": run.get("reference_precision"), "sized_by": shape.get("sized_by"),
            "overhead_ms": shape.get("overhead_ms")}


def step_overhead(out: Out, budget_s: float, device: str, dry: bool) -> None:
    deadline = time.monotonic() + budget_s
    ws = scratch_workspace({"ew.py": ELEMENTWISE})
    sizes = {"64KB": 64 << 10, "256KB": 256 << 10} if dry else OUTPUT_SIZES_BYTES
    with JudgeProcess(ws, python=sys.executable) as judge:
        for label, size in sizes.items():
            cols = 8192 if size >= 8192 * 2 * 64 else 256
            rows = size // (2 * cols)
            spec = resolved("ew", "./kernels/ew.py:scale", [("x", [rows, cols])], "bf16", device)
            render_target(ws, "ew", spec)
            for attempt in range(2):
                left = deadline - time.monotonic()
                if left < 5:
                    out.row("overhead", size=label, skipped="step budget spent")
                    return
                outcome = run_script(ws, ws.target_dir("ew") / "baseline.py", python=sys.executable, judge=judge,
                                     timeout_s=left, resolved=spec)
                out.row("overhead", size=label, output_bytes=size, attempt=attempt, **run_row(outcome))
    shutil.rmtree(ws.root, ignore_errors=True)


def cli_verify(ws: Workspace, target: str, n: int, timeout_s: float) -> dict[str, Any]:
    argv = [sys.executable, "-m", "hotkernel", "verify", f"targets/{target}/baseline.py",
            f"targets/{target}/candidate.py", "-n", str(n), "--json"]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=ws.root, capture_output=True, text=True, timeout=timeout_s,
                              env={**os.environ, "HOTKERNEL_PYTHON": sys.executable})
    except subprocess.TimeoutExpired:
        return {"wall_s": round(time.monotonic() - started, 2), "verdict": None, "timed_out": True}
    wall = round(time.monotonic() - started, 2)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return {"wall_s": wall, "verdict": None, "exit": proc.returncode, "stderr": proc.stderr[-800:]}
    runs = [{"role": r.get("role"), "wall_s": r.get("wall_s"), "phases_s": (r.get("run") or {}).get("phases_s")}
            for r in data.get("runs") or []]
    return {"wall_s": wall, "verdict": data.get("verdict"), "speedup": data.get("speedup"),
            "interval": data.get("interval"), "reason": data.get("reason"), "exit": proc.returncode, "runs": runs}


def step_verify_rmsnorm(out: Out, budget_s: float, device: str, dry: bool) -> None:
    ws = repo_workspace()
    target = "cpu_rmsnorm" if dry else "rmsnorm"
    out.row("verify_rmsnorm", target=target, n=3 if dry else 7,
            **cli_verify(ws, target, 3 if dry else 7, budget_s))
    shutil.rmtree(ws.root, ignore_errors=True)


def candidate_sources(dry: bool) -> dict[str, dict[str, tuple[str, str]]]:
    """{target: {case: (expected status, kernel body)}} for the scale-aware cases."""
    softmax = {
        "zeros": ("incorrect", "return torch.zeros_like(x)"),
        "constant": ("incorrect", "return torch.full_like(x, 1.0 / x.shape[-1])"),
        "another_input_set": ("incorrect", "return torch.softmax(torch.randn_like(x), dim=-1)"),
        "fp8_rounded_inputs": ("incorrect", "return torch.softmax(x.to(torch.float8_e4m3fn).to(x.dtype), dim=-1)"),
        "torch_bf16": ("ok", "return torch.softmax(x, dim=-1)"),
        "fp32_accumulate": ("ok", "return torch.softmax(x.float(), dim=-1).to(x.dtype)"),
        "compiled": ("ok", "return _compiled(x)"),
    }
    rms = {
        "zeros": ("incorrect", "return torch.zeros_like(x)"),
        "constant": ("incorrect", "return torch.full_like(x, float(x.float().pow(2).mean().rsqrt()))"),
        "another_input_set": ("incorrect", "return _rms(torch.randn_like(x), w, eps)"),
        "fp8_rounded_inputs": ("incorrect", "return _rms(x.to(torch.float8_e4m3fn).to(x.dtype), w, eps)"),
        "torch_bf16": ("ok", "return _rms(x, w, eps)"),
        "fp32_accumulate": ("ok", "return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)"
                                  " * w.float()).to(x.dtype)"),
        "compiled": ("ok", "return _compiled(x, w, eps)"),
    }
    return {"softmax": softmax, "rmsnorm": rms}


SCALE_PRELUDE = '''import torch


def _rms(x, w, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)


_compiled = torch.compile({compiled})


'''


def step_scale_aware(out: Out, budget_s: float, device: str, dry: bool) -> None:
    deadline = time.monotonic() + budget_s
    rows, cols = (64, 1024) if dry else (4096, 8192)
    ws = scratch_workspace({"softmax.py": SOFTMAX, "rms.py": RMSNORM})
    specs = {
        "softmax": resolved("softmax", "./kernels/softmax.py:softmax", [("x", [rows, cols])], "bf16", device),
        "rmsnorm": resolved("rmsnorm", "./kernels/rms.py:rms_norm", [("x", [rows, cols]), ("w", [cols])], "bf16",
                            device, kwargs={"eps": 1e-6}),
    }
    signature = {"softmax": "x", "rmsnorm": "x, w, *, eps"}
    compiled = {"softmax": "lambda x: torch.softmax(x, dim=-1)", "rmsnorm": "_rms"}
    with JudgeProcess(ws, python=sys.executable) as judge:
        for target, cases in candidate_sources(dry).items():
            render_target(ws, target, specs[target])
            for case, (expected, body) in cases.items():
                left = deadline - time.monotonic()
                if left < 5:
                    out.row("scale_aware", target=target, case=case, skipped="step budget spent")
                    return
                text = SCALE_PRELUDE.format(compiled=compiled[target]) + \
                    f"def kernel({signature[target]}):\n    {body}\n"
                (ws.target_dir(target) / "candidate.py").write_text(text)
                outcome = run_script(ws, ws.target_dir(target) / "candidate.py", python=sys.executable, judge=judge,
                                     timeout_s=left, resolved=specs[target])
                out.row("scale_aware", target=target, case=case, expected=expected,
                        as_expected=outcome.status == expected, **run_row(outcome))
    shutil.rmtree(ws.root, ignore_errors=True)
    honest_repo_kernels(out, deadline, dry)


def honest_repo_kernels(out: Out, deadline: float, dry: bool) -> None:
    """This repository's Triton candidates and cuBLAS baseline, under their manifest's tolerances: correct."""
    from hotkernel.manifest.load import load_manifest
    from hotkernel.manifest.resolve import resolved_target

    ws = repo_workspace()
    manifest = load_manifest(ws.manifest)
    scripts = ([("cpu_rmsnorm", "candidate", "torch (cpu)")] if dry else
               [("softmax", "candidate", "Triton"), ("rmsnorm", "candidate", "Triton"),
                ("gemv", "baseline", "cuBLAS torch.mv")])
    with JudgeProcess(ws, python=sys.executable) as judge:
        for target, role, what in scripts:
            left = deadline - time.monotonic()
            if left < 5:
                out.row("scale_aware", target=target, case=what, skipped="step budget spent")
                return
            outcome = run_script(ws, ws.target_dir(target) / f"{role}.py", python=sys.executable, judge=judge,
                                 timeout_s=left, resolved=resolved_target(manifest, target))
            out.row("scale_aware", target=target, case=f"honest {what} ({role})", expected="ok",
                    as_expected=outcome.status == "ok", **run_row(outcome))
    shutil.rmtree(ws.root, ignore_errors=True)


def step_adversarial(out: Out, budget_s: float, device: str, dry: bool) -> None:
    if dry:
        out.row("adversarial", skipped="dry run: the CPU suite is tests/adversarial")
    else:
        path = Path(out.path.parent) / "adversarial_gpu.jsonl"
        started = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, str(REPO / "lab/benchmarks/device/adversarial_gpu.py"), str(path)],
                                  capture_output=True, text=True, timeout=max(10.0, budget_s * 0.6))
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
        rows = [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []
        bad = [r["case"] for r in rows if not r.get("as_expected", True)]
        out.row("adversarial", exit=code, cases=len(rows), not_as_expected=bad,
                wall_s=round(time.monotonic() - started, 1))
        budget_s -= time.monotonic() - started
    step_scale_aware(out, budget_s, device, dry)


def step_aa_and_int4(out: Out, budget_s: float, device: str, dry: bool) -> None:
    deadline = time.monotonic() + budget_s
    ws = repo_workspace()
    aa_target = "cpu_rmsnorm" if dry else "rmsnorm"
    from hotkernel.manifest.load import load_manifest
    from hotkernel.manifest.resolve import resolved_target

    kept_candidate = (ws.target_dir(aa_target) / "candidate.py").read_text()
    untouched = initial_candidate(resolved_target(load_manifest(ws.manifest), aa_target))
    (ws.target_dir(aa_target) / "candidate.py").write_text(untouched)  # the candidate is the baseline: A/A
    for index in range(2 if dry else 4):
        left = deadline - time.monotonic() - (0 if dry else 0.55 * budget_s)
        if left < 10:
            break
        result = verify(ws, f"targets/{aa_target}/baseline.py", f"targets/{aa_target}/candidate.py",
                        n=3 if dry else 7, python=sys.executable)
        out.row("aa", target=aa_target, index=index, verdict=result.verdict, speedup=result.speedup,
                interval=result.interval, reason=result.reason)
    (ws.target_dir(aa_target) / "candidate.py").write_text(kept_candidate)
    int4 = "cpu_rmsnorm" if dry else "int4_gemv"
    speedups = []
    for index in range(2 if dry else 5):
        if deadline - time.monotonic() < 10:
            out.row("int4", index=index, skipped="step budget spent")
            break
        result = verify(ws, f"targets/{int4}/baseline.py", f"targets/{int4}/candidate.py", n=3 if dry else 7,
                        python=sys.executable)
        speedups.append(result.speedup)
        out.row("int4", target=int4, index=index, verdict=result.verdict, speedup=result.speedup,
                interval=result.interval, reason=result.reason)
    known = [s for s in speedups if s]
    if len(known) >= 2:
        out.row("int4_spread", speedups=known, spread=round(max(known) / min(known) - 1, 4), goal=0.03)
    shutil.rmtree(ws.root, ignore_errors=True)


def kb_workspace(stem: str, key: str, shape: list[int], dry: bool) -> tuple[Workspace, dict]:
    folder = Path(os.environ.get("HK_KB_DIR", ""))
    source = folder / f"{stem}.py"
    if not source.is_file():
        raise FileNotFoundError(f"{source} missing: set HK_KB_DIR to a copy of KernelBench level1/")
    ws = scratch_workspace({f"{stem}.py": source.read_text(), f"kb_{key}.py": KB_WRAPPER.format(stem=stem, key=key)})
    spec = resolved(f"kb_{key}", f"./kernels/kb_{key}.py:model", [("x", shape)], "fp32", "cpu" if dry else "cuda")
    render_target(ws, spec["name"], spec)
    return ws, spec


def step_kb_softmax(out: Out, budget_s: float, device: str, dry: bool) -> None:
    try:
        ws, spec = kb_workspace("23_Softmax", "softmax", [64, 512] if dry else [4096, 393216], dry)
    except FileNotFoundError as err:
        out.row("kb_softmax", skipped=str(err))
        return
    out.row("kb_softmax", shape=spec["shapes"][0], n=3, **cli_verify(ws, spec["name"], 3, budget_s))
    shutil.rmtree(ws.root, ignore_errors=True)


def step_kb_gelu(out: Out, budget_s: float, device: str, dry: bool) -> None:
    deadline = time.monotonic() + budget_s
    try:
        ws, spec = kb_workspace("88_MinGPTNewGelu", "gelu", [64, 512] if dry else [8192, 8192], dry)
    except FileNotFoundError as err:
        out.row("kb_gelu", skipped=str(err))
        return
    gelu = ("0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))")
    for mode in ("default", "max-autotune"):
        left = deadline - time.monotonic()
        if left < 15:
            out.row("kb_gelu", mode=mode, skipped="step budget spent")
            break
        option = "" if mode == "default" else ', mode="max-autotune"'
        (ws.target_dir(spec["name"]) / "candidate.py").write_text(
            f"import math\n\nimport torch\n\n\n@torch.compile(dynamic=False{option})\ndef _gelu(x):\n    return {gelu}\n"
            "\n\ndef kernel(x):\n    return _gelu(x)\n")
        out.row("kb_gelu", mode=mode, expected="faster" if mode == "default" else "a real verdict",
                **cli_verify(ws, spec["name"], 3 if dry else 5, left))
    shutil.rmtree(ws.root, ignore_errors=True)


STEPS: dict[str, tuple[str, Callable[[Out, float, str, bool], None]]] = {
    "1": ("overhead", step_overhead), "2": ("verify_rmsnorm", step_verify_rmsnorm),
    "5": ("adversarial", step_adversarial), "6": ("aa", step_aa_and_int4), "3": ("kb_softmax", step_kb_softmax),
    "4": ("kb_gelu", step_kb_gelu),
}


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--steps", default=STEP_ORDER, help=f"comma-separated step numbers (default {STEP_ORDER})")
    parser.add_argument("--budget-s", type=float, default=540.0, help="wall-clock seconds for every step together")
    parser.add_argument("--dry-run", action="store_true", help="CPU, tiny shapes: checks the script itself")
    args = parser.parse_args(argv)
    steps = [s.strip() for s in args.steps.split(",") if s.strip()]
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        parser.error(f"unknown step(s) {', '.join(unknown)}: choose from {', '.join(STEPS)}")
    args.steps = steps
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    device = "cpu" if args.dry_run else "cuda"
    budget = Budget(args.budget_s)
    out = Out(args.out_dir)
    out.row("start", steps=args.steps, budget_s=args.budget_s, device=device, python=sys.executable)
    pending = list(args.steps)
    while pending:
        step = pending[0]
        name, fn = STEPS[step]
        share = budget.share(step, pending)
        started = time.monotonic()
        try:
            fn(out, share, device, args.dry_run)
        except Exception as err:  # noqa: BLE001 - one broken step must not lose the others
            out.row(name, error=f"{type(err).__name__}: {err}"[:1000])
        out.row("step_done", name=name, share_s=round(share, 1), wall_s=round(time.monotonic() - started, 1))
        pending.pop(0)
    out.row("end", left_s=round(budget.left(), 1))
    out.handle.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
