"""Where the wall time of ``hotkernel verify -n 7`` goes, on the lent GPU (or the CPU target with --dry-run).

Steps, each a JSON line in OUT/verify_timing.jsonl:

1. ``cli_cold`` / ``cli_warm``: wall of the CLI ``hotkernel verify -n N --json`` (the first on a machine whose
   page cache has not seen torch yet, when run first), with each run's wall and phases;
2. ``in_process``: the same verify through the library with a progress callback, so the time before the first
   run, between runs and after the last one is measured apart from the runs themselves; its cProfile (tool side)
   is written to OUT/verify_profile.txt (top functions by cumulative time);
3. ``import_script``: ``python -X importtime`` of the baseline and candidate scripts in an interpreter that has
   already imported torch (and torch._dynamo, as the worker does), top entries by cumulative time.

Usage (repo root): ``python3 lab/benchmarks/device/verify_timing.py OUT [--target rmsnorm] [-n 7] [--dry-run]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2].parent
sys.path[:0] = [str(REPO), str(REPO / "lab" / "benchmarks" / "device")]

from contract_v2 import cli_verify, repo_workspace  # noqa: E402

from hotkernel.run.verify import verify  # noqa: E402


def row(out: Path, step: str, **fields: Any) -> None:
    fields = {"step": step, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **fields}
    with open(out / "verify_timing.jsonl", "a", encoding="utf-8") as handle:
        handle.write(json.dumps(fields, default=str) + "\n")
    print(json.dumps(fields, default=str)[:600], flush=True)


def in_process(out: Path, ws: Any, target: str, n: int) -> None:
    marks: list[tuple[float, str]] = []
    started = time.monotonic()
    profiler = cProfile.Profile()
    profiler.enable()
    result = verify(ws, ws.target_dir(target) / "baseline.py", ws.target_dir(target) / "candidate.py", n=n,
                    python=sys.executable, progress=lambda done, total, msg: marks.append((time.monotonic(), msg)))
    profiler.disable()
    ended = time.monotonic()
    walls = [run.wall_s or 0.0 for run in result.runs]
    first_end = marks[0][0] if marks else ended
    gaps = [round(marks[i][0] - marks[i - 1][0] - walls[i], 3) for i in range(1, len(marks))]
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(45)
    (out / "verify_profile.txt").write_text(text.getvalue(), encoding="utf-8")
    row(out, "in_process", target=target, n=n, verdict=result.verdict, speedup=result.speedup,
        wall_s=round(ended - started, 2), runs_s=round(sum(walls), 2),
        before_first_s=round(first_end - started - walls[0], 3) if walls else None,
        gaps_s=gaps, after_last_s=round(ended - marks[-1][0], 3) if marks else None,
        runs=[{"role": r.role, "wall_s": r.wall_s, "phases_s": (r.data or {}).get("phases_s")} for r in result.runs])


def import_profile(out: Path, ws: Any, target: str) -> None:
    for role in ("baseline", "candidate"):
        script = ws.target_dir(target) / f"{role}.py"
        code = ("import torch, importlib.util, sys\n"
                "try:\n import torch._dynamo\nexcept Exception: pass\n"
                "import time; t = time.perf_counter()\n"
                f"s = importlib.util.spec_from_file_location('hk_probe', {str(script)!r})\n"
                "m = importlib.util.module_from_spec(s); s.loader.exec_module(m)\n"
                "print('IMPORT_S', round(time.perf_counter() - t, 3), file=sys.stderr)\n")
        proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                              cwd=ws.root, timeout=120)
        lines = proc.stderr.splitlines()
        marker = next((i for i, line in enumerate(lines) if "torch._dynamo" in line and "|" in line), 0)
        after = [line for line in lines[marker + 1:] if line.startswith("import time:")]

        def cumulative(line: str) -> int:
            try:
                return int(line.split("|")[1])
            except (IndexError, ValueError):
                return 0

        top = sorted(after, key=cumulative, reverse=True)[:25]
        total = next((line for line in lines if line.startswith("IMPORT_S")), None)
        row(out, "import_script", target=target, role=role, import_s=total, top=top, rc=proc.returncode,
            tail=proc.stderr[-400:] if proc.returncode else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--target", default="rmsnorm")
    parser.add_argument("-n", type=int, default=7)
    parser.add_argument("--dry-run", action="store_true", help="the CPU target, n=2")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    target, n = ("cpu_rmsnorm", 2) if args.dry_run else (args.target, args.n)
    ws = repo_workspace()
    os.environ["HOTKERNEL_PYTHON"] = sys.executable
    for step in ("cli_cold", "cli_warm"):
        row(args.out, step, target=target, n=n, **cli_verify(ws, target, n, 300))
    in_process(args.out, ws, target, n)
    import_profile(args.out, ws, target)


if __name__ == "__main__":
    main()
