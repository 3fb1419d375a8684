"""``sync``: render, verify and record what ``plan`` says is out of date; keep a winning candidate in the lock.

The verifies run one at a time in this process (``InlineLane``), one per GPU of this host (``--gpus``), or as Ray
tasks (``--executor ray``): see ``executor.py``. This process alone records, one finished target at a time.
"""

from __future__ import annotations

import ast
import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hotkernel._util.fs import sha256_file
from hotkernel._util.git import git_user_name
from hotkernel._util.nvml import visible_gpu_name
from hotkernel._util.procs import SignalsDeferred, TerminationRaises
from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest import manifest_fingerprint, resolved_target
from hotkernel.reconcile.competitors import sync_competitors
from hotkernel.reconcile.executor import (
    Executor,
    Job,
    LaneExecutor,
    LaneRun,
    LaneStatus,
    Outcome,
    host_lanes,
    job_files,
)
from hotkernel.reconcile.models import SyncItem, SyncReport, failed_item
from hotkernel.reconcile.plan import (
    _AUTO,
    CPU_DEVICE,
    NO_GPU,
    baseline_file_state,
    contract_file_state,
    device_key,
    load_workspace_manifest,
    plan,
    select_names,
    target_state,
)
from hotkernel.reconcile.ray_executor import RayExecutor
from hotkernel.run.render import contract_sha256, render_target
from hotkernel.run.verify import verify
from hotkernel.store.leaderboard import (
    best_rows,
    current_protocol,
    current_records,
    leaderboard_difference,
    leaderboard_rows,
    write_leaderboard,
)
from hotkernel.store.models import RecordResult
from hotkernel.store.record import StoreSnapshot, collect_provenance, record, store_snapshot, tamper_reason
from hotkernel.workspace.lockfile import LockEntry, read_lock, workspace_lock, write_lock
from hotkernel.workspace.paths import Workspace

DEFAULT_ROUNDS = 7
SyncProgress = Callable[[int, int, str], None]  # (runs done, runs planned, "<target>: <what>")


def candidate_who(candidate: Path) -> str | None:
    """The candidate's own module-level ``WHO = "..."`` (read with ast, never imported), if it has one."""
    try:
        tree = ast.parse(candidate.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "WHO"
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node.value.value.strip()
        ):
            return " ".join(node.value.value.split())
    return None


def default_who(ws: Workspace) -> str:
    """Who a sync records as author when the candidate declares no ``WHO``: $HOTKERNEL_WHO, else git's
    user.name, else 'unknown'."""
    who = os.environ.get("HOTKERNEL_WHO", "").strip()
    if who:
        return who
    name = git_user_name(ws.root)
    return f"{name} (via hotkernel sync)" if name else "unknown (recorded by hotkernel sync)"


def manifest_rounds(manifest: Any) -> int:
    """``defaults.n`` from the manifest, else 7."""
    defaults = getattr(manifest, "defaults", None)
    value = getattr(defaults, "n", None) if defaults is not None else None
    return int(value) if isinstance(value, int) and value > 0 else DEFAULT_ROUNDS


def needs_render(ws: Workspace, state: dict[str, Any], entries: dict[str, LockEntry]) -> bool:
    """Render when a file is missing, or stale but untouched (an older render hotkernel itself made).

    A baseline or contract that is neither was edited by hand: it is left alone, and the runner's hash
    check makes the verify ``invalid`` (reason names the file). Delete it to have sync render it again.
    """
    if state["candidate_sha256"] is None:
        return True
    files = (baseline_file_state(ws, state, entries), contract_file_state(state, entries))
    return any(f in ("missing", "stale") for f in files)


def build_executor(
    ws: Workspace,
    *,
    gpus: str | None = None,
    executor: str = "local",
    address: str | None = None,
    python: str | None = None,
) -> Executor | None:
    """The executor the CLI/MCP options name; None for the default (one verify at a time, in this process)."""
    if executor == "ray":
        if gpus is not None:
            raise HotkernelError("--gpus is for --executor local; Ray gives each task one GPU of the cluster")
        return RayExecutor(ws, address=address, python=python)
    if executor != "local":
        raise HotkernelError(f"--executor {quote(executor)}: give 'local' (this host) or 'ray' (a Ray cluster)")
    if address is not None:
        raise HotkernelError("--address is for --executor ray; drop it or add --executor ray")
    return LaneExecutor(host_lanes(ws, gpus, python=python)) if gpus is not None else None


