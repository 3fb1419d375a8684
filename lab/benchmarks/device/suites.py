"""KernelBench level 1 as hotkernel targets on one H200: imports, memory fit, A/A and torch.compile verifies.

Usage: ``PYTHONPATH=<repo> python lab/benchmarks/device/suites.py OUT_DIR [--budget-s 330] [--scale 0.125]
[--count 20] [--problems 19,23] [--kinds aa] [--no-fit] [--verify-timeout-s 120] [--dry-run]`` (``lab/benchmarks/device/suites.sh`` is the exact device command; the problem files come
from ``$HK_KB_DIR``, copied into temporary workspaces, never into the repository). Every result is appended to
``OUT_DIR/suites.jsonl`` as it comes (``step`` names it), and a summary is printed at the end:

1. ``import``: all problems imported at KernelBench's own shapes (``hotkernel import kernelbench``): how many
   import, each skipped one with its reason;
2. ``fit``: for each imported problem, whether a run fits the GPU's free memory at those shapes (the contract's
   own ``fit_rotation`` on the probed input, parameter and output bytes): fit, or refused before the run with
   the numbers;
3. ``verify``: the first ``--count`` imported problems imported again at ``--scale``, each verified twice with
   ``-n 3``: the untouched candidate (A/A: expect slower/inconclusive, never incorrect or faster by much; all of
   them first) and a candidate that is ``torch.compile`` of the baseline; verdict, speedup and wall time per
   verify. Stops when ``--budget-s`` runs out (what is left is logged as skipped). ``--scale 1 --kinds aa
   --no-fit --problems ...`` is the sweep at KernelBench's own shapes (steps 1-2 skipped, the list verified).

``--dry-run``: the CPU, a handful of small problems, tiny shapes, ``-n 1`` and the eager compile backend (what
the CPU test runs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO)]

from hotkernel.manifest import load_manifest, resolved_target  # noqa: E402
from hotkernel.run.render import contract_module  # noqa: E402
from hotkernel.run.targets import probe_problems  # noqa: E402
from hotkernel.suites.importer import import_suite  # noqa: E402
from hotkernel.workspace.paths import Workspace  # noqa: E402

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "bool": 1,
               "int8": 1, "uint8": 1}
DRY_PROBLEMS = [1, 19, 95]  # small at a tiny scale on two CPU cores
COMPILED = '''"""torch.compile of the baseline ({backend}): the competitor KernelBench compares against."""
import os
import sys

import torch

WHO = "lab/benchmarks/device/suites.py (torch.compile of the baseline)"
_TARGETS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TARGETS_DIR not in sys.path:
    sys.path.insert(0, _TARGETS_DIR)

import hk_contract  # noqa: E402

_compiled = torch.compile(hk_contract.load_function({source!r}, os.path.dirname(_TARGETS_DIR)), backend={backend!r})


def kernel(*args):
    return _compiled(*args)


if __name__ == "__main__":
    hk_contract.main(__file__)
'''


class Log:
    """Appends one JSON object per line to OUT_DIR/suites.jsonl and keeps them for the summary."""

    def __init__(self, out: Path) -> None:
        self.path = out / "suites.jsonl"
        self.rows: list[dict[str, Any]] = []

    def __call__(self, **row: Any) -> None:
        self.rows.append(row)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row, sort_keys=True) + "\n")


def free_bytes(device: str) -> int | None:
    """Free GPU memory (nvidia-smi, GPU 0) or the host's MemAvailable (the contract's own reading)."""
    if device == "cpu":
        return contract_module().host_available_bytes()
    text = subprocess.run(["nvidia-smi", "--query-gpu=memory.free", "--format=csv,noheader,nounits", "-i", "0"],
                          capture_output=True, text=True, check=True).stdout
    return int(text.split()[0]) << 20


def tensor_bytes(entries: list[dict[str, Any]], dtype_bytes: int) -> int:
    """Bytes of probed inputs: tensors (floats at the target's dtype), the leaves of structured inputs, the
    Model's ``state`` as the probe sized it; Python scalars hold none."""
    total = 0
    for entry in entries:
        kind = entry.get("kind", "tensor")
        if kind == "state":
            total += int(entry.get("bytes") or 0)
        elif kind == "tree":
            total += tensor_bytes(entry.get("leaves") or [], dtype_bytes)
        elif kind == "tensor":
            count = 1
            for dim in entry["shape"]:
                count *= int(dim)
            total += count * (dtype_bytes if entry.get("floating") else DTYPE_BYTES.get(entry["dtype"], 8))
    return total


def is_model_state(entry: dict[str, Any]) -> bool:
    return "param" in entry or entry.get("kind") == "state"


def step_import_and_fit(log: Log, kb: Path, device: str, problems: list[int] | None, dtype_bytes: int) -> list[int]:
    """Steps 1 and 2; the numbers of the problems that imported."""
    with tempfile.TemporaryDirectory(prefix="hk-suites-full-") as root:
        ws = Workspace(Path(root))
        started = time.monotonic()
        result = import_suite(ws, "kernelbench", kb, problems=problems, device=device)
        log(step="import", imported=len(result.imported), skipped=len(result.skipped),
            wall_s=round(time.monotonic() - started, 1), skipped_reasons={s.problem: s.reason for s in result.skipped})
        free = free_bytes(device)
        paths = [{"path": str(ws.root / item.problem), "scale": None, "cases": None} for item in result.imported]
        fit = contract_module().fit_rotation
        for item, reply in zip(result.imported, probe_problems(ws, paths), strict=True):
            probe = reply["probe"]
            entries = probe["shapes"][0]
            own = tensor_bytes([e for e in entries if not is_model_state(e)], dtype_bytes)
            params = tensor_bytes([e for e in entries if is_model_state(e)], dtype_bytes)
            out = tensor_bytes(probe.get("outputs") or [], dtype_bytes)
            _, refusal = fit(own, params, out, 2, free, "cuda" if device == "cuda" else "cpu")
            log(step="fit", target=item.target, fits=refusal is None, refusal=refusal, input_bytes=own,
                param_bytes=params, output_bytes=out, free_bytes=free)
        return [int(item.target.split("_")[1]) for item in result.imported]


def hotkernel_verify(ws: Workspace, name: str, candidate: str, rounds: int, timeout_s: float) -> dict[str, Any]:
    target = ws.target_dir(name)
    argv = [sys.executable, "-m", "hotkernel", "verify", str(target / "baseline.py"), str(target / candidate),
            "-n", str(rounds), "--json"]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=ws.root, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"verdict": None, "reason": f"verify ran past {timeout_s:.0f} s", "wall_s": round(timeout_s, 1)}
    wall = round(time.monotonic() - started, 1)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return {"verdict": None, "reason": (proc.stderr.strip().splitlines() or ["no output"])[-1], "wall_s": wall}
    return {"verdict": data.get("verdict"), "reason": data.get("reason"), "speedup": data.get("speedup"),
            "interval": data.get("interval"), "wall_s": wall}


