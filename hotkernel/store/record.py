"""``record``: keep a verify result as ``results/<target>/<UTC timestamp>.json``, index it in hotkernel.lock,
then regenerate the board.

Records are written atomically (a dot-named temp file in the same directory, fsync, then a hard link to the
final name, which fails instead of overwriting; ``os.replace`` where hard links are unsupported) and never
overwritten.
A record is never deleted: ``invalidate_record`` marks it as not counted and keeps the raw log.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hotkernel import __version__
from hotkernel._util.fs import atomic_write_text, sha256_file, sha256_text
from hotkernel._util.git import git_state
from hotkernel.errors import HotkernelError
from hotkernel.insight.gpu_info import gpu_info
from hotkernel.manifest import correctness_bounds, load_manifest, manifest_fingerprint, resolved_target
from hotkernel.run.models import VerifyResult
from hotkernel.run.render import expected_baseline_sha256
from hotkernel.store.compact import COMPACT_SCHEMA, encode
from hotkernel.store.leaderboard import (
    best_entries,
    current_protocol,
    device_of,
    files_key,
    leaderboard_rows,
    load_record,
    not_counted_reason,
    scan_results,
    write_leaderboard,
)
from hotkernel.store.models import (
    BestEntry,
    HistoryEntry,
    Invalidation,
    LeaderboardRow,
    Provenance,
    Record,
    RecordResult,
)
from hotkernel.store.recompute import recompute_problem
from hotkernel.store.rows import result_files
from hotkernel.workspace.lockfile import Lock, read_lock, workspace_lock, write_lock
from hotkernel.workspace.paths import Workspace, validate_target_name


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def write_new_json(directory: Path, stem: str, data: dict[str, Any] | str) -> Path:
    """Write ``directory/<stem>.json`` atomically; on a name collision ``<stem>_001.json``, ``_002``, ...

    ``data``: the file's text, or a JSON object written indented. The suffix keeps names in time order when
    sorted as strings ('.' sorts before '_').
    """
    text = data if isinstance(data, str) else json.dumps(data, indent=2, sort_keys=True) + "\n"
    for attempt in range(1000):
        path = directory / (f"{stem}.json" if attempt == 0 else f"{stem}_{attempt:03d}.json")
        if path.exists():
            continue
        try:
            return atomic_write_text(path, text, overwrite=False)
        except FileExistsError:
            continue
    raise HotkernelError(f"{directory}: 1000 records share the timestamp {stem}; wait a second and record again")


# ---------------------------------------------------------------- provenance


def cpu_model() -> str:
    """The host CPU's model name (from /proc/cpuinfo on Linux)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def gpu_facts(device_name: str | None, uuid: str | None = None) -> dict[str, Any]:
    """UUID, driver, power limit and clocks of the GPU with ``uuid``, else the first named ``device_name``
    (else the first GPU).

    From ``gpu_info()`` (NVML, else nvidia-smi); {} without an NVIDIA GPU.
    """
    info = gpu_info()
    if not info.gpus:
        return {}
    gpu = next((g for g in info.gpus if uuid and g.uuid == uuid), None) or next(
        (g for g in info.gpus if g.name == device_name), info.gpus[0]
    )
    clocks = {
        "sm": gpu.sm_clock_mhz,
        "mem": gpu.mem_clock_mhz,
        "max_sm": gpu.sm_clock_max_mhz,
        "max_mem": gpu.mem_clock_max_mhz,
    }
    return {
        "device": gpu.name,
        "gpu_uuid": gpu.uuid,
        "driver": info.driver_version,
        "power_limit_w": gpu.power_limit_w,
        "clocks_mhz": {k: float(v) for k, v in clocks.items() if v is not None},
    }


VERSIONS_KEPT_S = 300.0  # a sync writes a record per target: the interpreter is asked once in this long
_VERSIONS: dict[str, tuple[float, dict[str, str]]] = {}  # python -> (monotonic time asked, versions)


def package_versions(python: str | None) -> dict[str, str]:
    """torch and triton versions installed in the user's interpreter (importlib.metadata: imports neither), asked
    at most once every ``VERSIONS_KEPT_S`` per interpreter (each ask starts it)."""
    if not python:
        return {}
    kept = _VERSIONS.get(python)
    if kept is not None and time.monotonic() - kept[0] < VERSIONS_KEPT_S:
        return dict(kept[1])
    versions = _ask_versions(python)
    if versions:
        _VERSIONS[python] = (time.monotonic(), versions)
    return dict(versions)


