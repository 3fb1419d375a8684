"""The reconciler (DVC's model): ``hotkernel.lock`` remembers what each record was made from; ``plan``
diffs it against the manifest and the files on disk; ``sync`` re-runs what is out of date.

``hotkernel.lock`` is read and written through ``hotkernel.workspace.lockfile.Lock`` (its docstring shows the
layout). Torn state (a damaged, missing or unverified record, a stale LEADERBOARD.md, a leftover temp file) is a
plan problem: reported with the file and the fix, and ``sync --check`` fails on it.

"No CUDA" is decided with NVML (``pynvml``: no driver or no device means no CUDA GPU), not by importing torch
in the user's interpreter: it is cheap, needs no torch, and is what ``plan`` uses for the GPU name too. A user
interpreter whose torch lacks CUDA on a GPU machine is reported by the run itself, with its reason.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from hotkernel._util.fs import sha256_by_stat, sha256_text
from hotkernel._util.nvml import visible_gpu_name
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest, manifest_fingerprint, resolved_target
from hotkernel.reconcile.models import CompetitorItem, Plan, PlanItem, SyncReport
from hotkernel.run.competitors import (
    competitor_path,
    competitor_sources_sha256,
    competitor_who,
    expected_competitor_sha256,
)
from hotkernel.run.render import contract_module, contract_sha256, expected_baseline
from hotkernel.run.runner import sources_digest
from hotkernel.store.leaderboard import current_protocol, load_record, store_problems
from hotkernel.workspace.lockfile import Lock, LockEntry, read_lock, record_file
from hotkernel.workspace.paths import Workspace

CPU_DEVICE = "cpu"
NO_GPU = "no-gpu"

_AUTO: Any = object()


def load_workspace_manifest(ws: Workspace) -> Any:
    """``load_manifest`` on the workspace's hotkernel.yaml (its errors name the line and the fix)."""
    return load_manifest(ws.manifest)


def expected_baseline_sha(context: dict[str, Any]) -> str:
    return sha256_text(expected_baseline(context))


def target_state(
    ws: Workspace, context: dict[str, Any], manifest_fingerprint: str, contract_sha: str
) -> dict[str, Any]:
    """What the target would be recorded with now, and what is on disk."""
    target_dir = ws.targets_dir / context["name"]
    return {
        "name": context["name"],
        "manifest": manifest_fingerprint,
        "baseline_sha256": expected_baseline_sha(context),
        "contract_sha256": contract_sha,
        "candidate_sha256": sha256_by_stat(target_dir / "candidate.py"),
        "baseline_on_disk": sha256_by_stat(target_dir / "baseline.py"),
        "contract_on_disk": sha256_by_stat(ws.contract_file),
        "sources_sha256": sources_sha(ws, context),
    }


def competitor_state(
    ws: Workspace, context: dict[str, Any], manifest_fingerprint: str, contract_sha: str, competitor: str
) -> dict[str, Any]:
    """What a competitor would be recorded with now: the lock entry's parts (its script as ``candidate``)."""
    return {
        "manifest": manifest_fingerprint,
        "baseline_sha256": expected_baseline_sha(context),
        "contract_sha256": contract_sha,
        "candidate_sha256": expected_competitor_sha256(context, competitor),
        "sources_sha256": competitor_sources_sha256(ws, context, competitor),
    }


def entry_reasons(state: dict[str, Any], entries: dict[str, LockEntry], device: str) -> tuple[LockEntry, list[str]]:
    """The lock entry a record on ``device`` is judged by, and the reasons every kind of record shares: no
    record on this GPU, the manifest entry, the protocol, the contract. ``entries`` must not be empty."""
    reasons: list[str] = []
    found = entries.get(device)
    if found is None and device != NO_GPU:
        reasons.append(f"no record on this GPU ({device})")
    entry = found or latest_entry(entries)
    assert entry is not None  # entries is not empty
    protocol = current_protocol()
    if entry.manifest != state["manifest"]:
        reasons.append("manifest changed")
    if entry.protocol != protocol:
        reasons.append(f"recorded with contract protocol {entry.protocol} (current {protocol})")
    if entry.contract_sha256 != state["contract_sha256"]:
        reasons.append("contract changed")
    return entry, reasons