def step_verify(log: Log, kb: Path, device: str, problems: list[int], scale: float, count: int,
                rounds: int, backend: str, deadline: float, kinds: tuple[str, ...] = ("aa", "compile"),
                verify_timeout_s: float = 120.0) -> None:
    with tempfile.TemporaryDirectory(prefix="hk-suites-scaled-") as root:
        ws = Workspace(Path(root))
        result = import_suite(ws, "kernelbench", kb, problems=problems[:count], scale=scale, device=device)
        log(step="import_scaled", scale=scale, imported=len(result.imported), skipped=len(result.skipped))
        manifest = load_manifest(ws.manifest)
        for item in result.imported:
            spec = resolved_target(manifest, item.target)
            compiled = ws.target_dir(item.target) / "compiled.py"
            compiled.write_text(COMPILED.format(source=spec["from"], backend=backend), encoding="utf-8")
        # Every A/A verify first (a few seconds each), then the compiled candidates (each compiles: slower).
        for label, candidate in (("aa", "candidate.py"), ("compile", "compiled.py")):
            if label not in kinds:
                continue
            for item in result.imported:
                left = deadline - time.monotonic()
                if left < 10:
                    log(step="verify", target=item.target, kind=label, skipped="budget spent")
                    continue
                row = hotkernel_verify(ws, item.target, candidate, rounds, min(left, verify_timeout_s))
                log(step="verify", target=item.target, kind=label, shapes=item.shapes, cases=item.cases, **row)


def summary(log: Log) -> list[str]:
    rows = log.rows
    lines = []
    for row in rows:
        if row["step"] == "import":
            lines.append(f"import: {row['imported']} imported, {row['skipped']} skipped ({row['wall_s']} s)")
    fits = [r for r in rows if r["step"] == "fit"]
    if fits:
        lines.append(f"fit at KernelBench's shapes: {sum(r['fits'] for r in fits)} fit, "
                     f"{sum(not r['fits'] for r in fits)} refused before the run")
    for kind in ("aa", "compile"):
        done = [r for r in rows if r["step"] == "verify" and r.get("kind") == kind and "verdict" in r]
        verdicts: dict[str, int] = {}
        for r in done:
            verdicts[str(r["verdict"])] = verdicts.get(str(r["verdict"]), 0) + 1
        walls = [r["wall_s"] for r in done]
        lines.append(f"verify {kind}: {len(done)} run, verdicts {verdicts}, wall max "
                     f"{max(walls, default=0)} s, mean {sum(walls) / max(1, len(walls)):.1f} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--budget-s", type=float, default=330.0)
    parser.add_argument("--scale", type=float, default=0.125)
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--problems", help="problem numbers, e.g. 19,23 (default: all; dry run: 1,19,95)")
    parser.add_argument("--kinds", default="aa,compile", help="verify passes to run: aa, compile or both")
    parser.add_argument("--no-fit", action="store_true", help="skip steps 1-2: verify --problems as given")
    parser.add_argument("--verify-timeout-s", type=float, default=120.0, help="one verify's limit, seconds")
    parser.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.budget_s
    kb = Path(os.environ.get("HK_KB_DIR", REPO.parent / "shared" / "kernelbench" / "level1"))
    args.out.mkdir(parents=True, exist_ok=True)
    log = Log(args.out)
    device = "cpu" if args.dry_run else "cuda"
    problems = [int(p) for p in args.problems.split(",")] if args.problems else DRY_PROBLEMS if args.dry_run else None
    scale = 0.0005 if args.dry_run else args.scale
    count = min(args.count, len(problems or [])) if args.dry_run else args.count
    if args.no_fit and problems:
        imported = problems
    else:
        imported = step_import_and_fit(log, kb, device, problems, 4)
    step_verify(log, kb, device, imported, scale, count, 1 if args.dry_run else 3,
                "eager" if args.dry_run else "inductor", deadline, tuple(args.kinds.split(",")), args.verify_timeout_s)
    for line in summary(log):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