def _ask_versions(python: str) -> dict[str, str]:
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


def collect_provenance(
    ws: Workspace,
    result: VerifyResult,
    *,
    python: str | None = None,
    device_kind: str | None = None,
    facts: dict[str, Any] | None = None,
    cpu: str | None = None,
) -> Provenance:
    """GPU/CPU facts, versions and the git state, for a record of ``result``.

    ``facts`` (``gpu_facts`` of the GPU that ran it) and ``cpu``: measured where the run happened (a sync lane,
    a cluster node) instead of probed here.
    """
    kind = result.device_kind or device_kind or ("cpu" if (result.device or "").lower() == "cpu" else "cuda")
    if facts is None:
        facts = gpu_facts(result.device) if kind == "cuda" else {}
    cpu = cpu or cpu_model()
    versions = dict(result.versions)
    missing = [p for p in ("torch", "triton") if p not in versions]
    if missing:
        versions = {**package_versions(python or result.python), **versions}
    commit, dirty = git_state(ws.root)
    return Provenance(
        device=result.device or facts.get("device") or (cpu if kind == "cpu" else None),
        device_kind=kind,
        gpu_uuid=facts.get("gpu_uuid"),
        driver=facts.get("driver"),
        power_limit_w=facts.get("power_limit_w"),
        clocks_mhz=facts.get("clocks_mhz", {}),
        cpu=cpu,
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


def best_counted(
    ws: Workspace, target: str, device: str, protocol: int, lock: Lock | None = None
) -> tuple[str, Record] | None:
    """(path, record) of the board's best for ``target`` on ``device`` (a confirmed counted faster candidate,
    ``store/rows.py``), or None."""
    entry, _ = board_view(ws, target, device, protocol, lock)
    if entry is None or entry.best is None:
        return None
    return next((p, r) for p, r in scan_results(ws, lock).records if p == entry.best.path)


def board_view(
    ws: Workspace, target: str, device: str, protocol: int, lock: Lock | None = None
) -> tuple[BestEntry | None, list[LeaderboardRow]]:
    """The board's entry of ``target`` on ``device`` (None when it has no record) and its rows."""
    records = [(p, r) for p, r in scan_results(ws, lock).records if r.target == target and device_of(r) == device]
    rows = leaderboard_rows(records, protocol)
    entries = best_entries(rows)
    return (entries[0] if entries else None), rows


def check_measured(
    ws: Workspace, target: str, result: VerifyResult, confirms: str | None, lock: Lock, run_id: str | None = None
) -> None:
    """Refuse, in one line, a result whose numbers do not recompute from its samples, a run already recorded, and
    a ``confirms`` that does not name a counted faster record of the same files."""
    problem = recompute_problem(result, target)
    if problem:
        raise HotkernelError(
            f"record: this result is not what its runs measured ({problem}); record a run the runner stored: "
            f"`hotkernel record {target} --latest`"
        )
    if run_id is not None:
        kept = next((p for p, r in scan_results(ws, lock).records if r.run_id == run_id), None)
        if kept is not None:
            raise HotkernelError(
                f"record: run {run_id} is already recorded as {kept}: one record per verify; verify again to "
                "record another"
            )
    if confirms is None:
        return
    first = next((r for p, r in scan_results(ws, lock).records if p == confirms), None)
    if first is None or first.target != target or first.result.verdict != "faster":
        raise HotkernelError(f"record: confirms={confirms!r} is not a counted faster record of {target!r}")
    if files_key(first) is None or files_key(first) != result_files(result):
        raise HotkernelError(
            f"record: confirms={confirms!r} measured other files than this verify; a confirmation verifies the "
            "same baseline and candidate"
        )


def run_tolerances(verify_result: VerifyResult) -> dict[str, Any] | None:
    """The correctness bounds the runs reported (protocol 2 puts ``tolerances`` in each run's JSON), or None:
    floats, and ``per_output`` (a list of such mappings) where the target sets ``output_tolerances``.

    Runs that disagree are an error: one verify has one target and one judge.
    """
    seen = {
        json.dumps(run.data["tolerances"], sort_keys=True)
        for run in verify_result.runs
        if run.data and isinstance(run.data.get("tolerances"), dict)
    }
    if len(seen) > 1:
        raise HotkernelError("record: the runs of this verify report different tolerances; verify again, then record")
    if not seen:
        return None
    reported = json.loads(seen.pop())
    return {
        key: [{k: float(v) for k, v in entry.items()} for entry in value] if isinstance(value, list) else float(value)
        for key, value in reported.items()
    }


def target_spec(ws: Workspace, target: str, verify_result: VerifyResult) -> tuple[dict[str, Any] | None, str | None]:
    """(resolved target, manifest fingerprint) that ``verify_result`` ran with; HotkernelError when it is not.

    With a manifest: the target must be in it, the baseline side must have been ``targets/<target>/baseline.py``,
    that file as hotkernel.yaml renders it now (not an older render or another script), and the tolerances the
    runs reported must be hotkernel.yaml's. Without a manifest: (None, None).
    """
    if not ws.manifest.is_file():
        return None, None
    manifest = load_manifest(ws.manifest)
    if target not in manifest.targets:
        known = ", ".join(sorted(manifest.targets)) or "none"
        raise HotkernelError(f"record: hotkernel.yaml has no target named {target!r} (targets: {known})")
    script = Path(verify_result.baseline.script)
    if script.name != "baseline.py" or script.parent.name != target:
        raise HotkernelError(
            f"record: the baseline side of this verify was {verify_result.baseline.script}, not "
            f"targets/{target}/baseline.py; verify against the generated baseline, then record"
        )
    spec = resolved_target(manifest, target)
    ran = verify_result.baseline.sha256  # what the contract reported; a hand-made result may lack it, and then
    # keep_in_lock leaves the lock alone
    if ran and ran != expected_baseline_sha256(spec):
        raise HotkernelError(
            f"record: this verify ran targets/{target}/baseline.py as it was before hotkernel.yaml "
            f"changed (sha256 {str(ran)[:12]} is not the current render's); verify {target} again, "
            "then record"
        )
    used = run_tolerances(verify_result) or {}
    per_output = correctness_bounds(spec).get("per_output")
    if "per_output" in used and used["per_output"] != per_output:
        raise HotkernelError(
            f"record: the runs judged {target} with other output_tolerances than hotkernel.yaml says; verify "
            f"{target} again (sync re-renders it), then record"
        )
    for key, value in used.items():
        if key == "per_output":
            continue
        if spec.get(key) is not None and not math.isclose(float(spec[key]), value, rel_tol=1e-12, abs_tol=0.0):
            raise HotkernelError(
                f"record: the runs judged {target} with {key} {value!r} but hotkernel.yaml says "
                f"{spec[key]!r}; verify {target} again (sync re-renders it), then record"
            )
    return spec, manifest_fingerprint(manifest, target)


# ---------------------------------------------------------------- what a run may not change


@dataclass(frozen=True)
class StoreSnapshot:
    """hotkernel.lock and every entry under results/ as they were before a run (taken by ``sync``)."""

    lock_sha256: str | None
    lock: Lock
    results: dict[str, str]


def results_digest(ws: Workspace) -> dict[str, str]:
    """Every file, symlink and folder under results/: path -> sha256 (``link:<target>`` for a symlink)."""
    out: dict[str, str] = {}
    if ws.results_dir.is_symlink():
        return {"results": f"link:{os.readlink(ws.results_dir)}"}
    if not ws.results_dir.is_dir():
        return out
    for path in sorted(ws.results_dir.rglob("*")):
        rel = path.relative_to(ws.root).as_posix()
        if path.is_symlink():
            out[rel] = f"link:{os.readlink(path)}"
        elif path.is_file():
            out[rel] = sha256_file(path) or "unreadable"
    return out


def store_snapshot(ws: Workspace) -> StoreSnapshot:
    """What ``record`` compares against after a run: the lock (bytes and model) and results/."""
    return StoreSnapshot(lock_sha256=sha256_file(ws.lock_file), lock=read_lock(ws), results=results_digest(ws))


def changed_since(ws: Workspace, before: StoreSnapshot) -> list[str]:
    """The workspace paths only hotkernel writes that differ from ``before`` (temp files of writers aside)."""
    changed = ["hotkernel.lock"] if sha256_file(ws.lock_file) != before.lock_sha256 else []
    now = results_digest(ws)
    differ = {p for p in set(now) | set(before.results) if now.get(p) != before.results.get(p)}
    return changed + sorted(p for p in differ if not Path(p).name.startswith("."))


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
    before: StoreSnapshot | None = None,
    competitor: str | None = None,
    board: bool = True,
    run_id: str | None = None,
    imported: bool = False,
    confirms: str | None = None,
) -> RecordResult:
    """Write the record and its index entry (inside the workspace lock), regenerate LEADERBOARD.md, and say
    whether it beats the best so far.

    ``board=False`` leaves LEADERBOARD.md (and the charts) to the caller: ``sync`` writes them once after all
    its records, since regenerating them reads every record (about 0.4 ms a record).
    ``before``: hotkernel.lock and results/ as they were before the run (``store_snapshot``). When the run
    changed them, the record is written invalidated, naming the files, and the lock is restored to ``before``
    (plus this record's index entry): nothing the run wrote is vouched for. Pointing the lock at a candidate
    that beats the best is the reconciler's part (``hotkernel.reconcile.sync.record_and_keep``).
    ``competitor``: the manifest's name of the competitor the candidate side ran: the record is kept with
    ``role: competitor`` and never beats the best.
    ``run_id``: the run-store id the result came from; ``imported``: the result came from a file
    (``record --import``), labelled so on the board; ``confirms``: the record of the first verify of the same
    files that this second verify confirms. A result whose verdict, speedup or interval does not follow from its
    samples is refused (``store/recompute.py``).
    """
    validate_target_name(target)
    who = _one_line(who, "who")
    note = _one_line(note, "note")
    if verify_result.target is not None and verify_result.target != target:
        raise HotkernelError(
            f"record: the result is for target {verify_result.target!r}, not {target!r}: "
            f"run `hotkernel record {verify_result.target} ...`"
        )
    spec, spec_fingerprint = target_spec(ws, target, verify_result)
    check_measured(ws, target, verify_result, confirms, read_lock(ws), run_id)
    tolerances = run_tolerances(verify_result)
    protocol = current_protocol()
    prov = provenance or collect_provenance(ws, verify_result, python=python, device_kind=device_kind)
    device = prov.device or verify_result.device or "unknown"
    with workspace_lock(ws, wait_s=60.0, command=f"hotkernel record {target}"):
        for folder in (ws.results_dir, ws.results_dir / target):
            if folder.is_symlink():
                raise HotkernelError(
                    f"{folder.relative_to(ws.root).as_posix()} is a symlink: records are written "
                    "only inside the workspace; replace it with a folder (git checkout -- results/)"
                )
        tampered = changed_since(ws, before) if before is not None else []
        lock = before.lock.model_copy(deep=True) if tampered and before is not None else read_lock(ws)
        entry, _ = board_view(ws, target, device, protocol, lock)
        now = utc_now()
        at = now.isoformat(timespec="seconds").replace("+00:00", "Z")
        rec = Record(
            target=target,
            created_at=at,
            who=who,
            note=note,
            contract=verify_result.protocol,
            result=verify_result.model_copy(update={"run_id": None}),  # the record's own run_id names it
            provenance=prov,
            fingerprint=fingerprint or {},
            spec=spec,
            manifest_fingerprint=spec_fingerprint,
            tolerances=tolerances,
            invalidated=Invalidation(reason=tamper_reason(tampered), at=at) if tampered else None,
            role="competitor" if competitor else "candidate",
            competitor=competitor,
            run_id=run_id,
            imported=imported,
            confirms=confirms,
        )
        path = write_new_json(ws.results_dir / target, now.strftime("%Y%m%dT%H%M%SZ"), record_text(rec))
        rel = path.relative_to(ws.root).as_posix()
        lock.records[rel] = sha256_file(path) or ""
        write_lock(ws, lock)
        _, after = board_view(ws, target, device, protocol, lock)
        leaderboard = write_leaderboard(ws) if board else ws.leaderboard
    counted = not_counted_reason(rec, protocol) is None
    judged = judge_record(rec, rel, entry, after, counted=counted, leaderboard=leaderboard.relative_to(ws.root))
    return judged.model_copy(update={"tampered": tampered})


