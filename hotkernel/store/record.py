"""``record``: keep a verify result as ``results/<target>/<UTC timestamp>.json``, then regenerate the board.

Records are written atomically (a dot-named temp file in the same directory, fsync, then a hard link to the
final name, which fails instead of overwriting; ``os.replace`` where hard links are unsupported) and never
overwritten.
A record is never deleted: ``invalidate_record`` marks it as not counted and keeps the raw log.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from hotkernel import __version__
from hotkernel._util.fs import atomic_write_text
from hotkernel._util.git import git_state
from hotkernel.errors import HotkernelError
from hotkernel.insight.gpu_info import gpu_info
from hotkernel.run.models import VerifyResult
from hotkernel.store.leaderboard import (
    current_protocol,
    device_of,
    load_record,
    load_records,
    not_counted_reason,
    write_leaderboard,
)
from hotkernel.store.models import HistoryEntry, Invalidation, Provenance, Record, RecordResult
from hotkernel.workspace.paths import Workspace, validate_target_name


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def write_new_json(directory: Path, stem: str, data: dict[str, Any]) -> Path:
    """Write ``directory/<stem>.json`` atomically; on a name collision ``<stem>_001.json``, ``_002``, ...

    The suffix keeps names in time order when sorted as strings ('.' sorts before '_').
    """
    text = json.dumps(data, indent=2, sort_keys=True) + "\n"
    for attempt in range(1000):
        path = directory / (f"{stem}.json" if attempt == 0 else f"{stem}_{attempt:03d}.json")
        if path.exists():
            continue
        try:
            return atomic_write_text(path, text, overwrite=False)
        except FileExistsError:
            continue
    raise HotkernelError(
        f"{directory}: 1000 records share the timestamp {stem}; wait a second and record again"
    )


# ---------------------------------------------------------------- provenance


def cpu_model() -> str:
    """The host CPU's model name (from /proc/cpuinfo on Linux)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def gpu_facts(device_name: str | None) -> dict[str, Any]:
    """UUID, driver, power limit and clocks of the GPU named ``device_name`` (else the first GPU).

    From ``gpu_info()`` (NVML, else nvidia-smi); {} without an NVIDIA GPU.
    """
    info = gpu_info()
    if not info.gpus:
        return {}
    gpu = next((g for g in info.gpus if g.name == device_name), info.gpus[0])
    clocks = {
        "sm": gpu.sm_clock_mhz, "mem": gpu.mem_clock_mhz,
        "max_sm": gpu.sm_clock_max_mhz, "max_mem": gpu.mem_clock_max_mhz,
    }
    return {
        "device": gpu.name, "gpu_uuid": gpu.uuid, "driver": info.driver_version,
        "power_limit_w": gpu.power_limit_w,
        "clocks_mhz": {k: float(v) for k, v in clocks.items() if v is not None},
    }


def package_versions(python: str | None) -> dict[str, str]:
    """torch and triton versions installed in the user's interpreter (importlib.metadata: imports neither)."""
    if not python:
        return {}
    code = (
        "import importlib.metadata as m, json\n"
        "v = {}\n"
        "for p in ('torch', 'triton'):\n"
        "    try: v[p] = m.version(p)\n"
        "    except Exception: pass\n"
        "print(json.dumps(v))\n"
    )
    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=30.0, check=False)
        return {k: str(v) for k, v in json.loads(out.stdout or "{}").items()} if out.returncode == 0 else {}
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError, AttributeError):
        return {}


