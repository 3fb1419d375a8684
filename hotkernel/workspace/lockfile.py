"""``hotkernel.lock`` (what each record was made from, and the index of records) and the workspace lock.

``hotkernel.lock`` is JSON with sorted keys, written only by hotkernel and atomically, read through ``Lock``::

    {"schema": 2,
     "targets": {"<name>": {"<device>": {"manifest": ..., "baseline_sha256": ..., "candidate_sha256": ...,
                  "contract_sha256": ..., "sources_sha256": ..., "device": ..., "protocol": 2,
                  "record": "results/<name>/<ts>.json", "verdict": ...}}},
     "records": {"results/<name>/<ts>.json": "<sha256 of the file>"},
     "competitors": {"<name>": {"<competitor>": {"<device>": {<an entry as above: candidate_sha256 is the
                     rendered competitor script's, sources_sha256 covers the competitor's own source too>}}}}}

``<device>`` is the GPU name for cuda targets and ``cpu`` for cpu targets. ``records`` is the index that
``record`` writes inside the workspace lock: the leaderboard counts only the files it vouches for.
Schema 1 (no ``records``, no ``protocol``: every entry was protocol 1) is read and rewritten as schema 2;
``competitors`` is optional (a lock without it has none recorded).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import Field, ValidationError, field_validator

from hotkernel._util.fs import atomic_write_text
from hotkernel._util.model import StrictModel
from hotkernel.errors import HotkernelError
from hotkernel.workspace.paths import TARGET_NAME_RE, Workspace

LOCK_SCHEMA = 2
RESTORE = "restore it with `git checkout -- hotkernel.lock`, or delete it to re-run every target"
# results/<target>/<file>.json: one directory level, a target name, a visible file name; nothing else
RECORD_PATH_RE = re.compile(
    r"results/(?P<target>[A-Za-z_][A-Za-z0-9_]{0,63})/(?P<file>[A-Za-z0-9_][A-Za-z0-9_.-]*\.json)"
)
SHA256_RE = re.compile(r"[0-9a-f]{64}")
TEMP_MAX_AGE_S = 60.0  # a writer's temp file older than this belongs to a process that died


def check_record_path(path: str, target: str | None = None) -> str:
    """``path`` when it is ``results/<target>/<name>.json`` (workspace-relative, no ``..``); else ValueError."""
    match = RECORD_PATH_RE.fullmatch(path)
    if match is None or ".." in path:
        raise ValueError(f"record {path!r} is not results/<target>/<name>.json")
    if target is not None and match["target"] != target:
        raise ValueError(f"record {path!r} is not under results/{target}/")
    return path


class LockEntry(StrictModel):
    """What one target's record on one device was made from."""

    manifest: str = Field(description="manifest_fingerprint of the target")
    baseline_sha256: str | None = Field(default=None, description="sha256 of the rendered baseline")
    candidate_sha256: str | None = Field(default=None, description="sha256 of the verified candidate")
    contract_sha256: str | None = Field(default=None, description="sha256 of the rendered contract")
    sources_sha256: str | None = Field(default=None, description="fingerprint of the target's source files")
    device: str = Field(description="'cpu' or the GPU name")
    record: str = Field(description="results/<target>/<name>.json the entry produced")
    verdict: str = Field(description="the recorded verdict")
    protocol: int = Field(default=1, strict=True, description="contract protocol of the runs (schema 1 locks: 1)")

    @field_validator("record")
    @classmethod
    def _record_inside_results(cls, value: str) -> str:
        return check_record_path(value)


class Lock(StrictModel):
    """The whole of ``hotkernel.lock``."""

    schema_: int = Field(default=LOCK_SCHEMA, alias="schema", strict=True, description="lock file layout version")
    targets: dict[str, dict[str, LockEntry]] = Field(default_factory=dict, description="target -> device -> entry")
    records: dict[str, str] = Field(default_factory=dict, description="record path -> sha256 of its bytes")
    competitors: dict[str, dict[str, dict[str, LockEntry]]] = Field(
        default_factory=dict,
        description="target -> competitor (as hotkernel.yaml names it) -> device -> entry",
    )

    model_config = {**StrictModel.model_config, "populate_by_name": True}

    @field_validator("targets")
    @classmethod
    def _names(cls, value: dict[str, dict[str, LockEntry]]) -> dict[str, dict[str, LockEntry]]:
        for name, entries in value.items():
            if not TARGET_NAME_RE.fullmatch(name):
                raise ValueError(f"target name {name!r} is not an identifier")
            for entry in entries.values():
                check_record_path(entry.record, name)
        return value

    @field_validator("competitors")
    @classmethod
    def _competitor_names(
        cls, value: dict[str, dict[str, dict[str, LockEntry]]]
    ) -> dict[str, dict[str, dict[str, LockEntry]]]:
        for name, competitors in value.items():
            if not TARGET_NAME_RE.fullmatch(name):
                raise ValueError(f"target name {name!r} is not an identifier")
            for devices in competitors.values():
                for entry in devices.values():
                    check_record_path(entry.record, name)
        return value

    @field_validator("records")
    @classmethod
    def _index(cls, value: dict[str, str]) -> dict[str, str]:
        for path, digest in value.items():
            check_record_path(path)
            if not SHA256_RE.fullmatch(digest):
                raise ValueError(f"records[{path!r}] is not a sha256 hex digest")
        return value

    def entries(self, target: str) -> dict[str, LockEntry]:
        return self.targets.get(target, {})

    def competitor_entries(self, target: str, competitor: str) -> dict[str, LockEntry]:
        """device -> entry of one competitor of ``target``."""
        return self.competitors.get(target, {}).get(competitor, {})

    def entry_records(self) -> set[str]:
        """Every record path a target or competitor entry names."""
        named = {e.record for entries in self.targets.values() for e in entries.values()}
        return named | {
            e.record for rivals in self.competitors.values() for devices in rivals.values() for e in devices.values()
        }


