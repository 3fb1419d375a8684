"""``verify``: is the candidate faster than the baseline? Interleaved ABBA rounds, one judge, one verdict.

Round r runs baseline then candidate when r is even, candidate then baseline when r is odd
(B C | C B | B C ...), each run a fresh process with fresh inputs. Verdicts:

* ``incorrect``: a candidate run failed a correctness check (reason: the run's ``<check>: <detail>``);
* ``invalid``: the baseline failed its own check, a run broke the protocol (crash, hang, no or two JSON
  lines), the generated baseline or contract was edited, a script changed between rounds, or a contract field
  (target, shapes, dtype, rotation, bytes, contract hash, device ...) differs between runs;
* ``faster`` / ``slower`` / ``inconclusive``: ``verdict.decide`` on the paired per-round times; only faster
  and slower carry a speedup and its interval.

It stops at the first incorrect/invalid run (fail fast). ``progress(done, total, message)`` is called after
each run; ``cancel`` (a threading.Event) stops between runs, and a KeyboardInterrupt inside a run reaches the
runner, which kills the run's process group.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

from hotkernel.errors import HotkernelError
from hotkernel.manifest.python import user_python
from hotkernel.run import runner
from hotkernel.run.bench import (
    CONTRACT_FIELDS,
    DEFAULT_TIMEOUT_S,
    Progress,
    display_path,
    judge_process,
    run_one,
    sample_stats,
    script_path,
    target_context,
)
from hotkernel.run.models import RunSummary, SideSummary, VerifyResult
from hotkernel.run.verdict import DEFAULT_ALPHA, MIN_EPSILON, decide
from hotkernel.workspace.paths import Workspace

ROLE_LETTER = {"baseline": "B", "candidate": "C"}
VERSION_KEYS = {
    "torch": ("torch", "torch_version"),
    "triton": ("triton", "triton_version"),
    "python": ("python_version",),
    "cuda": ("cuda", "cuda_version"),
}


def round_order(round_index: int) -> tuple[str, str]:
    """The two roles of round ``round_index`` in ABBA order."""
    return ("baseline", "candidate") if round_index % 2 == 0 else ("candidate", "baseline")


def contract_mismatch(reference: dict[str, Any], run: RunSummary) -> str | None:
    """``contract_fields_match: ...`` when ``run`` disagrees with ``reference`` on a contract field."""
    data = run.data or {}
    for field in CONTRACT_FIELDS:
        if reference.get(field) != data.get(field):
            return (
                f"contract_fields_match: {field} of the {run.role} run {run.index + 1} is "
                f"{data.get(field)!r}, expected {reference.get(field)!r}"
            )
    return None


def script_changed(first: dict[str, dict[str, Any]], run: RunSummary) -> str | None:
    """``script_unchanged: ...`` when a role's script hash moved between its runs (edited during verify)."""
    data = run.data or {}
    earlier = first.setdefault(run.role, data)
    if earlier.get("script_sha256") != data.get("script_sha256"):
        return f"script_unchanged: the {run.role} script changed during verify (run {run.index + 1})"
    return None


def judge_run(
    run: RunSummary, reference: dict[str, Any] | None, first_by_role: dict[str, dict[str, Any]]
) -> tuple[str, str] | None:
    """(verdict, reason) when ``run`` ends the verify early (incorrect / invalid), else None."""
    if run.role == "baseline" and run.status != "ok":
        return "invalid", f"baseline_failed: {run.reason}"
    if run.status == "incorrect":
        return "incorrect", run.reason or "incorrect: no reason given"
    if run.status != "ok":
        return "invalid", run.reason or "invalid: no reason given"
    if reference is not None:
        mismatch = contract_mismatch(reference, run)
        if mismatch:
            return "invalid", mismatch
    changed = script_changed(first_by_role, run)
    if changed:
        return "invalid", changed
    return None


def _versions(data: dict[str, Any]) -> dict[str, str]:
    found = {}
    for name, keys in VERSION_KEYS.items():
        for key in keys:
            if data.get(key):
                found[name] = str(data[key])
                break
    versions = data.get("versions")
    if isinstance(versions, dict):
        found.update({str(k): str(v) for k, v in versions.items() if v})
    return found


def integrity_problem(ws: Workspace, baseline: Path, resolved: dict[str, Any] | None) -> str | None:
    """Why the workspace of the baseline's target is not intact (``check_workspace_integrity``), or None."""
    if baseline.parent.parent != ws.targets_dir.resolve():
        return None
    try:
        return runner.check_workspace_integrity(ws, baseline.parent.name, resolved)
    except HotkernelError as err:
        return str(err)


