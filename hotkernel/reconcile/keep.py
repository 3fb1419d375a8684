"""Who a sync records as author, and keeping a winning candidate in the lock (``record_and_keep``)."""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from hotkernel._util.git import git_user_name
from hotkernel.manifest import manifest_fingerprint, resolved_target
from hotkernel.reconcile.plan import CPU_DEVICE, load_workspace_manifest, target_state
from hotkernel.run.render import GENERATED_WHO, contract_sha256, is_untouched_candidate
from hotkernel.store.leaderboard import current_protocol
from hotkernel.store.models import RecordResult
from hotkernel.store.record import record
from hotkernel.workspace.lockfile import LockEntry, read_lock, workspace_lock, write_lock
from hotkernel.workspace.paths import Workspace


def candidate_who(candidate: Path) -> str | None:
    """The candidate's own module-level ``WHO = "..."`` (read with ast, never imported), if it has one. The
    generated candidate's WHO counts only while the file is untouched: an edit that kept it names nobody."""
    try:
        text = candidate.read_text(encoding="utf-8")
        tree = ast.parse(text)
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
            who = " ".join(node.value.value.split())
            return None if who == GENERATED_WHO and not is_untouched_candidate(text) else who
    return None


def default_who(ws: Workspace) -> str:
    """Who a sync records as author when the candidate declares no ``WHO``: $HOTKERNEL_WHO, else git's
    user.name, else 'unknown'."""
    who = os.environ.get("HOTKERNEL_WHO", "").strip()
    if who:
        return who
    name = git_user_name(ws.root)
    return f"{name} (via hotkernel sync)" if name else "unknown (recorded by hotkernel sync)"


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
