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
import tempfile
from pathlib import Path
from typing import Any

from hotkernel import __version__
from hotkernel.errors import HotkernelError
from hotkernel.leaderboard import (
    current_protocol,
    device_of,
    load_record,
    load_records,
    not_counted_reason,
    write_leaderboard,
)
from hotkernel.results import HistoryEntry, Invalidation, Provenance, Record, RecordResult, VerifyResult
from hotkernel.workspace import Workspace, validate_target_name


def atomic_write_text(path: Path, text: str, *, overwrite: bool) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one, never a partial file.

    With ``overwrite=False`` an existing ``path`` raises FileExistsError (nothing is replaced).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # atomic and never clobbers: FileExistsError when taken
            except (AttributeError, NotImplementedError, PermissionError):
                if path.exists():
                    raise FileExistsError(path) from None
                os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return path


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


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


def _run(cmd: list[str], *, cwd: Path | None = None, timeout: float = 10.0) -> str | None:
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state(root: Path) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty?) of the workspace's git repository, (None, None) outside one."""
    commit = _run(["git", "-C", str(root), "rev-parse", "HEAD"])
    if commit is None:  # a copy of the workspace without .git (e.g. a GPU machine): the caller may say
        pinned = os.environ.get("HOTKERNEL_GIT_COMMIT", "").strip()
        return (pinned, None) if pinned else (None, None)
    status = _run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"])
    return commit, bool(status)


def cpu_model() -> str:
    """The host CPU's model name (from /proc/cpuinfo on Linux)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def gpu_facts(device_name: str | None) -> dict[str, Any]:
    """UUID, driver, power limit and clocks of the GPU named ``device_name`` (else the first GPU).

    ``hotkernel.gpu_info.gpu_info()`` when that module is there, else a local NVML / nvidia-smi probe.
    """
    try:
        from hotkernel.gpu_info import gpu_info
    except ImportError:
        return nvml_gpu_facts(device_name)
    try:
        info = gpu_info()
    except Exception:
        return nvml_gpu_facts(device_name)
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


def nvml_gpu_facts(device_name: str | None) -> dict[str, Any]:
    """UUID, driver, power limit and clocks of the GPU named ``device_name`` (else the first GPU).

    NVML first, nvidia-smi when NVML cannot load; {} when there is no NVIDIA driver.
    """
    try:
        import pynvml
    except ImportError:
        return _smi_gpu_facts(device_name)
    try:
        pynvml.nvmlInit()
    except Exception:
        return _smi_gpu_facts(device_name)
    try:
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        if not handles:
            return {}

        def text(value: Any) -> str:
            return value.decode() if isinstance(value, bytes) else str(value)

        names = [text(pynvml.nvmlDeviceGetName(h)) for h in handles]
        index = names.index(device_name) if device_name in names else 0
        handle = handles[index]
        facts: dict[str, Any] = {"device": names[index]}
        probes = {
            "gpu_uuid": lambda: text(pynvml.nvmlDeviceGetUUID(handle)),
            "driver": lambda: text(pynvml.nvmlSystemGetDriverVersion()),
            "power_limit_w": lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0,
        }
        for key, probe in probes.items():
            with contextlib.suppress(Exception):
                facts[key] = probe()
        clocks: dict[str, float] = {}
        for key, getter, kind in (
            ("sm", pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_SM),
            ("mem", pynvml.nvmlDeviceGetClockInfo, pynvml.NVML_CLOCK_MEM),
            ("max_sm", pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_SM),
            ("max_mem", pynvml.nvmlDeviceGetMaxClockInfo, pynvml.NVML_CLOCK_MEM),
        ):
            with contextlib.suppress(Exception):
                clocks[key] = float(getter(handle, kind))
        facts["clocks_mhz"] = clocks
        return facts
    except Exception:
        return _smi_gpu_facts(device_name)
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _smi_gpu_facts(device_name: str | None) -> dict[str, Any]:
    query = "name,uuid,driver_version,power.limit,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem"
    out = _run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"])
    if not out:
        return {}
    rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]
    row = next((r for r in rows if r and r[0] == device_name), rows[0])
    if len(row) < 8:
        return {}

    def number(value: str) -> float | None:
        try:
            return float(value)
        except ValueError:
            return None

    clocks = {k: number(v) for k, v in zip(("sm", "mem", "max_sm", "max_mem"), row[4:8], strict=True)}
    return {
        "device": row[0], "gpu_uuid": row[1], "driver": row[2], "power_limit_w": number(row[3]),
        "clocks_mhz": {k: v for k, v in clocks.items() if v is not None},
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
    out = _run([python, "-I", "-c", code], timeout=30.0)
    try:
        return {k: str(v) for k, v in json.loads(out or "{}").items()}
    except json.JSONDecodeError:
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
    from hotkernel.render import expected_baseline_sha256

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
    """Write the record atomically, regenerate LEADERBOARD.md, and say whether it beats the best so far."""
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
    if beats and ws.manifest.is_file():  # the loop keeps this candidate: the lock now points at it
        from hotkernel.reconcile import keep_in_lock

        keep_in_lock(ws, target, path.relative_to(ws.root).as_posix(), verify_result, device)
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
