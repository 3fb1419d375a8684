"""Verify and record a target's out-of-date competitors (``competitors:`` in hotkernel.yaml).

Each competitor is rendered (``run/competitors.py``), verified against the generated baseline like a
candidate, recorded with ``role: competitor`` (never the kept candidate) and fingerprinted in the lock's
``competitors`` section, so ``plan`` says when one is out of date.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from hotkernel._util.fs import sha256_file
from hotkernel._util.nvml import visible_gpu_name
from hotkernel._util.procs import SignalsDeferred
from hotkernel.errors import HotkernelError
from hotkernel.manifest import manifest_fingerprint, resolved_target
from hotkernel.manifest.python import user_python
from hotkernel.reconcile.budget import Deadline
from hotkernel.reconcile.models import SyncItem, failed_item, measured, run_seconds
from hotkernel.reconcile.plan import (
    _AUTO,
    CPU_DEVICE,
    NO_GPU,
    competitor_items,
    competitor_state,
    device_key,
    select_names,
)
from hotkernel.run.competitors import competitor_who, expected_competitor, render_competitor
from hotkernel.run.compile_warm_up import CompileWarmUp
from hotkernel.run.render import contract_module, contract_sha256, render_target
from hotkernel.run.verify import verify
from hotkernel.store.record import record, store_snapshot, tamper_reason
from hotkernel.workspace.lockfile import LockEntry, read_lock, workspace_lock, write_lock
from hotkernel.workspace.paths import Workspace

FINGERPRINT_PARTS = ("manifest", "baseline_sha256", "candidate_sha256", "contract_sha256", "sources_sha256")
Progress = Callable[[int, int, str], None]  # (runs done, runs planned, "<target> competitor <c>: <what>")


def sync_competitors(
    ws: Workspace,
    manifest: Any,
    name: str,
    *,
    n: int,
    python: str | None = None,
    timeout_s: float | None = None,
    gpu_name: Any = _AUTO,
    from_scratch: bool = False,
    wait_s: float = 0.0,
    progress: Progress | None = None,
    board: bool = True,
    deadline: Deadline | None = None,
) -> list[SyncItem]:
    """Render, verify and record every out-of-date competitor of target ``name`` (all with ``from_scratch``).

    One ``SyncItem`` per competitor run (``name`` is ``<target> competitor <competitor>``); a failing one is
    reported and the others go on. Holds the workspace lock (re-entrant inside a ``sync``). ``board=False``:
    LEADERBOARD.md is left to the caller (``record(board=False)``). ``deadline``: a competitor does not start
    after it, and one running then is cancelled unrecorded (status ``not run``).
    """
    select_names(manifest, [name])
    if n < 1:
        raise HotkernelError(f"sync: -n must be >= 1 (got {n})")
    if gpu_name is _AUTO:
        gpu_name = visible_gpu_name()
    with workspace_lock(ws, wait_s=wait_s, command=f"hotkernel sync {name} (competitors)"):
        context = resolved_target(manifest, name)
        fingerprint = manifest_fingerprint(manifest, name)
        contract_sha = contract_sha256()
        device = device_key(context, gpu_name)
        pending = {
            c.competitor: c.reasons
            for c in competitor_items(ws, manifest, name, context, fingerprint, contract_sha, device, read_lock(ws))
        }
        todo = [c for c in manifest.targets[name].competitors if c in pending or from_scratch]
        items = []
        for index, competitor in enumerate(todo):

            def say(message: str, done: int = 0, index: int = index, competitor: str = competitor) -> None:
                if progress is not None:
                    # a verify still open at n goes on past it: count its runs within its share of the bar
                    share = 2 * n
                    progress(
                        share * index + min(done, share),
                        share * len(todo),
                        f"{name} competitor {competitor}: {message}",
                    )

            reasons = pending.get(competitor, ["from scratch"])
            if deadline is not None and deadline.expired():
                items.append(_budget_spent(f"{name} competitor {competitor}"))
                continue
            items.append(
                _sync_one(
                    ws,
                    name,
                    competitor,
                    context,
                    fingerprint,
                    contract_sha,
                    device,
                    reasons,
                    n=n,
                    python=python,
                    timeout_s=timeout_s,
                    say=say,
                    board=board,
                    deadline=deadline,
                )
            )
        return items


def competitor_sides(ws: Workspace, manifest: Any, names: list[str]) -> list[tuple[str, str, bool]]:
    """``(target, device kind, compile_warm)`` of each target in ``names`` that has competitors, in that order: the
    kind from the manifest; ``compile_warm`` (its competitors' CPU runs fork from a server that warms torch.compile,
    the contract's ``wants_compile_warm``) from the competitor scripts as they will be rendered, so a workspace
    whose competitors were never rendered gets the warm-up too."""
    contract = contract_module()
    sides = []
    for name in names:
        competitors = manifest.targets[name].competitors
        if not competitors:
            continue
        resolved = resolved_target(manifest, name)
        kind = "cpu" if str(resolved.get("device", "cuda")) == CPU_DEVICE else "cuda"
        texts = [expected_competitor(resolved, competitor) for competitor in competitors]
        sides.append((name, kind, bool(contract.wants_compile_warm(kind, texts))))
    return sides


def warm_up_ahead(sides: list[tuple[str, str, bool]]) -> bool:
    """Whether to start the CPU compile warm-up (``CompileWarmUp``) before the first competitor verify:
    only when CUDA verifies come first, so the warm-up overlaps GPU work and no CPU timing, and a CPU verify that
    forks from a compile-warm server comes later."""
    return bool(sides) and sides[0][1] == "cuda" and any(kind == "cpu" and warm for _, kind, warm in sides)


def ahead_order(sides: list[tuple[str, str, bool]]) -> list[tuple[str, str, bool]]:
    """``sides`` in the order their competitors run: as given (most out of date first), except that when a CPU one
    forks from the compile-warm server the CUDA ones go first, each side keeping its order, so the warm-up runs
    beside their GPU work (``warm_up_ahead``) instead of before a CPU verify with nothing beside it (in a sync whose
    CPU target came first, on an H100 host, 2026-12-06: about 22 s between the last GPU verify and that competitor's
    verify, not split further)."""
    if not any(kind == "cpu" and warm for _, kind, warm in sides):
        return sides
    return [side for side in sides if side[1] == "cuda"] + [side for side in sides if side[1] != "cuda"]


def start_compile_warm_up(
    ws: Workspace, sides: list[tuple[str, str, bool]], python: str | None
) -> tuple[CompileWarmUp, set[str]] | None:
    """The CPU compile warm-up started now (call it while no run is in flight), with the targets of ``sides`` (those
    whose competitors are still to run, in the order they run) that run on the CPU and must wait for it, when
    ``warm_up_ahead`` says so; else None, as when it cannot start (the competitor that needs the server starts it
    and says why)."""
    if not warm_up_ahead(sides):
        return None
    try:
        ahead = CompileWarmUp(ws, user_python(ws, python, probe=False))
    except Exception:  # noqa: BLE001 - see the docstring
        return None
    return ahead, {name for name, kind, _ in sides if kind == "cpu"}


def _budget_spent(label: str) -> SyncItem:
    return SyncItem(name=label, status="not run", reason="not run: the time budget was spent")


def _sync_one(
    ws: Workspace,
    name: str,
    competitor: str,
    context: dict[str, Any],
    fingerprint: str,
    contract_sha: str,
    device: str,
    reasons: list[str],
    *,
    n: int,
    python: str | None,
    timeout_s: float | None,
    say: Callable[..., None],
    board: bool,
    deadline: Deadline | None = None,
) -> SyncItem:
    label = f"{name} competitor {competitor}"
    try:
        say("render")
        render_target(ws, name, context)  # the baseline and contract it is verified against
        script = render_competitor(ws, name, context, competitor)
        state = competitor_state(ws, context, fingerprint, contract_sha, competitor)
        if device == NO_GPU:
            say("skipped: no CUDA GPU")
            return SyncItem(
                name=label,
                status="skipped",
                reason="no CUDA GPU: NVML found no NVIDIA GPU on this machine (cuda target)",
            )
        before = store_snapshot(ws)
        cancel = threading.Event()
        kwargs: dict[str, Any] = {"n": n, "python": python, "progress": lambda done, _t, msg: say(msg, done)}
        if timeout_s is not None:
            kwargs["timeout_s"] = timeout_s
        say("verify")
        timer = deadline.arm(cancel) if deadline is not None else None
        try:
            result = verify(ws, ws.target_dir(name) / "baseline.py", script, cancel=cancel, **kwargs)
        finally:
            if timer is not None:
                timer.cancel()
        if cancel.is_set():  # cut short by the budget: no verdict, nothing recorded
            say("not run: the budget is spent")
            return _budget_spent(label)
        if sha256_file(script) != state["candidate_sha256"]:
            return SyncItem(
                name=label,
                status="failed",
                reason=f"{script.name} changed during sync (it is generated): run `hotkernel sync` again",
            )
        parts = {k: state[k] for k in FINGERPRINT_PARTS}
        with SignalsDeferred():  # the record and its lock entry are written whole, or not at all
            return _record(ws, name, competitor, result, parts, device, reasons, before=before, board=board, say=say)
    except Exception as err:  # noqa: BLE001 - a failing competitor is reported; the others go on
        return failed_item(label, err, say)


def _record(
    ws: Workspace,
    name: str,
    competitor: str,
    result: Any,
    parts: dict[str, Any],
    device: str,
    reasons: list[str],
    *,
    before: Any,
    board: bool,
    say: Callable[..., None],
) -> SyncItem:
    """Record one competitor verify and point the lock's competitor entry at it (unless it was invalid)."""
    label = f"{name} competitor {competitor}"
    rec = record(
        ws,
        name,
        result,
        note=f"hotkernel sync: competitor {competitor}: {', '.join(reasons)}",
        who=competitor_who(competitor),
        python=result.python,
        fingerprint={**parts, "device": device},
        device_kind="cpu" if device == CPU_DEVICE else "cuda",
        before=before,
        competitor=competitor,
        board=board,
    )
    if rec.tampered:
        return SyncItem(
            name=label,
            status="failed",
            verdict="invalid",
            record=rec.path,
            reason=f"invalid: {tamper_reason(rec.tampered)}; the record is kept invalidated",
        )
    if result.verdict != "invalid":  # an invalid run measured nothing: the competitor stays out of date
        lock = read_lock(ws)
        lock.competitors.setdefault(name, {}).setdefault(competitor, {})[device] = LockEntry(
            **parts, device=device, record=rec.path, verdict=result.verdict, protocol=result.protocol or 0
        )
        write_lock(ws, lock)
    say(f"done: {result.verdict}", 2 * result.n)
    speedup, interval = measured(result)
    return SyncItem(
        name=label,
        status="recorded",
        verdict=result.verdict,
        speedup=speedup,
        interval=interval,
        record=rec.path,
        beats_best=False,
        reason=result.reason,
        seconds=run_seconds(result),
    )