@dataclass
class InlineLane:
    """The default lane: each verify in this process, in the workspace itself, one at a time."""

    ws: Workspace
    python: str | None = None
    name: str = "local"
    kinds: frozenset[str] = frozenset({"cuda", "cpu"})

    def run(self, job: Job, cancel: threading.Event, status: LaneStatus) -> LaneRun:
        kwargs: dict[str, Any] = {
            "n": job.rounds,
            "python": self.python,
            "cancel": cancel,
            "progress": lambda done, _total, msg: status(msg, done),
        }
        if job.timeout_s is not None:
            kwargs["timeout_s"] = job.timeout_s
        status("verify", 0)
        result = verify(self.ws, self.ws.root / job.baseline, self.ws.root / job.candidate, **kwargs)
        return LaneRun(result=result, facts=None, lane=self.name)


@dataclass
class _Prepared:
    """A target rendered and ready to verify: its fingerprint state, plan reasons and jobs."""

    name: str
    context: dict[str, Any]
    state: dict[str, Any]
    reasons: list[str]
    device_kind: str
    jobs: list[Job] = field(default_factory=list)


def sync(
    ws: Workspace,
    names: list[str] | None = None,
    *,
    check: bool = False,
    from_scratch: bool = False,
    n: int | None = None,
    wait_s: float = 0.0,
    who: str | None = None,
    python: str | None = None,
    timeout_s: float | None = None,
    progress: SyncProgress | None = None,
    gpu_name: Any = _AUTO,
    gpus: str | None = None,
    executor: str | Executor = "local",
    address: str | None = None,
) -> SyncReport:
    """Render what is missing, then verify and record every out-of-date target (all with ``from_scratch``).

    ``check``: plan only, run nothing, take no lock. A failing target is reported and the others go on.
    ``gpus`` ('all' or '0,1'): one verify per GPU of this host at a time; ``executor`` 'ray' (``address``: the
    cluster, default a local instance): one Ray task per verify; or an ``Executor`` object. Whatever runs the
    verifies, this process alone writes results/, hotkernel.lock and LEADERBOARD.md, one target at a time.
    """
    manifest = load_workspace_manifest(ws)  # a bad manifest stops here: nothing written
    if check:
        if gpu_name is _AUTO:
            gpu_name = visible_gpu_name()
        first_plan = plan(ws, names=names, gpu_name=gpu_name, manifest=manifest)
        return SyncReport(check=True, plan=first_plan, items=[], **board_summary(ws))
    rounds = n if n is not None else manifest_rounds(manifest)
    if timeout_s is None:
        timeout_s = getattr(getattr(manifest, "defaults", None), "timeout_s", None)
    if rounds < 1:
        raise HotkernelError(f"sync: -n must be >= 1 (got {rounds})")
    select_names(manifest, names)  # an unknown name stops here, before a lane or a cluster starts
    pool = (
        executor
        if not isinstance(executor, str)
        else build_executor(ws, gpus=gpus, executor=executor, address=address, python=python)
    )
    if gpu_name is _AUTO:
        gpu_name = lane_gpu_name(pool)
    command = "hotkernel sync " + " ".join(names or [])
    try:
        with workspace_lock(ws, wait_s=wait_s, command=command.strip()), TerminationRaises():
            return _sync_locked(
                ws,
                manifest,
                names,
                from_scratch=from_scratch,
                rounds=rounds,
                who=who,
                python=python,
                timeout_s=timeout_s,
                progress=progress,
                gpu_name=gpu_name,
                pool=pool or LaneExecutor([InlineLane(ws, python, kinds=inline_kinds(gpu_name))]),
            )
    finally:
        if pool is not None:
            pool.close()


def inline_kinds(gpu_name: str | None) -> frozenset[str]:
    """What the default lane runs: cpu targets, and cuda targets when this machine has a GPU."""
    return frozenset({"cpu", "cuda"}) if gpu_name not in (None, NO_GPU) else frozenset({"cpu"})


def lane_gpu_name(pool: Executor | None) -> str | None:
    """The GPU name plans are made against: the first GPU lane's, this process's visible GPU, or None (a
    cluster: compared with each target's latest entry on any GPU)."""
    if isinstance(pool, LaneExecutor):
        gpus = [lane.gpu for lane in pool.lanes if getattr(lane, "gpu", None) is not None]
        if gpus:
            return gpus[0].name
    if pool is not None and not isinstance(pool, LaneExecutor):
        return None
    return visible_gpu_name()


