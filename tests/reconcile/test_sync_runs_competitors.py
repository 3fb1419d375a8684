"""sync runs each target's out-of-date competitors after its lanes, and writes LEADERBOARD.md once for all
records (record(board=False) per record); fake lanes and a scripted competitor runner (no torch)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from reconcile.test_sync_gpus import ScriptedLane, workspace

import hotkernel.reconcile.sync as sync_module
import hotkernel.store.record
from hotkernel.reconcile.executor import LaneExecutor
from hotkernel.reconcile.models import SyncItem
from hotkernel.store.leaderboard import leaderboard_difference

MANIFEST = (
    "version: 1\ndefaults:\n  dtype: fp32\ntargets:\n"
    "  alpha:\n    from: ./kern.py:scale\n    shapes: [8x8]\n    device: cpu\n    competitors: [compile]\n"
    "  beta:\n    from: ./kern.py:scale\n    shapes: [16x8]\n    device: cpu\n"
)


def test_sync_runs_competitors_and_writes_the_board_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = workspace(tmp_path / "ws", MANIFEST)
    calls: list[tuple[str, dict[str, Any]]] = []

    def fake_competitors(ws_: Any, manifest: Any, name: str, **kwargs: Any) -> list[SyncItem]:
        calls.append((name, kwargs))
        if not manifest.targets[name].competitors:
            return []
        return [SyncItem(name=f"{name} competitor compile", status="recorded", verdict="faster")]

    boards: list[bool] = []
    real_board = sync_module.write_leaderboard
    monkeypatch.setattr(sync_module, "sync_competitors", fake_competitors)
    monkeypatch.setattr(sync_module, "write_leaderboard", lambda w: boards.append(True) or real_board(w))
    real_record = hotkernel.store.record.record
    boards_per_record: list[bool] = []

    def spying_record(*args: Any, **kwargs: Any) -> Any:
        boards_per_record.append(kwargs.get("board", True))
        return real_record(*args, **kwargs)

    monkeypatch.setattr(sync_module, "record", spying_record)
    report = sync_module.sync(ws, n=3, executor=LaneExecutor([ScriptedLane("solo")]), gpu_name=None)
    # alpha is faster (a new best): verified a second time, both recorded
    assert [(i.name, bool(i.confirms)) for i in report.items] == [
        ("alpha", False),
        ("alpha", True),
        ("beta", False),
        ("alpha competitor compile", False),
    ]
    assert [name for name, _ in calls] == ["alpha"]  # beta has no competitors: nothing to call for it
    assert all(kw["board"] is False and kw["n"] == 3 for _, kw in calls)
    assert boards_per_record == [False] * 3 and len(boards) == 1  # one board for three records
    assert leaderboard_difference(ws) is None and not report.repaired
