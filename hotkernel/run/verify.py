"""``verify``: is the candidate faster than the baseline? Interleaved ABBA rounds, one judge, one verdict.

Round r runs baseline then candidate when r is even, candidate then baseline when r is odd
(B C | C B | B C ...), each run a fresh process with fresh inputs. Verdicts:

* ``incorrect``: a candidate run failed a correctness check (reason: the run's ``<check>: <detail>``);
* ``invalid``: the baseline failed its own check, a run broke the protocol (crash, hang, no or two JSON
  lines), the generated baseline or contract was edited, a script changed between rounds, or a contract field
  (target, shapes, dtype, rotation, bytes, contract hash, device ...) differs between runs;
* ``faster`` / ``slower`` / ``inconclusive``: ``verdict.decide_sequential`` on the paired per-round times
  after every round from MIN_ROUNDS on; only faster and slower carry a speedup and its interval.

It stops when the rule decides (``stopped``: ``decided``, ``within_margin``, ``planned_rounds``), at the cap
(``max_rounds``), or at the first incorrect/invalid run (fail fast: ``failed``). ``progress(done, total,
message)`` is called after each run; ``cancel`` (a threading.Event) stops it, the run in flight killed (its
reason starts ``cancelled:``), and a KeyboardInterrupt inside a run reaches the runner, which kills the run's
process group.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
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
from hotkernel.run.runstore import save_run
from hotkernel.run.verdict import (
    DEFAULT_ALPHA,
    MIN_EPSILON,
    MIN_ROUNDS,
    Decision,
    LookPlan,
    Stop,
    decide_sequential,
)
from hotkernel.workspace.paths import Workspace

ROLE_LETTER = {"baseline": "B", "candidate": "C"}
# An inconclusive verify whose interval (high / low - 1) is wider than this many times the margin's own width
# (2 * epsilon) could not have decided at that margin here: the result says so (``noisy``), with the spread.
NOISY_WIDTH_FACTOR = 10.0
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
    for name in CONTRACT_FIELDS:
        if reference.get(name) != data.get(name):
            return (
                f"contract_fields_match: {name} of the {run.role} run {run.index + 1} is "
                f"{data.get(name)!r}, expected {reference.get(name)!r}"
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
    max_rounds: int | None = None,
    judge: runner.JudgeProcess | None = None,
    resolved: dict[str, Any] | None = None,
) -> VerifyResult:
    """Interleave rounds of baseline and candidate (ABBA), judge them, and return the verdict: from round
    MIN_ROUNDS on it stops at the first round the sequential rule decides; still open at ``n`` with a
    difference the margin counts, it goes on up to ``max_rounds`` (default 2n).

    ``judge``: a ready judge the caller keeps open across verifies (``runner.WarmJudge``), left open here; by
    default the verify starts its own and closes it. ``resolved``: the target's manifest entry the caller has
    read already (by default it is read here, once)."""
    if n < 1:
        raise HotkernelError(f"verify: need -n >= 1 rounds, got {n} (7 is a good start)")
    if max_rounds is not None and max_rounds < n:
        raise HotkernelError(f"verify: --max-rounds {max_rounds} is below -n {n}; give at least {n}")
    alpha = DEFAULT_ALPHA if alpha is None else alpha
    epsilon = MIN_EPSILON if epsilon is None else epsilon
    plan = LookPlan.for_rounds(n, max_rounds)
    paths = {"baseline": script_path(ws, baseline, "baseline"), "candidate": script_path(ws, candidate, "candidate")}
    python = user_python(ws, python, probe=False)
    if resolved is None:
        resolved = target_context(ws, paths["baseline"])  # one read of the manifest for every run
    contexts = {
        "baseline": resolved,
        "candidate": resolved
        if paths["candidate"].parent == paths["baseline"].parent
        else target_context(ws, paths["candidate"]),
    }
    state = Rounds(plan=plan, alpha=alpha, epsilon=epsilon, progress=progress)
    problem = integrity_problem(ws, paths["baseline"], resolved)
    if problem:  # an integrity problem ends it before any process starts
        state.ended = ("invalid", problem if ":" in problem else f"baseline_unchanged: {problem}")
    else:
        warm = runner.compile_warm_for([paths["baseline"], paths["candidate"]])
        with contextlib.nullcontext(judge) if judge is not None else judge_process(ws, python, warm) as active:
            active.want_compile_warm(warm)

            def one(role: str, round_index: int) -> RunSummary:
                return run_one(
                    ws,
                    paths[role],
                    python=python,
                    role=role,
                    index=round_index,
                    timeout_s=timeout_s,
                    ceiling_gbps=ceiling_gbps,
                    judge=active,
                    resolved=contexts[role],
                    cancel=cancel,
                    rotation=state.rotation(),
                )

            state.run_all(one, cancel)
    return save_run(ws, state.result(ws, paths, python))  # the run store: what `record RUN_ID` keeps


def clean_run(result: VerifyResult) -> bool:
    """Every run of the verify was judged ok (no failed check, no crash, no cancel): a warm judge may serve on."""
    return result.verdict in ("faster", "slower", "inconclusive") and all(r.status == "ok" for r in result.runs)


CANCELLED = ("invalid", "cancelled: verify was cancelled before it finished")  # before a run or during one


@dataclass
class Rounds:
    """The rounds of one verify as they run: runs, times per role, and the sequential rule after each round."""

    plan: LookPlan
    alpha: float
    epsilon: float
    progress: Progress | None = None
    runs: list[RunSummary] = field(default_factory=list)
    order: list[str] = field(default_factory=list)
    times: dict[str, list[float]] = field(default_factory=lambda: {"baseline": [], "candidate": []})
    ended: tuple[str, str] | None = None
    reference: dict[str, Any] | None = None
    first_by_role: dict[str, dict[str, Any]] = field(default_factory=dict)
    completed: int = 0
    decision: Decision | None = None
    extended: str | None = None

    def run_all(self, one: Callable[[str, int], RunSummary], cancel: threading.Event | None) -> None:
        """Round after round until a run ends the verify, the rule stops it, or the cap is reached."""
        for round_index in range(self.plan.max_rounds):
            for role in round_order(round_index):
                if cancel is not None and cancel.is_set():
                    self.ended = CANCELLED
                    return
                run = one(role, round_index)
                if cancel is not None and cancel.is_set() and run.status != "ok":  # killed in flight: not a failure
                    self.ended = CANCELLED
                    return
                if not self.record_run(run, round_index):
                    return
            self.completed += 1
            if self.stop_after_round():
                return

    def rotation(self) -> list[int] | None:
        """The first ok run's input sets per shape, which every later run of the verify uses (None before it)."""
        if self.reference is None:
            return None
        first = next(r for r in self.runs if r.status == "ok" and r.data)
        shapes = (first.data or {}).get("per_shape") or []
        found = [s.get("rotation") for s in shapes if isinstance(s, dict)]
        return [int(k) for k in found] if found and all(isinstance(k, int) for k in found) else None

    def record_run(self, run: RunSummary, round_index: int) -> bool:
        """Keep ``run``; False when it ends the verify (incorrect / invalid)."""
        self.runs.append(run)
        self.order.append(ROLE_LETTER[run.role])
        self.ended = judge_run(run, self.reference, self.first_by_role)
        if self.reference is None and run.status == "ok" and run.data:
            self.reference = {k: run.data.get(k) for k in CONTRACT_FIELDS}
        if self.progress is not None:
            ms = f" {run.ms:.4f} ms" if run.ms is not None else ""
            total = self.plan.n if self.completed < self.plan.n else self.plan.max_rounds
            self.progress(len(self.runs), 2 * total, f"round {round_index + 1}/{total} {run.role}: {run.status}{ms}")
        if self.ended:
            return False
        self.times[run.role].append(run.ms)  # type: ignore[arg-type]
        return True

    def stop_after_round(self) -> bool:
        """The sequential rule on the rounds so far: True when it stops the verify."""
        if self.completed < MIN_ROUNDS and self.completed < self.plan.max_rounds:
            return False
        self.decision = decide_sequential(
            self.times["baseline"], self.times["candidate"], plan=self.plan, alpha=self.alpha, epsilon=self.epsilon
        )
        if self.decision.stopped in ("decided", "within_margin", "planned_rounds"):
            return True
        if self.completed == self.plan.n and self.completed < self.plan.max_rounds:
            self.extended = (
                f"open after {self.plan.n} rounds with the point estimate {self.decision.speedup:.4f}x outside "
                f"the {100 * self.epsilon:g}% margin: going on up to {self.plan.max_rounds} rounds"
            )
            if self.progress is not None:
                self.progress(2 * self.completed, 2 * self.plan.max_rounds, self.extended)
        return self.completed >= self.plan.max_rounds

    def stopped(self) -> Stop:
        if self.ended:
            return "cancelled" if self.ended[1].startswith("cancelled:") else "failed"
        return self.decision.stopped if self.decision and self.decision.stopped else "max_rounds"

    def result(self, ws: Any, paths: dict[str, Path], python: str) -> VerifyResult:
        """The VerifyResult of the rounds run."""
        runs, rounds_completed = self.runs, self.completed
        last_ok = {
            role: next((r.data for r in reversed(runs) if r.role == role and r.status == "ok" and r.data), {})
            for role in ("baseline", "candidate")
        }
        reference = self.reference or {}
        versions: dict[str, str] = {}
        for data in (last_ok["baseline"], last_ok["candidate"]):
            versions.update(_versions(data or {}))
        sides = {
            role: SideSummary(
                script=display_path(ws, paths[role]),
                sha256=(last_ok[role] or {}).get("script_sha256"),
                stats=sample_stats(self.times[role][:rounds_completed]),
            )
            for role in ("baseline", "candidate")
        }
        common = dict(
            n=self.plan.n,
            max_rounds=self.plan.max_rounds,
            rounds_completed=rounds_completed,
            stopped=self.stopped(),
            extended=self.extended,
            order=self.order,
            alpha=self.alpha,
            epsilon=self.epsilon,
            target=reference.get("target"),
            device=reference.get("device"),
            device_kind=reference.get("device_kind"),
            protocol=reference.get("protocol"),
            contract_sha256=reference.get("contract_sha256"),
            contract={k: v for k, v in reference.items() if v is not None},
            baseline=sides["baseline"],
            candidate=sides["candidate"],
            per_shape={role: list((data or {}).get("per_shape") or []) for role, data in last_ok.items()},
            versions=versions,
            python=python,
            runs=runs,
        )
        if self.ended or self.decision is None:
            ended = self.ended or ("invalid", "cancelled: no round ran")
            return VerifyResult(verdict=ended[0], reason=ended[1], **common)
        decision = self.decision
        has_speedup = decision.verdict in ("faster", "slower")
        interval = None
        if has_speedup and decision.speedup_low is not None and decision.speedup_high is not None:
            interval = [decision.speedup_low, decision.speedup_high]
        return VerifyResult(
            verdict=decision.verdict,
            reason=f"{decision.reason}: {decision.summary()}",
            noisy=noise_note(decision, sides["baseline"], sides["candidate"], reference.get("device_kind")),
            speedup=decision.speedup if has_speedup else None,
            interval=interval,
            decision=decision.as_dict(),
            **common,
        )


