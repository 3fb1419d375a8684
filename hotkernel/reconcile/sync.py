"""``sync``: render, verify and record what ``plan`` says is out of date; keep a winning candidate in the lock.

The verifies run where ``lanes.build_executor`` says (one at a time in this process, the GPU's lane and a CPU lane
side by side, one lane per GPU, or Ray tasks). This process alone records, one finished target at a time. Targets
run most out of date first, within an optional budget (``budget.py``); a would-be new best is verified twice.
A signal (Ctrl-C, SIGTERM, SIGHUP) stops the sync as it did; the exception carries a ``SyncReport`` (``interrupted``)
(``interrupt.py``): what was finished, what was running (``not run``) and what is left.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from typing import Any

from hotkernel._util.fs import sha256_file
from hotkernel._util.nvml import visible_gpu_name
from hotkernel._util.procs import SignalsDeferred, TerminationRaises
from hotkernel.errors import HotkernelError
from hotkernel.manifest import manifest_fingerprint, resolved_target
from hotkernel.reconcile.budget import Deadline, recorded_seconds, staleness_order
from hotkernel.reconcile.competitors import (
    ahead_order,
    competitor_sides,
    start_compile_warm_up,
    sync_competitors,
)
from hotkernel.reconcile.executor import (
    Executor,
    Job,
    LaneExecutor,
    Outcome,
    PythonOnce,
    job_files,
    python_of,
)
from hotkernel.reconcile.interrupt import REPORT_ATTR, attach_report, interrupted_report, is_interrupt
from hotkernel.reconcile.jobs import copy_hint
from hotkernel.reconcile.keep import candidate_who, default_who
from hotkernel.reconcile.keep import keep_in_lock as keep_in_lock
from hotkernel.reconcile.keep import record_and_keep as record_and_keep
from hotkernel.reconcile.lanes import InlineLane as InlineLane
from hotkernel.reconcile.lanes import build_executor as build_executor
from hotkernel.reconcile.lanes import inline_kinds, interrupts_stop, lane_gpu_name
from hotkernel.reconcile.models import Plan, SyncItem, SyncReport, failed_item, measured, run_seconds
from hotkernel.reconcile.plan import (
    _AUTO,
    CPU_DEVICE,
    NO_GPU,
    baseline_file_state,
    competitor_items,
    contract_file_state,
    device_key,
    load_workspace_manifest,
    plan,
    select_names,
    target_state,
)
from hotkernel.reconcile.progress import RunCounter, SyncProgress
from hotkernel.run.render import contract_sha256, render_target
from hotkernel.store.leaderboard import (
    best_entries,
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


@dataclass
class _Held:
    """A would-be new best, recorded but not yet in the lock: its confirmation verify decides."""

    record: str
    fingerprint: dict[str, Any]
    device: str


@dataclass
class _Prepared:
    """A target rendered and ready to verify: its fingerprint state, plan reasons and jobs."""

    name: str
    context: dict[str, Any]
    state: dict[str, Any]
    reasons: list[str]
    device_kind: str
    jobs: list[Job] = field(default_factory=list)
    held: _Held | None = None  # set by _record_outcome when the first verify would be a new best


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
    budget_s: float | None = None,
    serial: bool = False,
) -> SyncReport:
    """Render what is missing, then verify and record every out-of-date target (all with ``from_scratch``).

    ``check``: plan only, run nothing, take no lock. A failing target is reported and the others go on.
    ``gpus`` ('all' or '0,1'): one verify per GPU of this host at a time; ``executor`` 'ray' (``address``: the
    cluster, default a local instance): one Ray task per verify; or an ``Executor`` object; else the default
    (``lanes.side_by_side``), or one verify at a time in this process with ``serial``. Whatever runs the
    verifies, this process alone writes results/, hotkernel.lock and LEADERBOARD.md, one target at a time.
    Targets run in ``budget.staleness_order``. ``budget_s``: from the call on, no verify starts after it and one
    still running then is cancelled unrecorded; what did not run is in the report's ``left``. A signal stops it
    as before (KeyboardInterrupt, or SystemExit from ``TerminationRaises``); the exception then carries an
    ``SyncReport`` with ``interrupted`` set (``interrupt_report``) of what was done and what is left.
    """
    deadline = Deadline(budget_s)
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
    once = PythonOnce(ws, python) if executor == "local" else None  # one interpreter probe per sync
    where = {"gpus": gpus, "executor": executor, "address": address, "serial": serial, "names": names}
    pool = (
        executor
        if not isinstance(executor, str)
        else build_executor(ws, python=once or python, manifest=manifest, **where)
    )
    if gpu_name is _AUTO:
        gpu_name = lane_gpu_name(pool)
    command = "hotkernel sync " + " ".join(names or [])
    run = _Run(
        ws,
        manifest,
        rounds=rounds,
        who=who,
        python=once or python,
        timeout_s=timeout_s,
        gpu_name=gpu_name,
        pool=pool or LaneExecutor([InlineLane(ws, once or python, kinds=inline_kinds(gpu_name))]),
        deadline=deadline,
        counter=RunCounter(progress),
        progress=progress,
    )
    run.selected = select_names(manifest, names)
    try:
        with workspace_lock(ws, wait_s=wait_s, command=command.strip()), TerminationRaises(), interrupts_stop():
            return run.locked(names, from_scratch=from_scratch)
    except BaseException as stop:
        if is_interrupt(stop) and getattr(stop, REPORT_ATTR, None) is None:  # e.g. waiting for the lock
            attach_report(stop, run.interrupted)
        raise
    finally:
        run.pool.close()  # the lanes' warm judges and child processes


@dataclass
class _Run:
    """One sync inside the workspace lock: prepare the targets, run their jobs on ``pool`` (most out of date
    first), record each outcome, verify would-be new bests a second time, then the competitors."""

    ws: Workspace
    manifest: Any
    rounds: int
    who: str | None
    python: str | PythonOnce | None
    timeout_s: float | None
    gpu_name: str | None
    pool: Executor
    deadline: Deadline
    counter: RunCounter
    progress: SyncProgress | None
    items: dict[str, SyncItem] = field(default_factory=dict)  # job key -> what became of it
    left: list[str] = field(default_factory=list)
    before: Any = None  # store_snapshot after the last record
    fallback_who: str = ""
    # where the sync is, for the report of an interrupt (``interrupted``)
    selected: list[str] = field(default_factory=list)
    current: Plan | None = None
    records: list[Any] = field(default_factory=list)
    to_run: list[str] = field(default_factory=list)
    preparing: str | None = None  # the target being rendered
    prepared: dict[str, _Prepared] = field(default_factory=dict)
    from_scratch: bool = False
    rivals: list[SyncItem] = field(default_factory=list)
    rivals_of: str | None = None  # the target whose competitors run
    rivals_done: set[str] = field(default_factory=set)

    def locked(self, names: list[str] | None, *, from_scratch: bool) -> SyncReport:
        try:
            return self._locked(names, from_scratch=from_scratch)
        except BaseException as stop:  # Ctrl-C, SIGTERM, SIGHUP: the report of what was done goes with it
            if is_interrupt(stop):
                attach_report(stop, self.interrupted)
            raise

    def _locked(self, names: list[str] | None, *, from_scratch: bool) -> SyncReport:
        ws, manifest = self.ws, self.manifest
        self.from_scratch = from_scratch
        current = plan(ws, names=names, gpu_name=self.gpu_name, manifest=manifest)  # state may have moved
        pending = {i.name: i for i in current.items}
        records = current_records(ws)
        selected = select_names(manifest, names)  # the report's order; the runs go most out of date first
        to_run = staleness_order([name for name in selected if name in pending or from_scratch], records)
        self.current, self.records, self.selected, self.to_run = current, records, selected, to_run
        self.items = {name: SyncItem(name=name, status="up to date") for name in selected if name not in to_run}
        prepared = self.prepared = self.prepare(to_run, pending)
        first = [job for ready in prepared.values() for job in ready.jobs]
        self.counter.plan(first, recorded_seconds(records))
        self.before = store_snapshot(ws)  # what no run may change: record compares, and restores the lock
        self.fallback_who = self.who or default_who(ws)
        rivals: list[SyncItem] = []
        try:
            self.run_jobs(first, prepared)
            held = [ready for ready in prepared.values() if ready.held is not None]
            confirming = [replace(ready.jobs[0], key=f"{ready.name}/confirm") for ready in held]
            self.counter.plan(confirming, {})
            self.run_jobs(confirming, prepared)
            # The lanes are done: their warm judges go before the competitors verify here, on the same GPU, where
            # an idle judge holding a CUDA context would fail every competitor run's device_idle check.
            self.pool.close()
            names = [name for name in staleness_order(selected, records) if self.competitors_left(name)]
            sides = ahead_order(competitor_sides(self.ws, self.manifest, names))
            ahead = start_compile_warm_up(self.ws, sides, python_of(self.python))
            for name, _, _ in sides:  # competitors: one at a time, after the lanes
                if ahead is not None and name in ahead[1] and not self.deadline.expired():
                    ahead[0].wait()  # no CPU timing while the warm-up compiles
                self.rivals_of = name
                rivals += self.competitors(name, from_scratch)
                self.rivals, self.rivals_of = rivals, None
                self.rivals_done.add(name)
        finally:  # records are written with record(board=False): the board once, after them (also after a Ctrl-C)
            if prepared or any(manifest.targets[name].competitors for name in selected):
                with SignalsDeferred():
                    write_leaderboard(ws)
        repaired = []
        if leaderboard_difference(ws) is not None:  # e.g. a kill just after a record: the board is generated
            write_leaderboard(ws)
            repaired.append("LEADERBOARD.md was stale: rewritten from results/")
        keys = [name for name in selected if name in self.items]
        ordered = [self.items[k] for name in keys for k in (name, f"{name}/confirm") if k in self.items] + rivals
        self.left += [i.name for i in rivals if i.status == "not run"]
        return SyncReport(
            check=False,
            plan=current,
            items=ordered,
            repaired=repaired,
            budget_s=self.deadline.budget_s,
            lanes=self.pool.describe(),
            order=to_run,
            left=self.left,
            **board_summary(ws),
        )

    def interrupted(self, sig: str | None) -> SyncReport:
        """The report of a sync a signal stopped (``interrupt.interrupted_report``)."""
        return interrupted_report(self, sig, board_summary)

    def competitors_left(self, name: str) -> list[str]:
        """The competitors of ``name`` still to run: all with ``--from-scratch``; else those out of date, read
        again for the target whose competitors were running (some may be recorded), from the plan for others."""
        competitors = list(self.manifest.targets[name].competitors)
        if not competitors or self.from_scratch or self.current is None:
            return competitors
        if name != self.rivals_of:
            return [c.competitor for c in self.current.competitors if c.name == name]
        try:
            context = resolved_target(self.manifest, name)
            device = device_key(context, self.gpu_name)
            fingerprint = manifest_fingerprint(self.manifest, name)
            items = competitor_items(
                self.ws, self.manifest, name, context, fingerprint, contract_sha256(), device, read_lock(self.ws)
            )
            return [c.competitor for c in items]
        except Exception:  # noqa: BLE001 - unknown: all of them
            return competitors

    def prepare(self, to_run: list[str], pending: dict[str, Any]) -> dict[str, _Prepared]:
        kinds = self.pool.kinds()
        no_cuda = (
            f"no CUDA GPU in {self.pool.describe()} (cuda target)"
            if not isinstance(self.pool, LaneExecutor)
            else "no CUDA GPU: NVML found no NVIDIA GPU on this machine (cuda target)"
        )
        prepared: dict[str, _Prepared] = {}
        for name in to_run:
            reasons = pending[name].reasons if name in pending else ["from scratch"]
            self.preparing = name
            ready = _prepare(
                self.ws,
                self.manifest,
                name,
                reasons,
                rounds=self.rounds,
                timeout_s=self.timeout_s,
                kinds=kinds,
                no_cuda=no_cuda,
                gpu_name=self.gpu_name,
                progress=self.progress,
            )
            if isinstance(ready, SyncItem):
                self.items[name] = ready
            else:
                prepared[name] = ready
                self.prepared = prepared
        self.preparing = None
        return prepared

    def run_jobs(self, jobs: list[Job], prepared: dict[str, _Prepared]) -> None:
        """Run ``jobs`` on the pool and record each outcome as it comes (signals wait for a record to finish)."""
        if not jobs:
            return
        by_key = {job.key: prepared[job.target] for job in jobs}
        extra = {"deadline": self.deadline.at} if self.deadline.at is not None else {}
        with contextlib.closing(self.pool.run(jobs, self.counter.lane_status, **extra)) as outcomes:
            for outcome in outcomes:
                ready, key = by_key[outcome.job.key], outcome.job.key
                confirms = ready.held.record if key.endswith("/confirm") and ready.held else None
                if outcome.budget:
                    self.items[key] = SyncItem(name=ready.name, status="not run", reason=outcome.error)
                    self.left.append(ready.name)
                    self.counter.say(ready.name, "not run: the budget is spent")
                    self.counter.finish(outcome.job)
                    continue
                with SignalsDeferred():  # a record and its lock entry are written whole, or not at all
                    self.items[key] = _record_outcome(
                        self.ws,
                        ready,
                        outcome,
                        who=self.who,
                        fallback_who=self.fallback_who,
                        gpu_name=self.gpu_name,
                        counter=self.counter,
                        before=self.before,
                        confirms=confirms,
                    )
                    self.before = store_snapshot(self.ws)
                self.counter.finish(outcome.job)

    def competitors(self, name: str, from_scratch: bool) -> list[SyncItem]:
        return sync_competitors(
            self.ws,
            self.manifest,
            name,
            n=self.rounds,
            python=python_of(self.python) if self.manifest.targets[name].competitors else None,
            timeout_s=self.timeout_s,
            gpu_name=self.gpu_name,
            from_scratch=from_scratch,
            progress=self.progress,
            board=False,
            deadline=self.deadline,
        )


def board_summary(ws: Workspace) -> dict[str, Any]:
    """The leaderboard's best rows, its headline per target and device, and each target's newest record (current
    protocol), for the sync report."""
    records = current_records(ws)
    rows = {row.path: row for row in leaderboard_rows(records, current_protocol())}
    latest: dict[str, Any] = {}
    for path, rec in sorted(records, key=lambda pair: (pair[1].created_at, pair[0])):
        latest[rec.target] = rows[path]
    board = list(rows.values())
    headline = [entry for entry in best_entries(board) if entry.best is not None]
    return {"best": best_rows(board), "headline": headline, "latest": latest}


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
            resolved=context,
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
    counter: RunCounter,
    before: StoreSnapshot,
    confirms: str | None = None,
) -> SyncItem:
    """Record one finished job (the coordinator's part); every anticipated failure becomes a ``failed`` item.

    A ``faster`` first verify that would be the target's new best is recorded but kept out of the lock
    (``ready.held``): sync verifies the same files again, and that record (``confirms``: the first one's path)
    is what the lock points at. Without the second verify the target stays out of date."""
    name, state = ready.name, ready.state

    def say(message: str) -> None:
        counter.say(name, message, outcome.job.runs)

    try:
        if outcome.run is None:
            say(f"failed: {outcome.error}")
            return SyncItem(name=name, status="failed", reason=outcome.error, confirms=confirms)
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
                confirms=confirms,
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
        declared = candidate_who(target_dir / "candidate.py")  # read after rendering
        author = who or declared or fallback_who
        if not (who or declared):
            say(
                f"targets/{name}/candidate.py declares no WHO: recorded as {author!r}; "
                'put WHO = "<who wrote it>" in the candidate to name its author'
            )
        rec = _write_record(ws, ready, result, facts, fingerprint, author=author, before=before, confirms=confirms)
        speedup, interval = measured(result)
        if rec.tampered:
            say("failed: the run changed files only hotkernel writes")
            return SyncItem(
                name=name,
                status="failed",
                verdict="invalid",
                record=rec.path,
                reason=f"invalid: {tamper_reason(rec.tampered)}; the record is kept invalidated",
                confirms=confirms,
            )
        new_best = result.verdict == "faster" and (rec.previous_best is None or (speedup or 0) > rec.previous_best)
        if confirms is None and new_best:
            ready.held = _Held(record=rec.path, fingerprint=fingerprint, device=device)
            say(f"{result.verdict}: a new best, verified again before it counts")
        elif result.verdict != "invalid":  # an invalid run measured nothing: the target stays out of date
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
            speedup=speedup,
            interval=interval,
            record=rec.path,
            beats_best=rec.beats_best,
            clear_of_best=rec.clear_of_best,
            reason=copy_hint(result.reason, outcome.run, ws.root),
            who=author,
            confirms=confirms,
            seconds=run_seconds(result),
        )
    except Exception as err:  # noqa: BLE001 - a failing target is reported; the others go on
        return failed_item(name, err, say)


def _write_record(
    ws: Workspace,
    ready: _Prepared,
    result: Any,
    facts: dict[str, Any] | None,
    fingerprint: dict[str, Any],
    *,
    author: str,
    before: StoreSnapshot,
    confirms: str | None,
) -> RecordResult:
    """``record`` one verify of ``ready`` (board=False); ``confirms``: the record it repeats."""
    kind = "cpu" if fingerprint["device"] == CPU_DEVICE else "cuda"
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
    note = f"hotkernel sync: {', '.join(ready.reasons)}"
    if confirms is not None:
        note += f"; confirms {confirms}"
    return record(
        ws,
        ready.name,
        result,
        note=note,
        who=author,
        python=result.python,
        fingerprint=fingerprint,
        device_kind=kind,
        before=before,
        provenance=provenance,
        board=False,
        confirms=confirms,
    )
