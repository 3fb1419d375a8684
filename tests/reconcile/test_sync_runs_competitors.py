"""sync verifies each target's out-of-date competitors as jobs in the same queue as the targets' (each lane takes
what its device kind runs), records them as competitors and writes LEADERBOARD.md once for all records
(record(board=False) per record); fake lanes (no torch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reconcile.test_sync_gpus import ScriptedLane, workspace

import hotkernel.reconcile.competitors
import hotkernel.reconcile.outcome
import hotkernel.reconcile.sync as sync_module
from hotkernel._util.fs import sha256_file
from hotkernel.reconcile.executor import LaneExecutor, job_files
from hotkernel.reconcile.plan import plan
from hotkernel.store.leaderboard import leaderboard_difference
from hotkernel.workspace.lockfile import read_lock

MANIFEST = (
    "version: 1\ndefaults:\n  dtype: fp32\ntargets:\n"
    "  alpha:\n    from: ./kern.py:scale\n    shapes: [8x8]\n    device: cpu\n    competitors: [compile]\n"
    "  beta:\n    from: ./kern.py:scale\n    shapes: [16x8]\n    device: cpu\n"
)
MIXED = (
    "version: 1\ndefaults:\n  dtype: fp32\ntargets:\n"
    "  gamma:\n    from: ./kern.py:scale\n    shapes: [8x8]\n    competitors: [compile]\n"
    "  alpha:\n    from: ./kern.py:scale\n    shapes: [16x8]\n    device: cpu\n"
    "    competitors: [compile, ./other/k2.py:scale]\n"
)


def test_sync_runs_competitors_in_the_queue_and_writes_the_board_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path / "ws", MANIFEST)
    boards: list[bool] = []
    real_board = sync_module.write_leaderboard
    monkeypatch.setattr(sync_module, "write_leaderboard", lambda w: boards.append(True) or real_board(w))
    boards_per_record: list[bool] = []
    for module in (hotkernel.reconcile.outcome, hotkernel.reconcile.competitors):
        real_record = module.record

        def spying_record(*args: Any, _real: Any = real_record, **kwargs: Any) -> Any:
            boards_per_record.append(kwargs.get("board", True))
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, "record", spying_record)
    lane = ScriptedLane("solo")
    seen: list[tuple[int, int]] = []
    progress = lambda done, total, _message: seen.append((done, total))  # noqa: E731
    report = sync_module.sync(ws, n=3, executor=LaneExecutor([lane]), gpu_name=None, progress=progress)
    assert seen and all(done <= total for done, total in seen) and seen[-1][1] == 4  # four verifies, one a competitor
    # alpha is faster (a new best): its second verify goes ahead of the waiting jobs; the competitor comes last
    assert lane.ran == ["alpha", "alpha/confirm", "beta", "alpha/competitor/compile"]
    assert [(i.name, bool(i.confirms), i.status) for i in report.items] == [
        ("alpha", False, "recorded"),
        ("alpha", True, "recorded"),
        ("beta", False, "recorded"),
        ("alpha competitor compile", False, "recorded"),
    ]
    assert boards_per_record == [False] * 4 and len(boards) == 1  # one board for four records
    rival = json.loads((ws.root / report.items[-1].record).read_text())
    assert (rival["role"], rival["competitor"], rival["who"]) == ("competitor", "compile", "torch.compile (default)")
    entry = read_lock(ws).competitors["alpha"]["compile"]["cpu"]
    assert entry.candidate_sha256 == sha256_file(ws.target_dir("alpha") / "competitor_compile.py")
    assert entry.record == report.items[-1].record
    assert leaderboard_difference(ws) is None and not report.repaired
    again = plan(ws, gpu_name=None)
    assert again.items == [] and again.competitors == []  # everything recorded is up to date
    lane = ScriptedLane("solo")
    assert sync_module.sync(ws, n=3, executor=LaneExecutor([lane]), gpu_name=None).items[0].status == "up to date"
    assert lane.ran == []


def test_each_lane_takes_the_competitors_of_its_device_kind(tmp_path: Path) -> None:
    """A CPU lane runs the CPU target's competitors while the GPU lane runs the GPU target and its competitor;
    a function reference ships the files of its folder to the lane's private copy."""
    ws = workspace(tmp_path / "ws", MIXED)
    (ws.root / "other").mkdir()
    (ws.root / "other" / "k2.py").write_text("def scale(x):\n    return x + x\n", encoding="utf-8")
    gpu = ScriptedLane("gpu0", kinds=frozenset({"cuda"}), facts={"cpu": "Test CPU", "device": "Test GPU"})
    cpu = ScriptedLane("cpu")
    report = sync_module.sync(ws, n=3, executor=LaneExecutor([gpu, cpu]), gpu_name="Test GPU")
    assert gpu.ran == ["gamma", "gamma/competitor/compile"]
    # alpha's second verify joins the queue when its first is recorded: where, depends on when the lane asked next
    assert cpu.ran[0] == "alpha" and sorted(cpu.ran[1:]) == [
        "alpha/competitor/./other/k2.py:scale",
        "alpha/competitor/compile",
        "alpha/confirm",
    ]
    rivals = {i.name: i for i in report.items if " competitor " in i.name}
    assert {name: i.status for name, i in rivals.items()} == {
        "alpha competitor compile": "recorded",
        "alpha competitor ./other/k2.py:scale": "recorded",
        "gamma competitor compile": "recorded",
    }
    lock = read_lock(ws)
    assert set(lock.competitors["gamma"]["compile"]) == {"Test GPU"} and set(lock.competitors["alpha"]) == {
        "compile",
        "./other/k2.py:scale",
    }
    manifest_text = (ws.root / "hotkernel.yaml").read_text()
    assert manifest_text == MIXED
    from hotkernel.manifest import load_manifest, resolved_target

    context = resolved_target(load_manifest(ws.manifest), "alpha")
    assert "other/k2.py" not in job_files(ws, "alpha", context)
    assert "other/k2.py" in job_files(ws, "alpha", context, ("./other/k2.py:scale",))


def test_a_cuda_targets_competitor_is_skipped_where_no_lane_runs_cuda(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws", MIXED)
    (ws.root / "other").mkdir()
    (ws.root / "other" / "k2.py").write_text("def scale(x):\n    return x + x\n", encoding="utf-8")
    report = sync_module.sync(ws, n=3, executor=LaneExecutor([ScriptedLane("cpu")]), gpu_name=None)
    skipped = {i.name: i.reason for i in report.items if i.status == "skipped"}
    assert set(skipped) == {"gamma", "gamma competitor compile"}
    assert "no CUDA GPU" in skipped["gamma competitor compile"]
    assert "gamma" not in read_lock(ws).competitors