def collect_provenance(ws: Workspace, result: VerifyResult, *, python: str | None = None,
                       device_kind: str | None = None) -> Provenance:
    """GPU/CPU facts, versions and the git state, for a record of ``result``."""
    kind = result.device_kind or device_kind or ("cpu" if (result.device or "").lower() == "cpu" else "cuda")
    facts = gpu_facts(result.device) if kind == "cuda" else {}
    versions = dict(result.versions)
    missing = [p for p in ("torch", "triton") if p not in versions]
    if missing:
        versions = {**package_versions(python or result.python), **versions}
    commit, dirty = git_state(ws.root)
    return Provenance(
        device=result.device or facts.get("device") or (cpu_model() if kind == "cpu" else None),
        device_kind=kind,
        gpu_uuid=facts.get("gpu_uuid"),
        driver=facts.get("driver"),
        power_limit_w=facts.get("power_limit_w"),
        clocks_mhz=facts.get("clocks_mhz", {}),
        cpu=cpu_model(),
        torch=versions.get("torch"),
        triton=versions.get("triton"),
        python=python or result.python,
        hotkernel=__version__,
        git_commit=commit,
        git_dirty=dirty,
    )


# ---------------------------------------------------------------- record / invalidate / history


def _one_line(value: str, what: str) -> str:
    text = (value or "").strip()
    if not text:
        raise HotkernelError(f"record: {what} is empty: pass --{what} '...' (one line)")
    if "\n" in text or "\r" in text:
        raise HotkernelError(f"record: {what} must be one line: put the detail in the commit message")
    return text


def best_counted(ws: Workspace, target: str, device: str, protocol: int) -> tuple[float | None, str | None]:
    """(best counted faster speedup, its record path) for ``target`` on ``device``."""
    best: tuple[float | None, str | None] = (None, None)
    for path, rec in load_records(ws.results_dir):
        if rec.target != target or device_of(rec) != device or not_counted_reason(rec, protocol) is not None:
            continue
        if rec.result.verdict == "faster" and rec.result.speedup is not None:
            if best[0] is None or rec.result.speedup > best[0]:
                best = (rec.result.speedup, path)
    return best


def mismatched_verify_reason(ws: Workspace, target: str, verify_result: VerifyResult) -> str | None:
    """Why ``verify_result`` cannot be recorded for ``target`` in this workspace, or None.

    With a manifest: the target must be in it, the baseline side must have been ``targets/<target>/baseline.py``,
    and (for a timed verdict) that file as hotkernel.yaml renders it now, not an older render or another script.
    """
    if not ws.manifest.is_file():
        return None
    from hotkernel.manifest import load_manifest, resolved_target
    from hotkernel.run.render import expected_baseline_sha256

    manifest = load_manifest(ws.manifest)
    if target not in manifest.targets:
        known = ", ".join(sorted(manifest.targets)) or "none"
        return f"record: hotkernel.yaml has no target named {target!r} (targets: {known})"
    script = Path(verify_result.baseline.script)
    if script.name != "baseline.py" or script.parent.name != target:
        return (f"record: the baseline side of this verify was {verify_result.baseline.script}, not "
                f"targets/{target}/baseline.py; verify against the generated baseline, then record")
    ran = verify_result.baseline.sha256  # what the contract reported; a hand-made result may lack it, and then
    # keep_in_lock leaves the lock alone
    if ran and ran != expected_baseline_sha256(resolved_target(manifest, target)):
        return (f"record: this verify ran targets/{target}/baseline.py as it was before hotkernel.yaml changed "
                f"(sha256 {str(ran)[:12]} is not the current render's); verify {target} again, then record")
    return None


