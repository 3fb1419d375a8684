"""``bench``: run one script ``n`` times after ``warmup`` runs and summarise its headline times.

Each run is one orchestrator process started by ``runner.run_script`` (fresh inputs, isolated worker, one
judge process for the whole bench). A crash, hang, missing or doubled JSON line comes back as a run with
status ``error``/``invalid`` and a reason; bench stops there and reports it, never a traceback.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hotkernel.errors import HotkernelError
from hotkernel.manifest.python import user_python
from hotkernel.run import runner
from hotkernel.run.models import BenchResult, RunSummary, SampleStats
from hotkernel.run.runstore import save_run
from hotkernel.workspace.paths import Workspace

Progress = Callable[[int, int, str], None]
DEFAULT_TIMEOUT_S = 600.0


def sample_stats(samples: list[float]) -> SampleStats:
    """Mean, sample std (n-1), min and median of ``samples`` (every sample kept, in order)."""
    if not samples:
        return SampleStats(n=0)
    return SampleStats(
        n=len(samples),
        mean_ms=statistics.fmean(samples),
        std_ms=statistics.stdev(samples) if len(samples) > 1 else 0.0,
        min_ms=min(samples),
        median_ms=statistics.median(samples),
        samples_ms=list(samples),
    )


def summarize_outcome(outcome: Any, *, role: str, index: int) -> RunSummary:
    """Turn a ``runner.RunOutcome`` into a RunSummary (status/reason/ms/wall_s and the run's JSON line)."""
    data = getattr(outcome, "data", None)
    if data is not None and not isinstance(data, dict):
        data = None
    status = getattr(outcome, "status", None) or (data or {}).get("status") or "error"
    if status not in ("ok", "incorrect", "invalid", "error"):
        status = "invalid"
    reason = getattr(outcome, "reason", None) or (data or {}).get("reason")
    ms = getattr(outcome, "ms", None)
    if ms is None and data is not None:
        ms = data.get("ms")
    if status == "ok" and (not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms <= 0):
        status, reason = "invalid", f"single_protocol_line: run reported ok but no usable ms ({ms!r})"
    if status != "ok" and not reason:
        reason = f"{status}: the run gave no reason"
    wall_s = getattr(outcome, "wall_s", None)
    if wall_s is None and data is not None:
        wall_s = data.get("wall_s")
    return RunSummary(
        role=role,
        index=index,
        status=status,
        reason=reason,
        ms=float(ms) if isinstance(ms, (int, float)) and status == "ok" else None,
        wall_s=float(wall_s) if isinstance(wall_s, (int, float)) else None,
        data=data,
    )


def script_path(ws: Workspace, script: str | Path, what: str) -> Path:
    """``script`` resolved inside the workspace; it must exist."""
    path = ws.inside(script, what=what)
    if not path.is_file():
        raise HotkernelError(
            f"{what} {str(script)!r} does not exist: give a rendered script such as "
            "targets/NAME/candidate.py (run `hotkernel sync` to render missing ones)"
        )
    targets = ws.targets_dir.resolve()
    if path.suffix != ".py" or path.parent.parent != targets or not (path.parent / "baseline.py").is_file():
        raise HotkernelError(
            f"{what} {str(script)!r} is not a target script: give targets/NAME/baseline.py, "
            "targets/NAME/candidate.py or another .py file beside them"
        )
    return path


def display_path(ws: Workspace, path: Path) -> str:
    """``path`` relative to the workspace root, POSIX style."""
    try:
        return path.relative_to(ws.root.resolve()).as_posix()
    except ValueError:
        return str(path)


@contextmanager
def judge_process(ws: Workspace, python: str, compile_warm: bool = False) -> Iterator[Any]:
    """One ready ``runner.JudgeProcess`` for a whole bench/verify, closed (its process group killed) afterwards.
    Its start is the interpreter's torch probe (``user_python(..., probe=False)``): no second import first.
    ``compile_warm``: ``runner.compile_warm_for`` of the scripts it runs."""
    with runner.JudgeProcess(ws, python=python, compile_warm=compile_warm) as judge:
        judge.ensure_ready()
        yield judge


def target_context(ws: Workspace, script: Path) -> dict[str, Any] | None:
    """The manifest's resolved entry of the target ``script`` belongs to (read once per bench/verify)."""
    return runner.resolved_from_manifest(ws, script.parent.name)


def run_one(
    ws: Workspace,
    script: Path,
    *,
    python: str,
    role: str,
    index: int,
    timeout_s: float,
    ceiling_gbps: float | None,
    judge: Any,
    resolved: dict[str, Any] | None = None,
    cancel: threading.Event | None = None,
    rotation: list[int] | None = None,
) -> RunSummary:
    """One run of ``script`` through the runner, summarised; anticipated runner errors become errors.
    ``cancel`` set while it runs: the run is killed and comes back cancelled. ``rotation``: input sets per shape."""
    try:
        outcome = runner.run_script(
            ws,
            script,
            python=python,
            role=role,
            timeout_s=timeout_s,
            ceiling_gbps=ceiling_gbps,
            judge=judge,
            resolved=resolved,
            cancel=cancel,
            rotation=rotation,
        )
    except HotkernelError as err:
        return RunSummary(role=role, index=index, status="error", reason=f"crashed: {err}")
    return summarize_outcome(outcome, role=role, index=index)


def bench(
    ws: Workspace,
    script: str | Path,
    *,
    n: int,
    warmup: int = 1,
    python: str | None = None,
    role: str = "candidate",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    ceiling_gbps: float | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> BenchResult:
    """Run ``script`` ``warmup`` + ``n`` times; stop at the first failing run and report it."""
    if n < 1 or warmup < 0:
        raise HotkernelError(f"bench: need -n >= 1 and --warmup >= 0, got n={n}, warmup={warmup}")
    path = script_path(ws, script, "script")
    python = user_python(ws, python, probe=False)
    resolved = target_context(ws, path)
    runs: list[RunSummary] = []
    total = warmup + n
    failure: RunSummary | None = None
    with judge_process(ws, python, runner.compile_warm_for([path])) as judge:
        for step in range(total):
            if cancel is not None and cancel.is_set():
                failure = RunSummary(role=role, index=step - warmup, status="error", reason="cancelled: by request")
                break
            run = run_one(
                ws,
                path,
                python=python,
                role=role,
                index=step - warmup,
                timeout_s=timeout_s,
                ceiling_gbps=ceiling_gbps,
                judge=judge,
                resolved=resolved,
                cancel=cancel,
            )
            runs.append(run)
            if progress is not None:
                label = "warmup" if step < warmup else "run"
                progress(
                    step + 1,
                    total,
                    f"{label} {step + 1}/{total}: {run.status}" + (f" {run.ms:.4f} ms" if run.ms is not None else ""),
                )
            if run.status != "ok":
                failure = run
                break
    timed = [r for r in runs if r.index >= 0 and r.status == "ok" and r.ms is not None]
    first_ok = next((r for r in runs if r.status == "ok" and r.data), None)
    data = first_ok.data if first_ok and first_ok.data else {}
    return save_run(  # the run store keeps every result the runner produced
        ws,
        BenchResult(
            script=display_path(ws, path),
            status="ok" if failure is None else failure.status,
            reason=None if failure is None else failure.reason,
            n=n,
            warmup=warmup,
            stats=sample_stats([r.ms for r in timed if r.ms is not None]),
            target=data.get("target"),
            device=data.get("device"),
            contract={k: data.get(k) for k in CONTRACT_FIELDS if k in data},
            per_shape=list(data.get("per_shape") or []),
            python=python,
            runs=runs,
        ),
    )


# Fields every run of one target must agree on (baseline and candidate alike); verify compares them.
CONTRACT_FIELDS = (
    "protocol",
    "target",
    "shapes",
    "dtype",
    "seed_policy",
    "rotation",
    "bytes",
    "flops",
    "contract_sha256",
    "device",
    "device_kind",
)