def judge_record(
    rec: Record,
    rel: str,
    before: BestEntry | None,
    after: list[LeaderboardRow],
    *,
    counted: bool,
    leaderboard: Path,
) -> RecordResult:
    """Whether a record beats the board's best (its median) and whether a second verify confirms it yet."""
    result = rec.result
    speedup = result.speedup
    best = before.best if before is not None else None
    previous = before.median if before is not None and best is not None else None
    previous_interval = best.interval if best is not None else None
    beats = (
        counted
        and rec.role == "candidate"
        and result.verdict == "faster"
        and speedup is not None
        and (previous is None or speedup > previous)
    )
    # Clear: the two verifies' intervals do not overlap, so neither one's noise explains the order.
    clear = beats and (
        previous_interval is None or (result.interval is not None and result.interval[0] > previous_interval[1])
    )
    row = next((r for r in after if r.path == rel), None)
    confirmed = bool(row is not None and row.confirmed)
    return RecordResult(
        path=rel,
        target=rec.target,
        device=device_of(rec),
        verdict=result.verdict,
        speedup=speedup if result.verdict in ("faster", "slower") else None,
        beats_best=bool(beats),
        clear_of_best=bool(clear),
        awaiting_confirmation=bool(beats and not confirmed),
        confirmed=confirmed,
        previous_best=previous,
        previous_best_interval=previous_interval,
        previous_best_path=best.path if best is not None else None,
        leaderboard=leaderboard.as_posix(),
    )


