"""GPU MODE tasks on one GPU: import, A/A, and destination-passing submissions (correct, untouched, low precision).

Usage (device, repo root, after ``. lab/benchmarks/device/env.sh``)::

    python3 lab/benchmarks/device/gpumode_check.py OUT_DIR [--problems DIR] [--rounds 5] [--budget-s 240]

``--problems`` is a GPU MODE ``problems/<suite>`` folder (default: ``lab/gpumode/problems/hk_pmpp``, this
project's own tasks in GPU MODE's layout). Each task folder is imported into a fresh workspace with
``hotkernel import gpumode``; then every imported target gets an A/A verify (the untouched rendered candidate), and
every submission ``lab/gpumode/submissions/<task>_<kind>.py`` (GPU MODE's ``custom_kernel(data)`` form) is
verified through the one-line adapter the rendered candidate documents. One JSON line per step goes to
``OUT_DIR/gpumode.jsonl``; a summary is printed at the end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO)]

from hotkernel.suites.importer import import_suite  # noqa: E402
from hotkernel.workspace.paths import Workspace  # noqa: E402

SUBMISSIONS = REPO / "lab" / "gpumode" / "submissions"
CANDIDATE = '''"""{doc}"""

import os
import sys

import torch  # noqa: F401

WHO = "hotkernel lab: GPU MODE submission {name} (lab/gpumode/submissions)"
_TARGETS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TARGETS_DIR not in sys.path:
    sys.path.insert(0, _TARGETS_DIR)

import hk_contract  # noqa: E402

{source}


def kernel(*data):  # the adapter from GPU MODE's custom_kernel(data) form
    return custom_kernel(tuple(data))


if __name__ == "__main__":
    hk_contract.main(__file__)
'''


def verify(ws: Workspace, name: str, candidate: str, rounds: int, timeout_s: float) -> dict[str, Any]:
    target = ws.target_dir(name)
    argv = [
        sys.executable,
        "-m",
        "hotkernel",
        "verify",
        str(target / "baseline.py"),
        str(target / candidate),
        "-n",
        str(rounds),
        "--json",
    ]
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=ws.root, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"verdict": None, "reason": f"verify ran past {timeout_s:.0f} s", "wall_s": timeout_s}
    wall = round(time.monotonic() - started, 1)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        return {"verdict": None, "reason": (proc.stderr.strip().splitlines() or ["no output"])[-1], "wall_s": wall}
    keep = ("verdict", "reason", "speedup", "interval", "rounds_completed", "stopped")
    return {**{key: data.get(key) for key in keep}, "wall_s": wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--problems", type=Path, default=REPO / "lab" / "gpumode" / "problems" / "hk_pmpp")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=240.0)
    parser.add_argument("--verify-timeout-s", type=float, default=120.0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    log_path = args.out / "gpumode.jsonl"
    rows: list[dict[str, Any]] = []

    def log(**row: Any) -> None:
        rows.append(row)
        with log_path.open("a") as handle:
            handle.write(json.dumps(row) + "\n")

    deadline = time.monotonic() + args.budget_s
    tasks = sorted(p for p in args.problems.iterdir() if (p / "task.yml").is_file())
    with tempfile.TemporaryDirectory(prefix="hk-gpumode-") as root:
        ws = Workspace(Path(root))
        imported: list[tuple[str, str]] = []
        for task in tasks:
            started = time.monotonic()
            result = import_suite(ws, "gpumode", task)
            for item in result.imported:
                imported.append((task.name, item.target))
                log(
                    step="import",
                    task=task.name,
                    target=item.target,
                    shapes=item.shapes,
                    wall_s=round(time.monotonic() - started, 1),
                )
            for skip in result.skipped:
                log(step="import", task=task.name, skipped=skip.reason)
        for task, target in imported:
            if time.monotonic() > deadline:
                log(step="aa", task=task, target=target, skipped="budget")
                continue
            log(
                step="aa",
                task=task,
                target=target,
                **verify(ws, target, "candidate.py", args.rounds, args.verify_timeout_s),
            )
            for submission in sorted(SUBMISSIONS.glob(f"{task.removesuffix('_py')}_*.py")):
                if time.monotonic() > deadline:
                    log(step="submission", task=task, submission=submission.stem, skipped="budget")
                    continue
                text = submission.read_text()
                doc = text.split('"""')[1] if text.startswith('"""') else submission.stem
                body = text.split('"""', 2)[2].strip() if text.startswith('"""') else text
                name = f"cand_{submission.stem}.py"
                (ws.target_dir(target) / name).write_text(CANDIDATE.format(doc=doc, name=submission.stem, source=body))
                log(
                    step="submission",
                    task=task,
                    submission=submission.stem,
                    **verify(ws, target, name, args.rounds, args.verify_timeout_s),
                )
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