def competitor_reasons(
    ws: Workspace, state: dict[str, Any], entries: dict[str, LockEntry], device: str, lock: Lock | None = None
) -> list[str]:
    """Why a competitor must be re-run, in a fixed order; [] when its record on ``device`` stands.

    Its script is generated: a missing or edited copy is re-rendered by sync, so only what the record was made
    from (the lock entry's fingerprints) matters here.
    """
    if not entries:
        return ["new"]
    entry, reasons = entry_reasons(state, entries, device)
    fresh = "contract changed" not in reasons and "manifest changed" not in reasons
    if fresh and (entry.baseline_sha256, entry.candidate_sha256) != (
        state["baseline_sha256"],
        state["candidate_sha256"],
    ):
        reasons.append("templates changed")
    if entry.sources_sha256 != state["sources_sha256"]:
        reasons.append("source changed")
    reason = record_state(ws, entry.record, lock)
    if reason:
        reasons.append(reason)
    return reasons


def competitor_items(
    ws: Workspace,
    manifest: Any,
    name: str,
    context: dict[str, Any],
    fingerprint: str,
    contract_sha: str,
    device: str,
    lock: Lock,
) -> list[CompetitorItem]:
    """The out-of-date competitors of target ``name`` on ``device``, in manifest order."""
    items = []
    kind = CPU_DEVICE if device == CPU_DEVICE else "cuda"
    for competitor in manifest.targets[name].competitors:
        state = competitor_state(ws, context, fingerprint, contract_sha, competitor)
        reasons = competitor_reasons(ws, state, lock.competitor_entries(name, competitor), device, lock)
        if reasons:
            script = competitor_path(ws, name, competitor).relative_to(ws.root).as_posix()
            items.append(
                CompetitorItem(
                    name=name,
                    competitor=competitor,
                    who=competitor_who(competitor),
                    script=script,
                    action="create" if reasons == ["new"] else "update",
                    reasons=reasons,
                    device_kind=kind,
                )
            )
    return items


def sources_sha(ws: Workspace, context: dict[str, Any]) -> str:
    """Fingerprint of the target's own source files (the folders of its ./file.py references)."""
    return sources_digest(ws, context)


def device_key(context: dict[str, Any], gpu_name: str | None) -> str:
    """The lock's device key for a target: 'cpu' for cpu targets, else the GPU name (or 'no-gpu')."""
    if str(context.get("device", "cuda")) == CPU_DEVICE:
        return CPU_DEVICE
    return gpu_name or NO_GPU


def device_ran_on(device_kind: str, facts: dict[str, Any] | None, ran: str | None, gpu_name: str | None) -> str:
    """The lock's device key of a finished verify of a ``device_kind`` target: 'cpu'; else the GPU a lane ran it
    on (its ``facts``, else the result's device ``ran``), or, run in this process (``facts`` None), ``gpu_name``."""
    if device_kind == CPU_DEVICE:
        return CPU_DEVICE
    return (facts or {}).get("device") or (ran if facts is not None else None) or gpu_name or NO_GPU


def latest_entry(entries: dict[str, LockEntry]) -> LockEntry | None:
    """The entry with the newest record path (record names sort by UTC time)."""
    if not entries:
        return None
    return max(entries.values(), key=lambda e: (Path(e.record).name, e.device))


