"""The workspace lock: one writer at a time, re-entrant within a thread, exclusive between threads."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from hotkernel.workspace.lockfile import workspace_lock
from hotkernel.workspace.paths import Workspace


def _ws(tmp_path: Path) -> Workspace:
    (tmp_path / "hotkernel.yaml").write_text("version: 1\ntargets: {}\n")
    return Workspace(tmp_path)


def test_reentrant_in_one_thread(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    with workspace_lock(ws), workspace_lock(ws):  # a record inside a sync does not wait for its own sync
        assert (ws.state_dir / "lock.info").is_file()


def test_threads_of_one_process_take_turns(tmp_path: Path) -> None:
    ws = _ws(tmp_path)
    inside: list[int] = []
    overlaps: list[int] = []

    def writer(index: int) -> None:
        with workspace_lock(ws, wait_s=30):
            if inside:
                overlaps.append(index)
            inside.append(index)
            time.sleep(0.05)
            inside.remove(index)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == []
