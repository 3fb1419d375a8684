"""Competitors end to end on a CPU target: torch.compile (Inductor runs on the CPU) and a function reference are
rendered, verified against the baseline, recorded as competitors, fingerprinted in the lock and planned."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from hotkernel.manifest import load_manifest
from hotkernel.reconcile.competitors import sync_competitors
from hotkernel.reconcile.plan import plan, plan_lines
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


def test_sync_competitors_records_them_as_such_and_plans_them(ws: Workspace) -> None:
    manifest = load_manifest(ws.manifest)
    first = plan(ws, manifest=manifest, gpu_name=None)
    assert [(c.competitor, c.action, c.reasons) for c in first.competitors] == [
        ("compile", "create", ["new"]),
        ("./other/k2.py:g", "create", ["new"]),
    ]
    assert "+ t1 competitor compile: new" in plan_lines(first)

    items = sync_competitors(ws, manifest, "t1", n=1, gpu_name=None)
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
    assert set(lock.competitors["t1"]) == {"compile", "./other/k2.py:g"} and lock.entries("t1") == {}
    again = plan(ws, manifest=manifest, gpu_name=None)
    assert again.competitors == [] and [i.name for i in again.items] == ["t1"]  # the candidate is still new
    assert sync_competitors(ws, manifest, "t1", n=1, gpu_name=None) == []  # nothing out of date

    rows = board_rows(ws)
    assert {r.role for r in rows} == {"competitor"} and not any(r.best for r in rows)
    entry = best_entries(rows)[0]
    assert entry.best is None and entry.competitor is not None
    assert "## Competitors" in ws.leaderboard.read_text()

    (ws.root / "other" / "k2.py").write_text(KERNELS + "\n# touched\n", encoding="utf-8")
    os.utime(ws.root / "other" / "k2.py", ns=(1, 1))  # a new stat: plan's stat cache sees the change
    changed = plan(ws, manifest=manifest, gpu_name=None)
    assert [(c.competitor, c.reasons) for c in changed.competitors] == [("./other/k2.py:g", ["source changed"])]


def test_the_cpu_compile_warm_up_starts_ahead_only_beside_cuda_work(ws: Workspace) -> None:
    """``competitor_sides`` reads where each target's competitors run and whether they fork from a compile-warm
    server, rendered or not; the warm-up starts ahead only when CUDA verifies come first (it then overlaps GPU
    work, never CPU timing) and a CPU compile verify comes later."""
    from hotkernel.manifest import resolved_target
    from hotkernel.reconcile.competitors import ahead_order, competitor_sides, warm_up_ahead
    from hotkernel.run.competitors import render_competitor
    from hotkernel.run.render import render_target

    manifest = load_manifest(ws.manifest)
    # a CPU target with a torch.compile competitor, its scripts not rendered yet (a fresh workspace's first sync)
    assert competitor_sides(ws, manifest, ["t1"]) == [("t1", "cpu", True)]
    context = resolved_target(manifest, "t1")
    render_target(ws, "t1", context)
    for competitor in manifest.targets["t1"].competitors:
        render_competitor(ws, "t1", context, competitor)
    assert competitor_sides(ws, manifest, ["t1"]) == [("t1", "cpu", True)]  # rendered: the same answer
    gpu, cpu_compile, cpu_plain = ("g", "cuda", False), ("t1", "cpu", True), ("c", "cpu", False)
    assert warm_up_ahead([gpu, cpu_compile])
    assert warm_up_ahead([gpu, cpu_plain, cpu_compile])  # the first CPU verify waits for it
    assert not warm_up_ahead([cpu_compile, gpu])  # it would overlap the CPU verify's timing
    assert not warm_up_ahead([gpu, cpu_plain])  # nothing forks from a compile-warm server
    assert not warm_up_ahead([cpu_compile])
    assert not warm_up_ahead([])
    # the CUDA targets' competitors go first when a CPU one forks from the compile-warm server (the CPU target
    # was the most out of date in a `sync --gpus all` on an H100 host, so its warm-up had nothing beside it)
    gpu2 = ("g2", "cuda", False)
    assert ahead_order([cpu_compile, gpu, cpu_plain, gpu2]) == [gpu, gpu2, cpu_compile, cpu_plain]
    assert warm_up_ahead(ahead_order([cpu_compile, gpu]))
    assert ahead_order([cpu_plain, gpu]) == [cpu_plain, gpu]  # no warm-up to hide: most out of date first
    assert ahead_order([cpu_compile]) == [cpu_compile]
