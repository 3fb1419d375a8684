"""``hotkernel.lock`` (what each record was made from) and the workspace lock (one writer at a time).

``hotkernel.lock`` is JSON with sorted keys, written only by hotkernel and atomically::

    {"schema": 1, "targets": {"<name>": {"<device>": {"manifest": ..., "baseline_sha256": ...,
     "candidate_sha256": ..., "contract_sha256": ..., "device": ..., "record": "results/<name>/<ts>.json",
     "verdict": ...}}}}

``<device>`` is the GPU name for cuda targets and ``cpu`` for cpu targets.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from hotkernel._util.fs import atomic_write_text
from hotkernel.errors import HotkernelError
from hotkernel.workspace.paths import Workspace

LOCK_SCHEMA = 1


def read_lock(ws: Workspace) -> dict[str, Any]:
    """The parsed hotkernel.lock ({"schema": 1, "targets": {}} when there is none)."""
    if not ws.lock_file.is_file():
        return {"schema": LOCK_SCHEMA, "targets": {}}
    try:
        data = json.loads(ws.lock_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HotkernelError(
            f"{ws.lock_file}: not valid JSON ({err}); it is written by hotkernel only: restore it with "
            "`git checkout -- hotkernel.lock`, or delete it to re-run every target"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("targets"), dict):
        raise HotkernelError(
            f"{ws.lock_file}: has no 'targets' mapping; restore it with `git checkout -- hotkernel.lock`, "
            "or delete it to re-run every target"
        )
    schema = data.get("schema", LOCK_SCHEMA)
    well_formed = isinstance(schema, int) and all(
        isinstance(entries, dict) and all(isinstance(e, dict) for e in entries.values())
        for entries in data["targets"].values()
    )
    if not well_formed:
        raise HotkernelError(
            f"{ws.lock_file}: not a hotkernel lock (schema must be an integer, targets a mapping of mappings); "
            "restore it with `git checkout -- hotkernel.lock`, or delete it to re-run every target"
        )
    if schema > LOCK_SCHEMA:
        raise HotkernelError(
            f"{ws.lock_file}: schema {data.get('schema')} is newer than this hotkernel understands "
            f"({LOCK_SCHEMA}): upgrade hotkernel"
        )
    return data


def write_lock(ws: Workspace, lock: dict[str, Any]) -> None:
    """Write hotkernel.lock atomically, sorted keys, stable formatting."""
    lock = {**lock, "schema": LOCK_SCHEMA}
    atomic_write_text(ws.lock_file, json.dumps(lock, indent=2, sort_keys=True) + "\n", overwrite=True)


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


_HELD_BY_THIS_PROCESS: set[Path] = set()  # workspaces whose lock this process holds (sync -> record -> lock)


@contextlib.contextmanager
def workspace_lock(ws: Workspace, *, wait_s: float = 0.0, command: str = "hotkernel sync") -> Iterator[None]:
    """Hold ``.hotkernel/lock`` (an OS file lock) for the duration; refuse or wait ``wait_s`` when taken.

    Re-entrant within one process: a ``record`` inside a ``sync`` does not wait for its own sync.
    """
    root = ws.root.resolve()
    if root in _HELD_BY_THIS_PROCESS:
        yield
        return
    ws.state_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(ws.state_dir / "lock"))
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
            "pid": os.getpid(), "host": socket.gethostname(), "user": _user(), "command": command,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        atomic_write_text(info_path, json.dumps(info, sort_keys=True) + "\n", overwrite=True)
        _HELD_BY_THIS_PROCESS.add(root)
        yield
    finally:
        _HELD_BY_THIS_PROCESS.discard(root)
        with contextlib.suppress(OSError):
            info_path.unlink()
        lock.release()


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"