def noise_note(decision: Decision, baseline: SideSummary, candidate: SideSummary, device_kind: Any) -> str | None:
    """For an inconclusive verify that was far from deciding: its interval against the margin, each side's
    run-to-run spread (coefficient of variation of its runs' medians) and what narrows it; else None."""
    low, high = decision.speedup_low, decision.speedup_high
    if decision.verdict != "inconclusive" or decision.reason != "interval_overlaps_margin" or not low or not high:
        return None
    width = high / low - 1
    margin = 2 * decision.epsilon
    if margin <= 0 or width <= NOISY_WIDTH_FACTOR * margin:
        return None
    spreads = []
    for name, side in (("baseline", baseline), ("candidate", candidate)):
        stats = side.stats
        if stats.n > 1 and stats.mean_ms and stats.std_ms is not None:
            spreads.append(f"{100 * stats.std_ms / stats.mean_ms:.1f}% ({name})")
    spread = f"; the runs' medians varied by {' and '.join(spreads)} from run to run" if spreads else ""
    quieter = "nothing else running, fewer `threads`" if device_kind == "cpu" else "nothing else on the GPU"
    return (
        f"too noisy here to decide at the {100 * decision.epsilon:g}% margin: the interval "
        f"[{low:.3f}, {high:.3f}] is {100 * width:.0f}% wide, {width / margin:.0f}x the margin's {100 * margin:g}%"
        f"{spread}. A quieter machine ({quieter}) or more rounds (-n) narrows it."
    )
