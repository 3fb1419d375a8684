"""``sync``: render, verify and record what ``plan`` says is out of date; keep a winning candidate in the lock.

The verifies run where ``lanes.build_executor`` says (one at a time in this process, the GPU's lane and a CPU lane
side by side, one lane per GPU, or Ray tasks): the targets' and their out-of-date competitors' (``competitors.py``)
in one queue. This process alone records, one finished verify at a time. Targets run most out of date first,
within an optional budget (``budget.py``); a would-be new best is verified twice.
A signal (Ctrl-C, SIGTERM, SIGHUP) stops the sync as it did; the exception carries a ``SyncReport`` (``interrupted``)
(``interrupt.py``): what was finished, what was running (``not run``) and what is left.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hotkernel._util.nvml import visible_gpu_name
from hotkernel._util.procs import SignalsDeferred, TerminationRaises
from hotkernel.errors import HotkernelError
from hotkernel.manifest import manifest_fingerprint, resolved_target
from hotkernel.reconcile.budget import Deadline, recorded_seconds, staleness_order
from hotkernel.reconcile.competitors import Competitor, prepare_competitors, record_competitor
from hotkernel.reconcile.executor import (
    Executor,
    Job,
    LaneExecutor,
    Outcome,
    PythonOnce,
    job_files,
)
from hotkernel.reconcile.interrupt import REPORT_ATTR, attach_report, interrupted_report, is_interrupt
from hotkernel.reconcile.jobs import JobTerms
from hotkernel.reconcile.keep import candidate_who as candidate_who
from hotkernel.reconcile.keep import default_who
from hotkernel.reconcile.keep import keep_in_lock as keep_in_lock
from hotkernel.reconcile.keep import record_and_keep as record_and_keep
from hotkernel.reconcile.lanes import InlineLane as InlineLane
from hotkernel.reconcile.lanes import build_executor as build_executor
from hotkernel.reconcile.lanes import inline_kinds, interrupts_stop, lane_gpu_name
from hotkernel.reconcile.models import Plan, SyncItem, SyncReport, failed_item
from hotkernel.reconcile.outcome import Prepared, record_outcome
from hotkernel.reconcile.plan import (
    _AUTO,
    CPU_DEVICE,
    baseline_file_state,
    contract_file_state,
    device_key,
    load_workspace_manifest,
    plan,
    select_names,
    target_state,
)
from hotkernel.reconcile.progress import RunCounter, SyncProgress
from hotkernel.run.render import contract_sha256, render_target
from hotkernel.run.runner import compile_warm_for
from hotkernel.store.leaderboard import (
    best_entries,
    best_rows,
    current_protocol,
    current_records,
    leaderboard_difference,
    leaderboard_rows,
    write_leaderboard,
)
from hotkernel.store.record import store_snapshot
from hotkernel.workspace.lockfile import LockEntry, read_lock, workspace_lock
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
    """One sync inside the workspace lock: prepare the targets and their out-of-date competitors, run their verifies
    as one queue on ``pool`` (targets most out of date first, then the competitors) and record each outcome as it
    comes; a would-be new best's second verify joins that queue, ahead of what still waits."""

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
    prepared: dict[str, Prepared] = field(default_factory=dict)
    from_scratch: bool = False
    # competitors: job key -> the verify to run; job key -> what became of it; the keys in report order
    competitors: dict[str, Competitor] = field(default_factory=dict)
    rival_items: dict[str, SyncItem] = field(default_factory=dict)
    rival_order: list[str] = field(default_factory=list)
    rivals_prepared: set[str] = field(default_factory=set)  # targets whose competitors were prepared

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
        terms = self.terms()
        prepared = self.prepared = self.prepare(to_run, pending, terms)
        self.prepare_competitors(staleness_order(selected, records), terms)
        first = [job for ready in prepared.values() for job in ready.jobs]
        first += [ready.job for ready in self.competitors.values()]  # one queue: each lane takes what it runs
        self.counter.plan(first, recorded_seconds(records))
        self.before = store_snapshot(ws)  # what no run may change: record compares, and restores the lock
        self.fallback_who = self.who or default_who(ws)
        try:
            self.run_jobs(first, prepared)
        finally:  # records are written with record(board=False): the board once, after them (also after a Ctrl-C)
            if prepared or self.rival_order:
                with SignalsDeferred():
                    write_leaderboard(ws)
        repaired = []
        if leaderboard_difference(ws) is not None:  # e.g. a kill just after a record: the board is generated
            write_leaderboard(ws)
            repaired.append("LEADERBOARD.md was stale: rewritten from results/")
        keys = [name for name in selected if name in self.items]
        rivals = [self.rival_items[key] for key in self.rival_order if key in self.rival_items]
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

    def competitors_left(self, name: str) -> dict[str, list[str]]:
        """The competitors of ``name`` to run, each with why: all with ``--from-scratch``, else those the plan
        found out of date."""
        competitors = list(self.manifest.targets[name].competitors)
        if self.from_scratch or self.current is None:
            return {competitor: ["from scratch"] for competitor in competitors}
        return {c.competitor: c.reasons for c in self.current.competitors if c.name == name}

    def terms(self) -> JobTerms:
        """What this sync's jobs share: rounds, run limit, the pool's device kinds, the GPU plans are made against."""
        if isinstance(self.pool, LaneExecutor):
            no_cuda = "no CUDA GPU: NVML found no NVIDIA GPU on this machine (cuda target)"
        else:
            no_cuda = f"no CUDA GPU in {self.pool.describe()} (cuda target)"
        return JobTerms(self.rounds, self.timeout_s, frozenset(self.pool.kinds()), no_cuda, self.gpu_name)

    def prepare(self, to_run: list[str], pending: dict[str, Any], terms: JobTerms) -> dict[str, Prepared]:
        prepared: dict[str, Prepared] = {}
        for name in to_run:
            reasons = pending[name].reasons if name in pending else ["from scratch"]
            self.preparing = name
            ready = _prepare(self.ws, self.manifest, name, reasons, terms, self.progress)
            if isinstance(ready, SyncItem):
                self.items[name] = ready
            else:
                prepared[name] = ready
                self.prepared = prepared
        self.preparing = None
        return prepared

    def prepare_competitors(self, names: list[str], terms: JobTerms) -> None:
        """Render the out-of-date competitors of ``names`` (in that order) and make their jobs."""
        for name in names:
            left = self.competitors_left(name) if self.manifest.targets[name].competitors else {}
            self.preparing = name
            for key, ready in prepare_competitors(self.ws, self.manifest, name, left, terms, self.counter.say).items():
                self.rival_order.append(key)
                if isinstance(ready, Competitor):
                    self.competitors[key] = ready
                else:
                    self.rival_items[key] = ready
            self.rivals_prepared.add(name)
        self.preparing = None

    def run_jobs(self, jobs: list[Job], prepared: dict[str, Prepared]) -> None:
        """Run ``jobs`` on the pool and record each outcome as it comes (signals wait for a record to finish); a
        first verify that would be a new best puts its second verify into the same queue, ahead of what waits."""
        if not jobs:
            return
        extra = {"deadline": self.deadline.at} if self.deadline.at is not None else {}
        more: list[Job] = []
        with contextlib.closing(self.pool.run(jobs, self.counter.lane_status, more=more, **extra)) as outcomes:
            for outcome in outcomes:
                key = outcome.job.key
                if key in self.competitors:
                    rival = self.competitors[key]
                    self.settle(
                        outcome,
                        rival.label,
                        lambda rival=rival, outcome=outcome: record_competitor(
                            self.ws,
                            rival,
                            outcome,
                            gpu_name=self.gpu_name,
                            before=self.before,
                            say=lambda message: self.counter.say(rival.label, message),
                        ),
                        self.rival_items,
                    )
                    continue
                ready = prepared[outcome.job.target]
                confirms = ready.held.record if key.endswith("/confirm") and ready.held else None
                self.settle(
                    outcome,
                    ready.name,
                    lambda ready=ready, outcome=outcome, confirms=confirms: record_outcome(
                        self.ws,
                        ready,
                        outcome,
                        who=self.who,
                        fallback_who=self.fallback_who,
                        gpu_name=self.gpu_name,
                        counter=self.counter,
                        before=self.before,
                        confirms=confirms,
                    ),
                    self.items,
                )
                if outcome.budget:
                    self.left.append(ready.name)
                elif confirms is None and ready.held is not None:
                    confirm = replace(ready.jobs[0], key=f"{ready.name}/confirm")
                    self.counter.plan([confirm], {})
                    more.append(confirm)

    def settle(self, outcome: Outcome, label: str, write: Callable[[], SyncItem], into: dict[str, SyncItem]) -> None:
        """What became of one finished job, kept in ``into`` under its key: ``not run`` when the budget cut it,
        else its record (``write``; the item is kept before a held-back signal goes off, with the record and its
        lock entry written whole), after which the store's snapshot moves on."""
        key = outcome.job.key
        if outcome.budget:
            self.counter.say(label, "not run: the budget is spent")
            into[key] = SyncItem(name=label, status="not run", reason=outcome.error)
        else:
            with SignalsDeferred():
                into[key] = write()
                self.before = store_snapshot(self.ws)
        self.counter.finish(outcome.job)


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
    terms: JobTerms,
    progress: SyncProgress | None,
) -> Prepared | SyncItem:
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
        kind = CPU_DEVICE if device_key(context, terms.gpu_name) == CPU_DEVICE else "cuda"
        if kind not in terms.kinds:
            say("skipped: no CUDA GPU")
            return SyncItem(name=name, status="skipped", reason=terms.no_cuda)
        files = job_files(ws, name, context)
        folder = ws.target_dir(name)
        job = Job(
            key=name,
            target=name,
            baseline=f"targets/{name}/baseline.py",
            candidate=f"targets/{name}/candidate.py",
            rounds=terms.rounds,
            timeout_s=terms.timeout_s,
            device_kind=kind,
            files=files,
            compile_warm=kind == CPU_DEVICE and compile_warm_for([folder / "baseline.py", folder / "candidate.py"]),
            resolved=context,
        )
        return Prepared(name=name, context=context, state=state, reasons=reasons, device_kind=kind, jobs=[job])
    except Exception as err:  # noqa: BLE001 - a failing target is reported; the others go on
        return failed_item(name, err, say)
