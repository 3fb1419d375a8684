"""Competitors end to end on a CPU target: torch.compile (Inductor runs on the CPU) and a function reference are
rendered, verified against the baseline by ``sync`` (in this process, and in a CPU lane's private copy),
recorded as competitors, fingerprinted in the lock and planned."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hotkernel.manifest import load_manifest
from hotkernel.reconcile.executor import LaneExecutor, ProcessLane
from hotkernel.reconcile.plan import plan, plan_lines
from hotkernel.reconcile.sync import sync
from hotkernel.store.leaderboard import best_entries, board_rows
from hotkernel.workspace.lockfile import read_lock
from hotkernel.workspace.paths import Workspace

pytestmark = pytest.mark.slow

KERNELS = """\
import torch


def f(x):
    return torch.relu(x) * 2.0 + 1.0


def g(x):
    return torch.clamp(x, min=0.0) * 2.0 + 1.0
"""
MANIFEST = """\
version: 1
defaults:
  device: cpu
  dtype: fp32
targets:
  t1:
    from: ./k.py:f
    shapes: [64x64]
    competitors: [compile, ./other/k2.py:g]
"""


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    root = tmp_path / "ws"
    (root / "other").mkdir(parents=True)
    (root / "k.py").write_text(KERNELS, encoding="utf-8")
    (root / "other" / "k2.py").write_text(KERNELS, encoding="utf-8")
    (root / "hotkernel.yaml").write_text(MANIFEST, encoding="utf-8")
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    return Workspace(root)


@pytest.mark.parametrize("where", ["inline", "cpu lane"])
def test_sync_records_competitors_as_such_and_plans_them(ws: Workspace, where: str) -> None:
    manifest = load_manifest(ws.manifest)
    first = plan(ws, manifest=manifest, gpu_name=None)
    assert [(c.competitor, c.action, c.reasons) for c in first.competitors] == [
        ("compile", "create", ["new"]),
        ("./other/k2.py:g", "create", ["new"]),
    ]
    assert "+ t1 competitor compile: new" in plan_lines(first)

    lane = {"executor": LaneExecutor([ProcessLane(ws, "cpu", frozenset({"cpu"}))])} if where == "cpu lane" else {}
    report = sync(ws, n=1, gpu_name=None, **lane)
    assert report.lanes == ("cpu" if lane else "local")
    target, *items = report.items
    assert target.name == "t1" and target.status == "recorded", target.reason
    assert [i.name for i in items] == ["t1 competitor compile", "t1 competitor ./other/k2.py:g"]
    assert [i.status for i in items] == ["recorded", "recorded"], [i.reason for i in items]
    assert all(i.verdict in ("faster", "slower", "inconclusive") for i in items), [i.reason for i in items]
    script = ws.target_dir("t1") / "competitor_compile.py"
    assert 'torch.compile(hk_contract.load_function("./k.py:f"' in script.read_text()
    assert 'mode="default"' in script.read_text()
    assert (ws.target_dir("t1") / "competitor_other_k2_py_g.py").is_file()

    records = {
        json.loads((ws.root / i.record).read_text())["competitor"]: json.loads((ws.root / i.record).read_text())
        for i in items
        if i.record
    }
    assert records["compile"]["role"] == "competitor" and records["compile"]["who"] == "torch.compile (default)"
    assert records["./other/k2.py:g"]["who"] == "./other/k2.py:g"
    assert records["compile"]["result"]["candidate"]["script"] == "targets/t1/competitor_compile.py"

    lock = read_lock(ws)
    assert set(lock.competitors["t1"]) == {"compile", "./other/k2.py:g"} and set(lock.entries("t1")) == {"cpu"}
    assert plan(ws, manifest=manifest, gpu_name=None).competitors == []  # no competitor out of date

    rows = board_rows(ws)
    assert {r.role for r in rows} == {"candidate", "competitor"}
    assert not any(r.best for r in rows if r.role == "competitor")  # a competitor is never the best
    assert best_entries(rows)[0].competitor is not None
    assert "## Competitors" in ws.leaderboard.read_text()

    (ws.root / "other" / "k2.py").write_text(KERNELS + "\n# touched\n", encoding="utf-8")
    os.utime(ws.root / "other" / "k2.py", ns=(1, 1))  # a new stat: plan's stat cache sees the change
    changed = plan(ws, manifest=manifest, gpu_name=None)
    assert [(c.competitor, c.reasons) for c in changed.competitors] == [("./other/k2.py:g", ["source changed"])]