def _sync_locked(
    ws: Workspace,
    manifest: Any,
    names: list[str] | None,
    *,
    from_scratch: bool,
    rounds: int,
    who: str | None,
    python: str | None,
    timeout_s: float | None,
    progress: SyncProgress | None,
    gpu_name: str | None,
    pool: Executor,
) -> SyncReport:
    """``sync`` inside the workspace lock: prepare every target, run its jobs on ``pool``, record each."""
    current = plan(ws, names=names, gpu_name=gpu_name, manifest=manifest)  # state may have moved
    pending = {i.name: i for i in current.items}
    selected = select_names(manifest, names)
    fallback_who = who or default_who(ws)
    to_run = [name for name in selected if name in pending or from_scratch]
    items: dict[str, SyncItem] = {
        name: SyncItem(name=name, status="up to date") for name in selected if name not in to_run
    }
    kinds = pool.kinds()
    no_cuda = (
        f"no CUDA GPU in {pool.describe()} (cuda target)"
        if not isinstance(pool, LaneExecutor)
        else "no CUDA GPU: NVML found no NVIDIA GPU on this machine (cuda target)"
    )
    prepared: dict[str, _Prepared] = {}
    for name in to_run:
        reasons = pending[name].reasons if name in pending else ["from scratch"]
        ready = _prepare(
            ws,
            manifest,
            name,
            reasons,
            rounds=rounds,
            timeout_s=timeout_s,
            kinds=kinds,
            no_cuda=no_cuda,
            gpu_name=gpu_name,
            progress=progress,
        )
        if isinstance(ready, SyncItem):
            items[name] = ready
        else:
            prepared[name] = ready
    jobs = [job for ready in prepared.values() for job in ready.jobs]
    counter = _RunCounter(progress, total=sum(job.runs for job in jobs))
    by_key = {job.key: ready for ready in prepared.values() for job in ready.jobs}
    before = store_snapshot(ws)  # what no run may change: record compares, and restores the lock
    rivals: list[SyncItem] = []
    try:
        with contextlib.closing(pool.run(jobs, counter.lane_status)) as outcomes:
            for outcome in outcomes:
                ready = by_key[outcome.job.key]
                with SignalsDeferred():  # a record and its lock entry are written whole, or not at all
                    items[ready.name] = _record_outcome(
                        ws,
                        ready,
                        outcome,
                        who=who,
                        fallback_who=fallback_who,
                        gpu_name=gpu_name,
                        counter=counter,
                        before=before,
                    )
                    before = store_snapshot(ws)
                counter.finish(outcome.job)
        for name in selected:  # competitors run here, one at a time, after the lanes are done
            rivals += sync_competitors(
                ws,
                manifest,
                name,
                n=rounds,
                python=python,
                timeout_s=timeout_s,
                gpu_name=gpu_name,
                from_scratch=from_scratch,
                progress=progress,
                board=False,
            )
    finally:  # records are written with record(board=False): the board once, after them (also after a Ctrl-C)
        if prepared or any(manifest.targets[name].competitors for name in selected):
            write_leaderboard(ws)
    repaired = []
    if leaderboard_difference(ws) is not None:  # e.g. a kill just after a record: the board is generated
        write_leaderboard(ws)
        repaired.append("LEADERBOARD.md was stale: rewritten from results/")
    ordered = [items[name] for name in selected if name in items] + rivals
    return SyncReport(check=False, plan=current, items=ordered, repaired=repaired, **board_summary(ws))


def board_summary(ws: Workspace) -> dict[str, Any]:
    """The leaderboard's best rows and each target's newest record (current protocol), for the sync report."""
    records = current_records(ws)
    rows = {row.path: row for row in leaderboard_rows(records, current_protocol())}
    latest: dict[str, Any] = {}
    for path, rec in sorted(records, key=lambda pair: (pair[1].created_at, pair[0])):
        latest[rec.target] = rows[path]
    return {"best": best_rows(list(rows.values())), "latest": latest}