def verify(
    ws: Any,
    baseline: str | Path,
    candidate: str | Path,
    *,
    n: int,
    python: str | None = None,
    alpha: float | None = None,
    epsilon: float | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    ceiling_gbps: float | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> VerifyResult:
    """Interleave ``n`` rounds of baseline and candidate (ABBA), judge them, and return the verdict."""
    if n < 1:
        raise HotkernelError(f"verify: need -n >= 1 rounds, got {n} (7 is a good start)")
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    epsilon = MIN_EPSILON if epsilon is None else epsilon
    paths = {"baseline": script_path(ws, baseline, "baseline"), "candidate": script_path(ws, candidate, "candidate")}
    python = user_python(ws, python, probe=False)
    resolved = target_context(ws, paths["baseline"])  # one read of the manifest for every run
    contexts = {
        "baseline": resolved,
        "candidate": resolved
        if paths["candidate"].parent == paths["baseline"].parent
        else target_context(ws, paths["candidate"]),
    }
    runs: list[RunSummary] = []
    order: list[str] = []
    ended: tuple[str, str] | None = None
    reference: dict[str, Any] | None = None
    first_by_role: dict[str, dict[str, Any]] = {}
    times: dict[str, list[float]] = {"baseline": [], "candidate": []}
    rounds_completed = 0
    total = 2 * n
    problem = integrity_problem(ws, paths["baseline"], resolved)
    if problem:
        ended = ("invalid", problem if ":" in problem else f"baseline_unchanged: {problem}")
    rounds = range(0 if ended else n)  # an integrity problem ends it before any process starts
    with judge_process(ws, python) if rounds else contextlib.nullcontext() as judge:
        for round_index in rounds:
            if ended:
                break
            for role in round_order(round_index):
                if cancel is not None and cancel.is_set():
                    ended = ("invalid", "cancelled: verify was cancelled before it finished")
                    break
                run = run_one(
                    ws,
                    paths[role],
                    python=python,
                    role=role,
                    index=round_index,
                    timeout_s=timeout_s,
                    ceiling_gbps=ceiling_gbps,
                    judge=judge,
                    resolved=contexts[role],
                )
                runs.append(run)
                order.append(ROLE_LETTER[role])
                ended = judge_run(run, reference, first_by_role)
                if reference is None and run.status == "ok" and run.data:
                    reference = {k: run.data.get(k) for k in CONTRACT_FIELDS}
                if progress is not None:
                    ms = f" {run.ms:.4f} ms" if run.ms is not None else ""
                    progress(len(runs), total, f"round {round_index + 1}/{n} {role}: {run.status}{ms}")
                if ended:
                    break
                times[role].append(run.ms)  # type: ignore[arg-type]
            else:
                rounds_completed += 1
    last_ok = {
        role: next((r.data for r in reversed(runs) if r.role == role and r.status == "ok" and r.data), {})
        for role in ("baseline", "candidate")
    }
    reference = reference or {}
    versions: dict[str, str] = {}
    for data in (last_ok["baseline"], last_ok["candidate"]):
        versions.update(_versions(data or {}))
    common = dict(
        n=n,
        rounds_completed=rounds_completed,
        order=order,
        alpha=alpha,
        epsilon=epsilon,
        target=reference.get("target"),
        device=reference.get("device"),
        device_kind=reference.get("device_kind"),
        protocol=reference.get("protocol"),
        contract_sha256=reference.get("contract_sha256"),
        contract={k: v for k, v in reference.items() if v is not None},
        baseline=SideSummary(
            script=display_path(ws, paths["baseline"]),
            sha256=(last_ok["baseline"] or {}).get("script_sha256"),
            stats=sample_stats(times["baseline"][:rounds_completed]),
        ),
        candidate=SideSummary(
            script=display_path(ws, paths["candidate"]),
            sha256=(last_ok["candidate"] or {}).get("script_sha256"),
            stats=sample_stats(times["candidate"][:rounds_completed]),
        ),
        per_shape={role: list((data or {}).get("per_shape") or []) for role, data in last_ok.items()},
        versions=versions,
        python=python,
        runs=runs,
    )
    if ended:
        return VerifyResult(verdict=ended[0], reason=ended[1], **common)
    decision = decide(times["baseline"], times["candidate"], alpha=alpha, epsilon=epsilon)
    has_speedup = decision.verdict in ("faster", "slower")
    interval = None
    if has_speedup and decision.speedup_low is not None and decision.speedup_high is not None:
        interval = [decision.speedup_low, decision.speedup_high]
    return VerifyResult(
        verdict=decision.verdict,
        reason=f"{decision.reason}: {decision.summary()}",
        speedup=decision.speedup if has_speedup else None,
        interval=interval,
        decision=decision.as_dict(),
        **common,
    )
