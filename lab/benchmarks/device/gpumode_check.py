"""GPU MODE tasks on one GPU: import, A/A, and destination-passing submissions (correct, untouched, low precision).

Usage (device, repo root, after ``. lab/benchmarks/device/env.sh``)::

    python3 lab/benchmarks/device/gpumode_check.py OUT_DIR [--problems DIR] [--rounds 5] [--budget-s 240]

``--problems`` is a GPU MODE ``problems/<suite>`` folder (default: ``lab/gpumode/problems/hk_pmpp``, this
project's own tasks in GPU MODE's layout). Each task folder is imported into a fresh workspace with
``hotkernel import gpumode``; then every imported target gets an A/A verify (the untouched rendered candidate), and
every submission ``lab/gpumode/submissions/<task>_<kind>.py`` (GPU MODE's ``custom_kernel(data)`` form) is
verified through the one-line adapter the rendered candidate documents. One JSON line per step goes to
``OUT_DIR/gpumode.jsonl``; a summary is printed at the end.

``--workspace WS`` verifies a workspace already imported into instead (``gpumode_real.sh`` imports GPU MODE's own
tasks task by task first): an A/A verify of every target in its manifest, then, where the target's task folder
holds the task's own ``submission.py``, that submission pasted above the one-line adapter the rendered candidate
documents (``kernel = custom_kernel``), one JSON line a verify (target, kind, verdict, reason, wall_s)::

    python3 lab/benchmarks/device/gpumode_check.py OUT_DIR --workspace WS [--budget-s 1200]
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


ADAPTER_MARK = "# GPU MODE's form"
UNTOUCHED_MARK = "# hotkernel: untouched generated candidate"


def submission_candidate(rendered: str, submission: str) -> str:
    """The rendered candidate with a GPU MODE ``submission.py`` pasted above its one-line adapter, the adapter on
    (``kernel = custom_kernel``, or ``kernel = lambda *data: custom_kernel(tuple(data))`` where data is several
    inputs), after the baseline's load, so the task folder, with ``task.py`` and ``utils.py``, is on sys.path."""
    head, mark, tail = rendered.partition(ADAPTER_MARK)
    lines = tail.splitlines(keepends=True)
    adapter = next(
        (i for i, line in enumerate(lines) if line.startswith("# kernel = ") and "custom_kernel" in line), None
    )
    if not mark or adapter is None:
        raise ValueError("the rendered candidate documents no `kernel = ...custom_kernel...` adapter")
    lines[adapter] = lines[adapter].removeprefix("# ")
    tail = "".join(line for line in lines if not line.startswith(UNTOUCHED_MARK))
    return f"{head}# the task's own submission.py, as GPU MODE ships it\n{submission.strip()}\n\n\n{mark}{tail}"


def verify_workspace(
    ws: Workspace, log_path: Path, budget_s: float, rounds: int, timeout_s: float, first: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """An A/A verify of every target in ``ws``'s manifest and a verify of each task's own submission.py, in
    manifest order (targets whose name holds a word of ``first`` before the others) while ``budget_s`` lasts; one
    JSON line a verify to ``log_path``."""
    from hotkernel.manifest.load import load_manifest

    rows: list[dict[str, Any]] = []
    deadline = time.monotonic() + budget_s
    targets = load_manifest(ws.manifest).targets if ws.manifest.is_file() else {}
    ahead = [name for name in targets if any(word in name for word in first)]
    for name, spec in [(name, targets[name]) for name in ahead + [n for n in targets if n not in ahead]]:
        source = str(getattr(spec, "from_", None) or "")
        jobs: list[tuple[str, str, Path | None]] = [("aa", "candidate.py", None)]
        submission = (ws.root / source.split(":", 1)[0]).parent / "submission.py" if source else None
        if submission is not None and submission.is_file():
            jobs.append(("submission", f"cand_{name}_submission.py", submission))
        for kind, candidate, shipped in jobs:
            row: dict[str, Any] = {"target": name, "kind": kind}
            left = deadline - time.monotonic()
            if left <= 5:
                row.update(verdict=None, reason="budget", wall_s=0.0)
            else:
                try:
                    if shipped is not None:
                        rendered = (ws.target_dir(name) / "candidate.py").read_text()
                        text = submission_candidate(rendered, shipped.read_text())
                        (ws.target_dir(name) / candidate).write_text(text)
                    row.update(verify(ws, name, candidate, rounds, min(timeout_s, left)))
                except (OSError, ValueError) as err:
                    row.update(verdict=None, reason=f"{type(err).__name__}: {err}", wall_s=0.0)
            rows.append(row)
            with log_path.open("a") as handle:
                handle.write(json.dumps(row) + "\n")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--problems", type=Path, default=REPO / "lab" / "gpumode" / "problems" / "hk_pmpp")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--budget-s", type=float, default=240.0)
    parser.add_argument("--verify-timeout-s", type=float, default=120.0)
    parser.add_argument("--workspace", type=Path, help="verify this workspace's targets instead of importing")
    parser.add_argument("--jsonl", default="gpumode.jsonl", help="the JSON-lines file under OUT_DIR")
    parser.add_argument("--first", default="", help="with --workspace: words (space-separated); targets whose "
                        "name holds one are verified first")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.workspace is not None:
        ws = Workspace(args.workspace.resolve())
        found = verify_workspace(
            ws, args.out / args.jsonl, args.budget_s, args.rounds, args.verify_timeout_s, tuple(args.first.split())
        )
        counts: dict[str, int] = {}
        for row in found:
            key = f"{row['kind']}:{row.get('verdict')}"
            counts[key] = counts.get(key, 0) + 1
        print(json.dumps({"verifies": len(found), "counts": counts}))
        return 0
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