class _RunCounter:
    """Turns each lane's verify progress into whole-sync progress: (runs done, runs planned, message); with
    several lanes the message shows what every busy lane does."""

    def __init__(self, progress: SyncProgress | None, total: int) -> None:
        self.progress, self.total, self.offset = progress, total, 0
        self.lanes: dict[str, tuple[str, int]] = {}  # lane -> (what it does, runs of its job done)
        self.guard = threading.Lock()

    def say(self, name: str, message: str, done: int = 0) -> None:
        """A message about target ``name`` from the coordinator."""
        self._emit(f"{name}: {message}", done)

    def lane_status(self, lane: str, message: str, done: int) -> None:
        """What ``lane`` does now ("<job>: <what>", or "idle"); called from the lanes' threads."""
        with self.guard:
            if message == "idle":
                self.lanes.pop(lane, None)
            else:
                self.lanes[lane] = (message, done)
            busy = dict(self.lanes)
        if message == "idle" or not busy:
            return
        if len(busy) == 1 and lane in busy:
            text = message
        else:
            text = " | ".join(f"{name}: {what}" for name, (what, _) in sorted(busy.items()))
        self._emit(text, sum(d for _, d in busy.values()))

    def finish(self, job: Job) -> None:
        with self.guard:
            self.offset += job.runs
            for lane, (what, _) in list(self.lanes.items()):
                if what.startswith(f"{job.key}: "):
                    self.lanes.pop(lane)

    def _emit(self, text: str, done: int) -> None:
        if self.progress is not None:
            self.progress(min(self.offset + done, self.total), self.total, text)


def _prepare(
    ws: Workspace,
    manifest: Any,
    name: str,
    reasons: list[str],
    *,
    rounds: int,
    timeout_s: float | None,
    kinds: set[str],
    no_cuda: str,
    gpu_name: str | None,
    progress: SyncProgress | None,
) -> _Prepared | SyncItem:
    """Render ``name`` when needed and make its jobs; a ``skipped`` or ``failed`` item when it cannot run."""

    def say(message: str) -> None:
        if progress is not None:
            progress(0, 0, f"{name}: {message}")

    try:
        context = resolved_target(manifest, name)
        entries = read_lock(ws).entries(name)
        contract_sha = contract_sha256()
        state = target_state(ws, context, manifest_fingerprint(manifest, name), contract_sha)
        if needs_render(ws, state, entries):  # rendering needs no GPU: a skipped target gets its files too
            say("render")
            render_target(ws, name, context)
            state = target_state(ws, context, state["manifest"], contract_sha)
        kind = CPU_DEVICE if device_key(context, gpu_name) == CPU_DEVICE else "cuda"
        if kind not in kinds:
            say("skipped: no CUDA GPU")
            return SyncItem(name=name, status="skipped", reason=no_cuda)
        files = job_files(ws, name, context)
        job = Job(
            key=name,
            target=name,
            baseline=f"targets/{name}/baseline.py",
            candidate=f"targets/{name}/candidate.py",
            rounds=rounds,
            timeout_s=timeout_s,
            device_kind=kind,
            files=files,
        )
        return _Prepared(name=name, context=context, state=state, reasons=reasons, device_kind=kind, jobs=[job])
    except Exception as err:  # noqa: BLE001 - a failing target is reported; the others go on
        return failed_item(name, err, say)