def record_text(rec: Record) -> str:
    """A record file's text: compact (``store/compact.py``) for schema 2, as schema-1 files were written else."""
    data = rec.model_dump(mode="json")
    if rec.schema_version >= COMPACT_SCHEMA:
        return encode(data)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def tamper_reason(paths: list[str]) -> str:
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    return f"the run changed files only hotkernel writes ({shown}); hotkernel.lock was restored"


def _record_path(ws: Workspace, path: str | os.PathLike[str]) -> Path:
    resolved = ws.inside(path, what="record")
    if ws.results_dir.resolve() not in resolved.parents or not resolved.is_file():
        raise HotkernelError(
            f"record {os.fspath(path)!r} is not a file under results/: pass a path shown by `hotkernel history TARGET`"
        )
    return resolved


def invalidate_record(ws: Workspace, path: str | os.PathLike[str], reason: str) -> Record:
    """Mark a vouched record as not counted (``invalidated: {reason, at}``), keep the raw log, update its index
    entry, redo the board."""
    reason = _one_line(reason, "reason")
    resolved = _record_path(ws, path)
    rel = resolved.relative_to(ws.root.resolve()).as_posix()
    with workspace_lock(ws, wait_s=60.0, command=f"hotkernel invalidate {rel}"):
        lock = read_lock(ws)
        rec = load_record(resolved)
        if rec is None:
            raise HotkernelError(f"{rel}: not a hotkernel record (no kind: record); nothing to invalidate")
        if lock.records.get(rel) != sha256_file(resolved):
            raise HotkernelError(
                f"{rel}: not vouched for by hotkernel.lock (an unverified file never counts); "
                f"delete it, or restore it with `git checkout -- {rel}`"
            )
        if rec.invalidated is not None:
            raise HotkernelError(
                f"{rel}: already invalidated at {rec.invalidated.at} ({rec.invalidated.reason}); the first reason stays"
            )
        at = utc_now().isoformat(timespec="seconds").replace("+00:00", "Z")
        rec = rec.model_copy(update={"invalidated": Invalidation(reason=reason, at=at)})
        text = record_text(rec)
        atomic_write_text(resolved, text, overwrite=True)
        lock.records[rel] = sha256_text(text)
        write_lock(ws, lock)
        write_leaderboard(ws)
    return rec


def history(ws: Workspace, target: str) -> list[HistoryEntry]:
    """Every record of ``target``, oldest first, with its confirmation state as the board sees it."""
    validate_target_name(target)
    protocol = current_protocol()
    records = [(path, rec) for path, rec in scan_results(ws).records if rec.target == target]
    rows = {row.path: row for row in leaderboard_rows(records, protocol)}
    entries = []
    for path, rec in records:
        row = rows[path]
        entries.append(
            HistoryEntry(
                path=path,
                created_at=rec.created_at,
                device=row.device,
                verdict=rec.result.verdict,
                speedup=row.speedup,
                interval=row.interval,
                who=rec.who,
                note=rec.note,
                counted=row.counted,
                not_counted_reason=row.not_counted_reason,
                role=rec.role,
                competitor=rec.competitor,
                confirmed=row.confirmed,
                awaiting_confirmation=row.awaiting_confirmation,
                imported=rec.imported,
                run_id=rec.run_id,
                confirms=rec.confirms,
            )
        )
    entries.sort(key=lambda e: (e.created_at, e.path))
    return entries