def out_of_date_reasons(
    ws: Workspace, state: dict[str, Any], entries: dict[str, LockEntry], device: str, lock: Lock | None = None
) -> list[str]:
    """Why a target must be re-run, in a fixed order; [] when it is up to date."""
    if not entries:
        return ["new"]
    entry, reasons = entry_reasons(state, entries, device)
    fresh = "contract changed" not in reasons and "manifest changed" not in reasons
    if fresh and entry.baseline_sha256 != state["baseline_sha256"]:
        reasons.append("templates changed")
    if entry.sources_sha256 != state["sources_sha256"]:
        reasons.append("baseline source changed")
    if state["candidate_sha256"] is None:
        reasons.append("candidate not rendered")
    elif entry.candidate_sha256 != state["candidate_sha256"]:
        reasons.append("candidate changed")
    baseline = baseline_file_state(ws, state, entries)
    if baseline == "missing":
        reasons.append("baseline not rendered")
    elif baseline == "edited":
        reasons.append("baseline edited (verify will say invalid; delete it to re-render)")
    elif baseline == "stale" and not reasons:  # verify refuses a baseline that is not the current render
        reasons.append("baseline is an older render (sync re-renders it)")
    contract = contract_file_state(state, entries)
    if contract == "missing":
        reasons.append("contract not rendered")
    elif contract == "edited":
        reasons.append("contract edited (verify will say invalid; delete it to re-render)")
    reason = record_state(ws, entry.record, lock)
    if reason:
        reasons.append(reason)
    return reasons


def record_state(ws: Workspace, record: str, lock: Lock | None) -> str | None:
    """Why the record a lock entry names does not stand (missing, damaged, not vouched, invalidated), or None."""
    path = record_file(ws, record)
    if path is None:
        return "record missing"
    try:
        parsed = load_record(path)
    except HotkernelError:
        return "record damaged"
    if parsed is None:
        return "record damaged"
    if lock is not None and record in lock.records and lock.records[record] != sha256_by_stat(path):
        return "record not vouched for (its content differs from the records index)"
    return "record invalidated" if parsed.invalidated is not None else None


def baseline_file_state(ws: Workspace, state: dict[str, Any], entries: dict[str, LockEntry]) -> str:
    """'ok', 'missing', 'stale' (an untouched older render) or 'edited' for targets/<name>/baseline.py."""
    on_disk = state["baseline_on_disk"]
    if on_disk is None:
        return "missing"
    if on_disk == state["baseline_sha256"]:
        return "ok"
    if on_disk in {e.baseline_sha256 for e in entries.values()}:
        return "stale"
    return "stale" if is_pristine_render(ws.targets_dir / state["name"] / "baseline.py") else "edited"


RENDERED_PROTOCOL_RE = re.compile(r"^\(contract protocol (\d{1,3}), targets/hk_contract\.py\)\.$", re.M)


def is_pristine_render(baseline: Path) -> bool:
    """True when ``baseline`` is exactly what its own embedded SPEC renders, under the contract protocol its
    docstring names (an untouched render by this or an older hotkernel), so sync may replace it."""
    try:
        text = baseline.read_text(encoding="utf-8")
        spec = contract_module().read_spec(str(baseline))
        named = RENDERED_PROTOCOL_RE.search(text)
        protocol = int(named.group(1)) if named else None
        return sha256_text(expected_baseline(spec, protocol=protocol)) == sha256_text(text)
    except Exception:  # unreadable SPEC, or a SPEC the current templates cannot render: not pristine
        return False


def contract_file_state(state: dict[str, Any], entries: dict[str, LockEntry]) -> str:
    """'ok', 'missing', 'stale' (a contract an earlier record used) or 'edited' for targets/hk_contract.py."""
    on_disk = state["contract_on_disk"]
    if on_disk is None:
        return "missing"
    if on_disk == state["contract_sha256"]:
        return "ok"
    return "stale" if on_disk in {e.contract_sha256 for e in entries.values()} else "edited"