def _record_outcome(
    ws: Workspace,
    ready: _Prepared,
    outcome: Outcome,
    *,
    who: str | None,
    fallback_who: str,
    gpu_name: str | None,
    counter: _RunCounter,
    before: StoreSnapshot,
) -> SyncItem:
    """Record one finished job (the coordinator's part); every anticipated failure becomes a ``failed`` item."""
    name, state = ready.name, ready.state

    def say(message: str) -> None:
        counter.say(name, message, outcome.job.runs)

    try:
        if outcome.run is None:
            say(f"failed: {outcome.error}")
            return SyncItem(name=name, status="failed", reason=outcome.error)
        result, facts = outcome.run.result, outcome.run.facts
        target_dir = ws.targets_dir / name
        ran = result.candidate.sha256
        if sha256_file(target_dir / "candidate.py") != state["candidate_sha256"] or (
            ran and ran != state["candidate_sha256"]
        ):
            return SyncItem(
                name=name,
                status="failed",
                verdict=None,
                reason="candidate changed during sync: run `hotkernel sync` again",
            )
        say(f"record ({result.verdict})")
        if ready.device_kind == CPU_DEVICE:
            device = CPU_DEVICE
        else:
            device = (facts or {}).get("device") or (result.device if facts is not None else None) or gpu_name or NO_GPU
        fingerprint = {
            k: state[k]
            for k in ("manifest", "baseline_sha256", "candidate_sha256", "contract_sha256", "sources_sha256")
        }
        fingerprint["device"] = device
        note = f"hotkernel sync: {', '.join(ready.reasons)}"
        declared = candidate_who(target_dir / "candidate.py")  # read after rendering
        author = who or declared or fallback_who
        if not (who or declared):
            say(
                f"targets/{name}/candidate.py declares no WHO: recorded as {author!r}; "
                'put WHO = "<who wrote it>" in the candidate to name its author'
            )
        kind = "cpu" if device == CPU_DEVICE else "cuda"
        provenance = None
        if facts is not None:  # measured where the run happened (a lane's GPU, a cluster node)
            provenance = collect_provenance(
                ws,
                result,
                python=result.python,
                device_kind=kind,
                facts={k: v for k, v in facts.items() if k != "cpu"},
                cpu=facts.get("cpu"),
            )
        rec = record(
            ws,
            name,
            result,
            note=note,
            who=author,
            python=result.python,
            fingerprint=fingerprint,
            device_kind=kind,
            before=before,
            provenance=provenance,
            board=False,
        )
        if rec.tampered:
            say("failed: the run changed files only hotkernel writes")
            return SyncItem(
                name=name,
                status="failed",
                verdict="invalid",
                record=rec.path,
                reason=f"invalid: {tamper_reason(rec.tampered)}; the record is kept invalidated",
            )
        if result.verdict != "invalid":  # an invalid run measured nothing: the target stays out of date
            lock = read_lock(ws)
            lock.targets.setdefault(name, {})[device] = LockEntry(
                **fingerprint,
                record=rec.path,
                verdict=result.verdict,
                protocol=result.protocol or 0,
            )
            write_lock(ws, lock)
        say(f"done: {result.verdict}")
        return SyncItem(
            name=name,
            status="recorded",
            verdict=result.verdict,
            speedup=rec.speedup,
            record=rec.path,
            beats_best=rec.beats_best,
            clear_of_best=rec.clear_of_best,
            reason=result.reason,
            who=author,
        )
    except Exception as err:  # noqa: BLE001 - a failing target is reported; the others go on
        return failed_item(name, err, say)


def keep_in_lock(ws: Workspace, target: str, record_path: str, verify_result: Any, device: str) -> bool:
    """A record that beats the best makes its candidate the kept one: point the lock at it.

    Only when the candidate on disk is the one that was verified and the target's other inputs (manifest
    entry, rendered baseline, contract) are what the lock would record now; else the lock is left alone and
    ``plan`` keeps saying what is out of date. Returns whether the lock changed.
    """
    manifest = load_workspace_manifest(ws)
    if target not in manifest.targets:
        return False
    context = resolved_target(manifest, target)
    state = target_state(ws, context, manifest_fingerprint(manifest, target), contract_sha256())
    verified = getattr(getattr(verify_result, "candidate", None), "sha256", None)
    if not verified or verified != state["candidate_sha256"]:
        return False
    if getattr(getattr(verify_result, "baseline", None), "sha256", None) != state["baseline_sha256"]:
        return False  # the verify ran a baseline rendered from an older manifest entry
    on_disk = (state["baseline_on_disk"], state["contract_on_disk"])
    if on_disk != (state["baseline_sha256"], state["contract_sha256"]):
        return False
    key = CPU_DEVICE if str(context.get("device", "cuda")) == CPU_DEVICE else device
    parts = ("manifest", "baseline_sha256", "candidate_sha256", "contract_sha256", "sources_sha256")
    fingerprint = {k: state[k] for k in parts}
    protocol = getattr(verify_result, "protocol", None) or current_protocol()
    with workspace_lock(ws, wait_s=60.0, command=f"hotkernel record {target}"):  # not while a sync writes
        lock = read_lock(ws)
        lock.targets.setdefault(target, {})[key] = LockEntry(
            **fingerprint,
            device=key,
            record=record_path,
            verdict=verify_result.verdict,
            protocol=protocol,
        )
        write_lock(ws, lock)
    return True


def record_and_keep(ws: Workspace, target: str, verify_result: Any, **kwargs: Any) -> RecordResult:
    """``record`` (see ``hotkernel.store.record.record`` for ``kwargs``), then, when the record beats the best,
    point the lock at its candidate: the loop keeps it."""
    result = record(ws, target, verify_result, **kwargs)
    if result.beats_best and ws.manifest.is_file():
        keep_in_lock(ws, target, result.path, verify_result, result.device)
    return result