def record(
    ws: Workspace,
    target: str,
    verify_result: VerifyResult,
    *,
    note: str,
    who: str,
    python: str | None = None,
    fingerprint: dict[str, Any] | None = None,
    provenance: Provenance | None = None,
    device_kind: str | None = None,
) -> RecordResult:
    """Write the record atomically, regenerate LEADERBOARD.md, and say whether it beats the best so far.

    Pointing the lock at a candidate that beats the best is the reconciler's part
    (``hotkernel.reconcile.sync.record_and_keep``): the store never writes the lock.
    """
    validate_target_name(target)
    who = _one_line(who, "who")
    note = _one_line(note, "note")
    if verify_result.target is not None and verify_result.target != target:
        raise HotkernelError(
            f"record: the result is for target {verify_result.target!r}, not {target!r}: "
            f"run `hotkernel record {verify_result.target} ...`"
        )
    mismatch = mismatched_verify_reason(ws, target, verify_result)
    if mismatch:
        raise HotkernelError(mismatch)
    protocol = current_protocol()
    prov = provenance or collect_provenance(ws, verify_result, python=python, device_kind=device_kind)
    device = prov.device or verify_result.device or "unknown"
    previous, previous_path = best_counted(ws, target, device, protocol)
    now = utc_now()
    rec = Record(
        target=target,
        created_at=now.isoformat(timespec="seconds").replace("+00:00", "Z"),
        who=who,
        note=note,
        contract=verify_result.protocol,
        result=verify_result,
        provenance=prov,
        fingerprint=fingerprint or {},
    )
    directory = ws.results_dir / target
    path = write_new_json(directory, now.strftime("%Y%m%dT%H%M%SZ"), rec.model_dump(mode="json"))
    leaderboard = write_leaderboard(ws)
    counted = not_counted_reason(rec, protocol) is None
    speedup = verify_result.speedup
    beats = (
        counted
        and verify_result.verdict == "faster"
        and speedup is not None
        and (previous is None or speedup > previous)
    )
    return RecordResult(
        path=path.relative_to(ws.root).as_posix(),
        target=target,
        device=device,
        verdict=verify_result.verdict,
        speedup=speedup if verify_result.verdict in ("faster", "slower") else None,
        beats_best=bool(beats),
        previous_best=previous,
        previous_best_path=previous_path,
        leaderboard=leaderboard.relative_to(ws.root).as_posix(),
    )


def _record_path(ws: Workspace, path: str | os.PathLike[str]) -> Path:
    resolved = ws.inside(path, what="record")
    if ws.results_dir.resolve() not in resolved.parents or not resolved.is_file():
        raise HotkernelError(
            f"record {os.fspath(path)!r} is not a file under results/: "
            "pass a path shown by `hotkernel history TARGET`"
        )
    return resolved


def invalidate_record(ws: Workspace, path: str | os.PathLike[str], reason: str) -> Record:
    """Mark a record as not counted (``invalidated: {reason, at}``), keep the raw log, redo the board."""
    reason = _one_line(reason, "reason")
    resolved = _record_path(ws, path)
    rec = load_record(resolved)
    if rec is None:
        raise HotkernelError(f"{resolved}: not a hotkernel record (no kind: record); nothing to invalidate")
    if rec.invalidated is not None:
        raise HotkernelError(f"{resolved.relative_to(ws.root.resolve()).as_posix()}: already invalidated at "
                             f"{rec.invalidated.at} ({rec.invalidated.reason}); the first reason stays")
    at = utc_now().isoformat(timespec="seconds").replace("+00:00", "Z")
    rec.invalidated = Invalidation(reason=reason, at=at)
    atomic_write_text(resolved, json.dumps(rec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n",
                      overwrite=True)
    write_leaderboard(ws)
    return rec


def history(ws: Workspace, target: str) -> list[HistoryEntry]:
    """Every record of ``target``, oldest first."""
    validate_target_name(target)
    protocol = current_protocol()
    entries = []
    for path, rec in load_records(ws.results_dir):
        if rec.target != target:
            continue
        reason = not_counted_reason(rec, protocol)
        has_speedup = rec.result.verdict in ("faster", "slower")
        entries.append(
            HistoryEntry(
                path=path,
                created_at=rec.created_at,
                device=device_of(rec),
                verdict=rec.result.verdict,
                speedup=rec.result.speedup if has_speedup else None,
                interval=rec.result.interval if has_speedup else None,
                who=rec.who,
                note=rec.note,
                counted=reason is None,
                not_counted_reason=reason,
            )
        )
    entries.sort(key=lambda e: (e.created_at, e.path))
    return entries
