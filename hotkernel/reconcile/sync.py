"""``sync``: render, verify and record what ``plan`` says is out of date; keep a winning candidate in the lock."""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hotkernel._util.fs import sha256_file
from hotkernel._util.git import git_user_name
from hotkernel._util.nvml import visible_gpu_name
from hotkernel.errors import HotkernelError
from hotkernel.manifest import manifest_fingerprint, resolved_target
from hotkernel.reconcile.models import SyncItem, SyncReport
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
from hotkernel.store.record import record, store_snapshot, tamper_reason
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
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "WHO" and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str) and node.value.value.strip()):
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
) -> SyncReport:
    """Render what is missing, then verify and record every out-of-date target (all with ``from_scratch``).

    ``check``: plan only, run nothing, take no lock. A failing target is reported and the others go on.
    """
    manifest = load_workspace_manifest(ws)  # a bad manifest stops here: nothing written
    if gpu_name is _AUTO:
        gpu_name = visible_gpu_name()
    first_plan = plan(ws, names=names, gpu_name=gpu_name, manifest=manifest)
    if check:
        return SyncReport(check=True, plan=first_plan, items=[], **board_summary(ws))
    rounds = n if n is not None else manifest_rounds(manifest)
    if timeout_s is None:
        timeout_s = getattr(getattr(manifest, "defaults", None), "timeout_s", None)
    if rounds < 1:
        raise HotkernelError(f"sync: -n must be >= 1 (got {rounds})")
    command = "hotkernel sync " + " ".join(names or [])
    with workspace_lock(ws, wait_s=wait_s, command=command.strip()):
        current = plan(ws, names=names, gpu_name=gpu_name, manifest=manifest)  # state may have moved
        pending = {i.name: i for i in current.items}
        selected = select_names(manifest, names)
        fallback_who = who or default_who(ws)
        to_run = [name for name in selected if name in pending or from_scratch]
        counter = _RunCounter(progress, total=2 * rounds * len(to_run))
        items: list[SyncItem] = []
        for name in selected:
            if name not in to_run:
                items.append(SyncItem(name=name, status="up to date"))
                continue
            reasons = pending[name].reasons if name in pending else ["from scratch"]
            items.append(_sync_target(ws, manifest, name, reasons, rounds=rounds, who=who,
                                      fallback_who=fallback_who,
                                      python=python, timeout_s=timeout_s, counter=counter,
                                      gpu_name=gpu_name))
            counter.finish_target(2 * rounds)
        repaired = []
        if leaderboard_difference(ws) is not None:  # e.g. a kill just after a record: the board is generated
            write_leaderboard(ws)
            repaired.append("LEADERBOARD.md was stale: rewritten from results/")
        return SyncReport(check=False, plan=current, items=items, repaired=repaired, **board_summary(ws))


def board_summary(ws: Workspace) -> dict[str, Any]:
    """The leaderboard's best rows and each target's newest record (current protocol), for the sync report."""
    records = current_records(ws)
    rows = {row.path: row for row in leaderboard_rows(records, current_protocol())}
    latest: dict[str, Any] = {}
    for path, rec in sorted(records, key=lambda pair: (pair[1].created_at, pair[0])):
        latest[rec.target] = rows[path]
    return {"best": best_rows(list(rows.values())), "latest": latest}


class _RunCounter:
    """Turns per-target verify progress into whole-sync progress: (runs done, runs planned, message)."""

    def __init__(self, progress: SyncProgress | None, total: int) -> None:
        self.progress, self.total, self.offset = progress, total, 0

    def say(self, name: str, message: str, done: int = 0) -> None:
        if self.progress is not None:
            self.progress(self.offset + done, self.total, f"{name}: {message}")

    def finish_target(self, runs: int) -> None:
        self.offset += runs


def _sync_target(ws: Workspace, manifest: Any, name: str, reasons: list[str], *, rounds: int,
                 who: str | None, fallback_who: str, python: str | None, timeout_s: float | None,
                 counter: _RunCounter, gpu_name: str | None) -> SyncItem:
    """Render, verify and record one target; every anticipated failure becomes a ``failed`` item."""

    def say(message: str, done: int = 0) -> None:
        counter.say(name, message, done)

    try:
        context = resolved_target(manifest, name)
        device = device_key(context, gpu_name)
        entries = read_lock(ws).entries(name)
        contract_sha = contract_sha256()
        state = target_state(ws, context, manifest_fingerprint(manifest, name), contract_sha)
        if needs_render(ws, state, entries):  # rendering needs no GPU: a skipped target gets its files too
            say("render")
            render_target(ws, name, context)
            state = target_state(ws, context, state["manifest"], contract_sha)
        if device == NO_GPU:
            say("skipped: no CUDA GPU")
            return SyncItem(name=name, status="skipped",
                            reason="no CUDA GPU: NVML found no NVIDIA GPU on this machine (cuda target)")
        target_dir = ws.targets_dir / name
        say("verify")
        before = store_snapshot(ws)  # what the run may not change: record compares and restores
        kwargs: dict[str, Any] = {"n": rounds, "python": python,
                                  "progress": lambda done, _total, msg: say(msg, done)}
        if timeout_s is not None:
            kwargs["timeout_s"] = timeout_s
        result = verify(ws, target_dir / "baseline.py", target_dir / "candidate.py", **kwargs)
        after = sha256_file(target_dir / "candidate.py")
        if after != state["candidate_sha256"]:
            return SyncItem(name=name, status="failed", verdict=None,
                            reason="candidate changed during sync: run `hotkernel sync` again")
        say(f"record ({result.verdict})")
        fingerprint = {k: state[k] for k in ("manifest", "baseline_sha256", "candidate_sha256",
                                             "contract_sha256", "sources_sha256")}
        fingerprint["device"] = device
        note = f"hotkernel sync: {', '.join(reasons)}"
        who = who or candidate_who(target_dir / "candidate.py") or fallback_who  # read after rendering
        rec = record(ws, name, result, note=note, who=who, python=result.python, fingerprint=fingerprint,
                     device_kind="cpu" if device == CPU_DEVICE else "cuda", before=before)
        if rec.tampered:
            say("failed: the run changed files only hotkernel writes", 2 * rounds)
            return SyncItem(name=name, status="failed", verdict="invalid", record=rec.path,
                            reason=f"invalid: {tamper_reason(rec.tampered)}; the record is kept invalidated")
        if result.verdict != "invalid":  # an invalid run measured nothing: the target stays out of date
            lock = read_lock(ws)
            lock.targets.setdefault(name, {})[device] = LockEntry(
                **fingerprint, record=rec.path, verdict=result.verdict, protocol=result.protocol or 0,
            )
            write_lock(ws, lock)
        say(f"done: {result.verdict}", 2 * rounds)
        return SyncItem(name=name, status="recorded", verdict=result.verdict, speedup=rec.speedup,
                        record=rec.path, beats_best=rec.beats_best, reason=result.reason)
    except HotkernelError as err:
        say(f"failed: {err}")
        return SyncItem(name=name, status="failed", reason=str(err))
    except Exception as err:  # a failing target is reported; the others go on
        say(f"failed: {type(err).__name__}: {err}")
        return SyncItem(name=name, status="failed", reason=f"{type(err).__name__}: {err}")


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
            **fingerprint, device=key, record=record_path, verdict=verify_result.verdict, protocol=protocol,
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