def read_lock(ws: Workspace) -> Lock:
    """The parsed hotkernel.lock (an empty ``Lock`` when there is none); one named error when it is corrupt."""
    path = ws.lock_file
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise HotkernelError(f"hotkernel.lock: not a regular file (a symlink or a directory); {RESTORE}")
    if not path.exists():
        return Lock()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise HotkernelError(
            f"hotkernel.lock: not valid JSON ({err}); it is written by hotkernel only: {RESTORE}"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("schema"), int) and data["schema"] > LOCK_SCHEMA:
        raise HotkernelError(
            f"hotkernel.lock: schema {data['schema']} is newer than this hotkernel understands "
            f"({LOCK_SCHEMA}): upgrade hotkernel"
        )
    try:
        lock = Lock.model_validate(data)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        raise HotkernelError(f"hotkernel.lock: {where}: {first['msg']}; {RESTORE}") from None
    lock.schema_ = LOCK_SCHEMA
    return lock


def write_lock(ws: Workspace, lock: Lock | dict[str, Any]) -> None:
    """Write hotkernel.lock atomically (sorted keys, stable formatting) after validating it as a ``Lock``."""
    model = Lock.model_validate(lock.model_dump(by_alias=True) if isinstance(lock, Lock) else lock)
    model.schema_ = LOCK_SCHEMA
    text = json.dumps(model.model_dump(mode="json", by_alias=True), indent=2, sort_keys=True) + "\n"
    atomic_write_text(ws.lock_file, text, overwrite=True)


def record_file(ws: Workspace, path: str) -> Path | None:
    """The record file ``path`` names when it is a regular file (not a symlink) under ``results/<target>/``."""
    try:
        check_record_path(path)
    except ValueError:
        return None
    full = ws.root / path
    if full.is_symlink() or full.parent.is_symlink() or ws.results_dir.is_symlink() or not full.is_file():
        return None
    return full


# ------------------------------------------------------------------------------- leftover temp files


def temp_files(ws: Workspace) -> list[Path]:
    """Temp files of hotkernel's atomic writes (``.<name>.<random>.tmp``) in the workspace root and results/."""
    found = sorted(ws.root.glob(".*.tmp"))
    if ws.results_dir.is_dir() and not ws.results_dir.is_symlink():
        found += sorted(ws.results_dir.glob("*/.*.tmp"))
    return [p for p in found if p.is_file() and not p.is_symlink()]


def sweep_temp_files(ws: Workspace, *, older_than_s: float = TEMP_MAX_AGE_S) -> list[Path]:
    """Remove temp files older than ``older_than_s`` (left by a killed writer); returns those removed."""
    removed = []
    now = time.time()
    for path in temp_files(ws):
        with contextlib.suppress(OSError):
            if now - path.lstat().st_mtime > older_than_s:
                path.unlink()
                removed.append(path)
    return removed


# ---------------------------------------------------------------------------------- workspace lock


def lock_holder(ws: Workspace) -> str:
    """Who holds the workspace lock, from the holder-info file, in one line."""
    info_path = ws.state_dir / "lock.info"
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return "another hotkernel process (no holder info)"
    return (
        f"pid {info.get('pid')} on {info.get('host')} (user {info.get('user')}, `{info.get('command')}`, "
        f"since {info.get('started')})"
    )


_HELD = threading.local()  # .roots: workspaces whose lock this thread holds (sync -> record -> lock)


def _held_roots() -> set[Path]:
    if not hasattr(_HELD, "roots"):
        _HELD.roots = set()
    return _HELD.roots


@contextlib.contextmanager
def workspace_lock(ws: Workspace, *, wait_s: float = 0.0, command: str = "hotkernel sync") -> Iterator[None]:
    """Hold ``.hotkernel/lock`` (an OS file lock) for the duration; refuse or wait ``wait_s`` when taken.

    Re-entrant within one thread: a ``record`` inside a ``sync`` does not wait for its own sync; another thread
    of the same process waits like another process does (each thread opens the lock file itself). A writer that
    takes it first removes temp files a killed writer left (older than a minute).
    """
    root = ws.root.resolve()
    held = _held_roots()
    if root in held:
        yield
        return
    ws.state_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(ws.state_dir / "lock"), thread_local=True, is_singleton=False)
    try:
        lock.acquire(timeout=max(0.0, wait_s), poll_interval=0.1)
    except Timeout:
        raise HotkernelError(
            f"{ws.state_dir / 'lock'}: the workspace is locked by {lock_holder(ws)}; wait for it to finish "
            "or pass --wait SECONDS"
        ) from None
    info_path = ws.state_dir / "lock.info"
    try:
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "user": _user(),
            "command": command,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        atomic_write_text(info_path, json.dumps(info, sort_keys=True) + "\n", overwrite=True)
        held.add(root)
        sweep_temp_files(ws)
        yield
    finally:
        held.discard(root)
        with contextlib.suppress(OSError):
            info_path.unlink()
        lock.release()


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"
