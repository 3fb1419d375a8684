"""Process hygiene: every process of a run is found (same group, run token, or an orphan the orchestrator
inherits as child subreaper) and killed; stale run directories of dead orchestrators are removed."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from .knobs import KILL_WAIT_S, STALE_RUN_DIR_PREFIX, TOKEN_ENV

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


def prctl(option: int, value: int) -> bool:
    """Linux prctl through libc; False where the platform has none."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Orphans of our descendants (a double-forked daemon, a new session) are reparented to this process."""
    return prctl(PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(parent_pid: int | None) -> None:
    """SIGKILL this process when the process that started it dies (a ``kill -9`` of the CLI included)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent_pid and os.getppid() != parent_pid:  # the parent died before prctl: follow it now
        os._exit(1)


def proc_stats() -> Iterator[tuple[int, list[str]]]:
    """``(pid, fields)`` of every process visible in /proc: the fields of ``/proc/PID/stat`` after the command
    name (state, ppid, pgrp, ...); a process that exits while this reads is left out."""
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as handle:
                    text = handle.read().decode("ascii", "replace")
            except OSError:
                continue
            yield int(entry), text[text.rfind(")") + 2 :].split()


def process_table() -> dict[int, tuple[int, int]]:
    """{pid: (ppid, pgid)} of every live (not zombie) process visible in /proc."""
    return {pid: (int(f[1]), int(f[2])) for pid, f in proc_stats() if len(f) > 3 and f[0] != "Z"}


def token_processes(token: str) -> list[int]:
    """Processes (of this user) whose environment carries the run token, found through /proc."""
    needle = f"{TOKEN_ENV}={token}".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if needle in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def descendants(roots: set[int], table: dict[int, tuple[int, int]]) -> set[int]:
    """Every process below ``roots`` in the table (roots excluded)."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = list(roots)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found and child not in roots:
                found.add(child)
                stack.append(child)
    return found


def run_processes(group: int, token: str, known: set[int], adopted_after: set[int], orphans: bool = True) -> set[int]:
    """Processes of one run: the worker's group, its descendants, token carriers, and (``orphans``) children
    of this process (reparented orphans) that are not ``known`` and were not already there (``adopted_after``)."""
    table = process_table()
    me = os.getpid()
    found = {pid for pid, (_, pgid) in table.items() if pgid == group}
    found |= set(token_processes(token))
    if orphans:
        found |= {
            pid for pid, (ppid, _) in table.items() if ppid == me and pid not in known and pid not in adopted_after
        }
    found |= descendants(found, table)
    found.discard(me)
    return found


def own_children() -> set[int]:
    """Current children of this process (to tell later orphans from processes that were already ours)."""
    me = os.getpid()
    return {pid for pid, (ppid, _) in process_table().items() if ppid == me}


def exited_children(parents: set[int] | None = None) -> set[int]:
    """Children of this process (or of ``parents``) that have exited and are not reaped yet (state Z in /proc).
    Nothing else here reaps a process re-parented to this subreaper, so one that escaped the run and exited stays
    here however briefly it lived."""
    wanted = parents if parents is not None else {os.getpid()}
    return {pid for pid, f in proc_stats() if len(f) > 1 and f[0] == "Z" and int(f[1]) in wanted}


def kill_processes(pids: set[int]) -> None:
    """SIGKILL each, wait until all have exited (at most KILL_WAIT_S), then reap those that are our children."""
    processes = [(pid, start_ticks(pid)) for pid in sorted(pids)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    wait_exited(processes, KILL_WAIT_S)
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return True
    return text[text.rfind(")") + 2 :].split()[:1] == ["Z"]


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22): tells it from a reuse."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 and fields[19].isdigit() else None


def exited(pid: int, started: int | None) -> bool:
    """``pid`` is gone, a zombie (its files, the CUDA context's among them, are closed) or another process."""
    return zombie(pid) or (started is not None and start_ticks(pid) != started)


def wait_exited(processes: list[tuple[int, int | None]], timeout_s: float) -> list[int]:
    """Wait until every ``(pid, start_ticks)`` has exited; the pids still running after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    pending = list(processes)
    while True:
        pending = [(pid, started) for pid, started in pending if not exited(pid, started)]
        if not pending or time.monotonic() >= deadline:
            return [pid for pid, _ in pending]
        time.sleep(0.005)


def stop_processes(pids: set[int]) -> None:
    """SIGSTOP each (a frozen process cannot run a thread or launch work until it is killed)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGSTOP)


def run_dir_parent() -> str | None:
    """Run directories go to RAM (/dev/shm) when there is one."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def clean_stale_run_dirs(parent: str | None = None) -> list[str]:
    """Remove ``hk_run_<pid>_*`` directories (ours) whose orchestrator ``pid`` is gone; returns their paths."""
    removed = []
    for folder in {parent or run_dir_parent() or tempfile.gettempdir(), tempfile.gettempdir()}:
        with contextlib.suppress(OSError):
            for name in os.listdir(folder):
                if not name.startswith(STALE_RUN_DIR_PREFIX):
                    continue
                owner = name[len(STALE_RUN_DIR_PREFIX) :].split("_", 1)[0]
                path = os.path.join(folder, name)
                try:
                    mine = os.stat(path).st_uid == os.getuid()
                except OSError:
                    continue
                if mine and owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                    shutil.rmtree(path, ignore_errors=True)
                    removed.append(path)
    return removed


def tail_of(handle: Any, limit: int) -> str:
    """The last ``limit`` characters of an open binary file (a process's captured stdout or stderr)."""
    with contextlib.suppress(OSError, ValueError):
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 4 * limit))
        return handle.read().decode("utf-8", "replace")[-limit:]
    return ""


def raise_on_signals() -> None:
    """SIGTERM/SIGHUP raise SystemExit (SIGINT raises KeyboardInterrupt): ``finally`` blocks kill the run."""

    def handler(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, handler)