def plan(ws: Workspace, *, names: list[str] | None = None, gpu_name: Any = _AUTO, manifest: Any = None) -> Plan:
    """What ``sync`` would run and why: a pure function of the manifest, the files, the lock and the GPU name.

    ``gpu_name``: the current GPU's name, None for a machine without one; by default asked from NVML.
    """
    manifest = manifest if manifest is not None else load_workspace_manifest(ws)
    selected = select_names(manifest, names)
    lock = read_lock(ws)
    if gpu_name is _AUTO:
        gpu_name = visible_gpu_name()
    contract_sha = contract_sha256()
    items: list[PlanItem] = []
    rivals: list[CompetitorItem] = []
    up_to_date: list[str] = []
    notes: list[str] = []
    compared_without_gpu = False
    for name in selected:
        context = resolved_target(manifest, name)
        fingerprint = manifest_fingerprint(manifest, name)
        state = target_state(ws, context, fingerprint, contract_sha)
        device = device_key(context, gpu_name)
        entries = lock.entries(name)
        rivals += competitor_items(ws, manifest, name, context, fingerprint, contract_sha, device, lock)
        reasons = out_of_date_reasons(ws, state, entries, device, lock)
        kind = CPU_DEVICE if device == CPU_DEVICE else "cuda"
        compared_without_gpu = compared_without_gpu or (device == NO_GPU and bool(entries))
        if reasons:
            action = "create" if reasons == ["new"] else "update"
            items.append(PlanItem(name=name, action=action, reasons=reasons, device_kind=kind))
        else:
            up_to_date.append(name)
    if compared_without_gpu:
        notes.append("no NVIDIA GPU here: cuda targets were compared with their latest record on any GPU")
    problems = store_problems(ws, lock)
    return Plan(
        device=gpu_name or NO_GPU,
        items=items,
        competitors=rivals,
        up_to_date=up_to_date,
        notes=notes,
        problems=problems,
    )


def select_names(manifest: Any, names: list[str] | None) -> list[str]:
    """The targets to consider: all (sorted), or ``names`` after checking each is in the manifest."""
    known = sorted(manifest.targets)
    if not names:
        return known
    unknown = [n for n in names if n not in manifest.targets]
    if unknown:
        raise HotkernelError(
            f"hotkernel.yaml: no target named {unknown[0]!r} (targets: {', '.join(known) or 'none'}); "
            "add it with `hotkernel new` or check the spelling"
        )
    return sorted(dict.fromkeys(names))


def plan_lines(p: Plan) -> list[str]:
    """terraform-style lines: ``+ name: new``, ``~ name: candidate changed``, then a summary line."""
    lines = [f"{'+' if i.action == 'create' else '~'} {i.name}: {', '.join(i.reasons)}" for i in p.items]
    lines += [
        f"{'+' if c.action == 'create' else '~'} {c.name} competitor {c.competitor}: {', '.join(c.reasons)}"
        for c in p.competitors
    ]
    lines += [f"! {problem}" for problem in p.problems]
    lines += [f"  note: {note}" for note in p.notes]
    adds = sum(1 for i in p.items if i.action == "create")
    changes = len(p.items) - adds
    stale = stale_generated(p.problems)
    torn = f" {len(p.problems)} problem(s) in results/ or LEADERBOARD.md (lines with '!')." if p.problems else ""
    rivals = f" {len(p.competitors)} competitor(s) to run." if p.competitors else ""
    board = (
        f" Out of date: {', '.join(stale)} (regenerate with `hotkernel leaderboard`; `hotkernel sync` does too)."
        if stale
        else ""
    )
    if not p.items and not p.competitors and not stale:
        lines.append(f"No changes. {len(p.up_to_date)} target(s) up to date.{rivals}{torn}")
    elif not p.items and not p.competitors:
        lines.append(f"Plan: the board to regenerate, {len(p.up_to_date)} target(s) up to date.{board}{torn}")
    else:
        lines.append(f"Plan: {adds} to add, {changes} to change, {len(p.up_to_date)} up to date.{rivals}{torn}")
    return lines


GENERATED_STALE = re.compile(r"^(\S+) is (stale|missing)\b")


def stale_generated(problems: list[str]) -> list[str]:
    """The generated files (LEADERBOARD.md, a roofline chart, the README headline) that ``problems`` name as
    stale or missing: the board is out of date, as after a kill between a record and the board's rewrite."""
    names = [m.group(1) for m in map(GENERATED_STALE.match, problems) if m and not m.group(1).startswith("results/")]
    return list(dict.fromkeys(names))


def plan_exit_code(p: Plan) -> int:
    """``plan``'s exit status for scripts: 0 up to date, 2 when a target, a competitor or the board is out of date
    or results/ has a problem line (as ``sync --check``)."""
    return 2 if p.out_of_date or p.problems else 0


def check_exit_code(report: SyncReport) -> int:
    """``sync --check``: 0 up to date, 2 out of date (a target or a competitor) or torn state (a problem line)."""
    return 2 if report.plan.out_of_date or report.plan.problems else 0
