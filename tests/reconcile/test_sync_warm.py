"""A warm sync: one judge (and its pre-started workers) serves every target of a lane, in this process and in a
lane's child process alike; a verify that is not clean (here: an incorrect candidate) retires it, and the next
target gets a fresh one. Every verdict stays what a cold verify gives."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest

from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.reconcile.executor import Job, Lane, LaneExecutor, LaneRun, LaneStatus, ProcessLane
from hotkernel.reconcile.lanes import InlineLane
from hotkernel.reconcile.sync import sync
from hotkernel.run.render import render_target
from hotkernel.workspace.paths import Workspace

pytestmark = pytest.mark.slow

MANIFEST = "version: 1\ndefaults:\n  device: cpu\n  dtype: fp32\ntargets:\n" + "".join(
    f"  {name}:\n    from: ./kern.py:scale_add\n    shapes: [{16 * (i + 1)}x64]\n    extra: [w:64]\n"
    for i, name in enumerate("abc")
)
WRONG = "\n\ndef kernel(x, w):\n    return x * w  # forgot the + 1.0\n"
# the same result 50 times: slower by far, so each verify decides at its third round, not its sixth
SLOW = "\n\ndef kernel(x, w):\n    for _ in range(50):\n        y = x * w + 1.0\n    return y\n"


class Spy(Lane):
    """A lane that keeps what its inner lane brought back."""

    def __init__(self, lane: InlineLane | ProcessLane) -> None:
        self.lane, self.name, self.kinds = lane, lane.name, lane.kinds
        self.runs: dict[str, LaneRun] = {}

    def run(self, job: Job, cancel: threading.Event, status: LaneStatus) -> LaneRun:
        self.runs[job.key] = self.lane.run(job, cancel, status)
        return self.runs[job.key]

    def close(self) -> None:
        self.lane.close()


@pytest.mark.parametrize("kind", ["inline", "child"])
def test_one_judge_per_lane_serves_its_targets_until_a_verify_is_not_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "kern.py").write_text("def scale_add(x, w):\n    return x * w + 1.0\n")
    (root / "hotkernel.yaml").write_text(MANIFEST)
    ws = Workspace(root)
    manifest = load_manifest(ws.manifest)
    for name in "abc":
        render_target(ws, name, resolved_target(manifest, name))
    for name, body in (("a", SLOW), ("b", WRONG), ("c", SLOW)):
        with open(root / "targets" / name / "candidate.py", "a", encoding="utf-8") as handle:
            handle.write(body)
    lane = Spy(
        InlineLane(ws, kinds=frozenset({"cpu"})) if kind == "inline" else ProcessLane(ws, "cpu", frozenset({"cpu"}))
    )
    report = sync(ws, n=3, executor=LaneExecutor([lane]), gpu_name=None)
    verdicts = {item.name: item.verdict for item in report.items}
    assert verdicts == {"a": "slower", "b": "incorrect", "c": "slower"}, report.items
    pids = {key: run.judge_pid for key, run in lane.runs.items()}
    assert set(pids) == {"a", "b", "c"} and all(pids.values()), pids
    assert pids["a"] == pids["b"]  # b's runs were judged by the judge a's verify started
    assert pids["c"] != pids["b"]  # b's verify was not clean: its judge was not reused
    assert all(
        run.result.runs and {r.status for r in run.result.runs} <= {"ok", "incorrect"} for run in lane.runs.values()
    )
