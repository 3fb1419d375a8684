"""A sync stopped by a signal (Ctrl-C, SIGTERM, SIGHUP): which signal, and the report it still gives: the items
finished as in a full report, the verify that was running and those not started as ``not run`` items, and
``left``, what is still out of date. The exception that stops the sync carries the report (``REPORT_ATTR``)."""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable
from typing import Any

from hotkernel.reconcile.models import Plan, SyncItem, SyncReport
from hotkernel.reconcile.plan import NO_GPU
from hotkernel.workspace.paths import Workspace

REPORT_ATTR = "hotkernel_sync_report"  # the attribute of an interrupt's exception that carries its report


def is_interrupt(stop: BaseException) -> bool:
    """True for what a signal raises in a sync: KeyboardInterrupt (SIGINT), or a non-zero SystemExit
    (``TerminationRaises``: SIGTERM, SIGHUP)."""
    return isinstance(stop, KeyboardInterrupt) or (isinstance(stop, SystemExit) and stop.code not in (None, 0))


def stop_signal(stop: BaseException) -> str | None:
    """'SIGINT' for KeyboardInterrupt, 'SIGTERM' for SystemExit(128 + 15) and so on; None when unknown."""
    if isinstance(stop, KeyboardInterrupt):
        return "SIGINT"
    code = stop.code if isinstance(stop, SystemExit) else None
    if isinstance(code, int) and code > 128:
        with contextlib.suppress(ValueError):
            return signal.Signals(code - 128).name
    return None


def interrupt_report(stop: BaseException, names: list[str] | None = None) -> SyncReport | None:
    """The report of a sync that ``stop`` (an interrupt) ended; None when ``stop`` is no interrupt. A sync
    stopped before it could make one (while it read the manifest or started its lanes) gets a bare report:
    nothing done, ``left`` the targets asked for (``names``; all when None: empty, see its note)."""
    if not is_interrupt(stop):
        return None
    report = getattr(stop, REPORT_ATTR, None)
    if isinstance(report, SyncReport) and report.interrupted:
        return report
    sig = stop_signal(stop)
    note = f"{interrupted_text(sig)} before it planned: nothing ran; `hotkernel sync` starts over"
    return SyncReport(plan=Plan(device=NO_GPU, notes=[note]), left=list(names or []), interrupted=True, signal=sig)


def interrupted_text(sig: str | None) -> str:
    return f"sync was interrupted ({sig})" if sig else "sync was interrupted"


def attach_report(stop: BaseException, make: Callable[[str | None], SyncReport]) -> None:
    """Give ``stop`` the report ``make`` builds from its signal's name; a report that cannot be built never
    replaces the interrupt (the CLI then writes a bare one)."""
    try:
        setattr(stop, REPORT_ATTR, make(stop_signal(stop)))
    except Exception:  # noqa: BLE001 - the interrupt goes on as it was
        pass


def interrupted_report(run: Any, sig: str | None, board: Callable[[Workspace], dict[str, Any]]) -> SyncReport:
    """The report of a sync a signal stopped: the items finished (records written, failures, skips); a
    ``not run`` item for the verify that was running and for each target and competitor not reached, and
    all of them in ``left`` (they stay out of date: the next sync runs them first)."""
    how = interrupted_text(sig)
    if run.current is None:  # stopped before the plan (waiting for the workspace lock)
        note = f"{how} before it planned: nothing ran; `left` lists every target asked for"
        plan_ = Plan(device=run.gpu_name or NO_GPU, notes=[note])
        return SyncReport(
            plan=plan_, left=list(run.selected), budget_s=run.deadline.budget_s, interrupted=True, signal=sig
        )
    items, left = dict(run.items), list(run.left)
    running = set(run.counter.started)  # job keys a lane began and no outcome finished
    for name in run.to_run:
        ready = run.prepared.get(name)
        if name not in items:
            if ready is None:
                when = "while it was rendered" if name == run.preparing else "before it started"
            elif name in running:
                when = "during its verify"
            else:
                when = "before its verify started"
            items[name] = SyncItem(name=name, status="not run", reason=f"not run: {how} {when}")
            left.append(name)
        elif ready is not None and ready.held is not None and f"{name}/confirm" not in items:
            when = "during" if f"{name}/confirm" in running else "before"
            reason = (
                f"not run: {how} {when} the second verify of this would-be new best ({ready.held.record}); "
                "the target stays out of date"
            )
            items[f"{name}/confirm"] = SyncItem(name=name, status="not run", reason=reason)
            left.append(name)
    rivals = []
    for key in run.rival_order:
        if key in run.rival_items:
            rivals.append(run.rival_items[key])
            continue
        label = run.competitors[key].label
        when = "during its verify" if key in running else "before its verify started"
        rivals.append(SyncItem(name=label, status="not run", reason=f"not run: {how} {when}"))
    for name in [name for name in run.selected if name not in run.rivals_prepared]:
        when = "while they were rendered" if name == run.preparing else "before they were rendered"
        for competitor in run.competitors_left(name):
            label = f"{name} competitor {competitor}"
            rivals.append(SyncItem(name=label, status="not run", reason=f"not run: {how} {when}"))
    keys = [name for name in run.selected if name in items]
    ordered = [items[k] for name in keys for k in (name, f"{name}/confirm") if k in items] + rivals
    left += [i.name for i in rivals if i.status == "not run"]
    try:
        board = board(run.ws)
    except Exception:  # noqa: BLE001 - the report of an interrupt goes out without the board's rows
        board = {}
    return SyncReport(
        check=False,
        interrupted=True,
        plan=run.current,
        items=ordered,
        budget_s=run.deadline.budget_s,
        order=run.to_run,
        left=list(dict.fromkeys(left)),
        signal=sig,
        **board,
    )
