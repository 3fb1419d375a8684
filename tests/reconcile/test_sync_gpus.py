"""sync over several lanes: the same inputs give byte-identical results/, hotkernel.lock and LEADERBOARD.md
whatever the parallelism; each GPU model keys its own lock entry and records keep the lane's GPU UUID; Ctrl-C
in the middle leaves what was recorded and a consistent lock. Fake lanes (no torch), then one real child lane."""

from __future__ import annotations

import datetime as dt
import itertools
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from store import record_factory
from store.record_factory import synthetic_result

import hotkernel.store.record
from hotkernel._util.fs import sha256_file
from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.reconcile.executor import Job, Lane, LaneDied, LaneExecutor, LaneRun, ProcessLane
from hotkernel.reconcile.plan import plan
from hotkernel.reconcile.sync import sync
from hotkernel.run.models import VerifyResult
from hotkernel.run.render import render_target
from hotkernel.store.leaderboard import leaderboard_difference
from hotkernel.workspace.lockfile import read_lock
from hotkernel.workspace.paths import Workspace

NAMES = ("alpha", "beta", "gamma", "delta", "eps")
CPU_MANIFEST = "version: 1\ndefaults:\n  dtype: fp32\ntargets:\n" + "".join(
    f"  {name}:\n    from: ./kern.py:scale\n    shapes: [{8 * (i + 1)}x8]\n    device: cpu\n"
    for i, name in enumerate(NAMES)
)
GPU_MANIFEST = (
    "version: 1\ndefaults:\n  dtype: fp32\ntargets:\n  g1:\n    from: ./kern.py:scale\n"
    "    shapes: [64x64]\n  g2:\n    from: ./kern.py:scale\n    shapes: [32x32]\n"
)
VERDICTS = {
    "alpha": ("faster", 1.25),
    "beta": ("slower", 0.8),
    "gamma": ("inconclusive", None),
    "delta": ("faster", 1.1),
    "eps": ("incorrect", None),
}


def workspace(root: Path, manifest: str = CPU_MANIFEST) -> Workspace:
    ScriptedLane.root = root  # the fake lanes report the sha256 of the candidate they "ran" there
    ScriptedLane.calls = {}
    root.mkdir(parents=True)
    (root / "kern.py").write_text("def scale(x):\n    return x * 2\n", encoding="utf-8")
    (root / "hotkernel.yaml").write_text(manifest, encoding="utf-8")
    return Workspace(root)


FACTORY = threading.Lock()


def ran_on_disk(result: VerifyResult, candidate: Path) -> VerifyResult:
    """``result`` as a verify of the files on disk reports it: the sha256 of the candidate, of the baseline
    beside it and of the workspace's contract."""
    files = {"candidate": candidate, "baseline": candidate.parent / "baseline.py"}
    sides = {
        role: getattr(result, role).model_copy(update={"sha256": sha256_file(path)}) for role, path in files.items()
    }
    contract = sha256_file(candidate.parent.parent / "hk_contract.py")
    return result.model_copy(update={**sides, "contract_sha256": contract})


class ScriptedLane(Lane):
    """A fake lane: a synthetic result per target after ``delays[target]`` seconds, facts of its own GPU/CPU."""

    root: Path | None = None
    calls: dict[str, int] = {}  # noqa: RUF012 - per workspace: how often each job ran

    def __init__(
        self, name: str, *, kinds=frozenset({"cpu"}), delays: dict[str, float] | None = None, facts: dict | None = None
    ) -> None:
        self.name, self.kinds, self.delays = name, kinds, delays or {}
        self.facts, self.ran = facts or {"cpu": "Test CPU"}, []

    def run(self, job: Job, cancel: threading.Event, status) -> LaneRun:
        self.ran.append(job.key)
        status("verify", 1)
        time.sleep(self.delays.get(job.target, 0.0))
        verdict, speedup = VERDICTS.get(job.target, ("inconclusive", None))
        with FACTORY:  # the factory's per-call jitter, fixed per job: the same bytes whatever the lanes' order
            ScriptedLane.calls[job.key] = ScriptedLane.calls.get(job.key, -1) + 1  # a rerun is a new measurement
            record_factory._CALLS = itertools.count(1000 * sum(map(ord, job.key)) + ScriptedLane.calls[job.key])
            result = synthetic_result(job.target, verdict, speedup, device=self.facts.get("device", "cpu"))
        if ScriptedLane.root is not None:
            result = ran_on_disk(result, ScriptedLane.root / job.candidate)
        if "cuda" in self.kinds:
            result = result.model_copy(update={"device_kind": "cuda"})
        return LaneRun(result=result, facts=dict(self.facts))


def tree(root: Path) -> dict[str, bytes]:
    files = [
        root / "hotkernel.lock",
        root / "LEADERBOARD.md",
        *(root / "results").rglob("*"),
        *(root / "targets").rglob("*"),
    ]
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in files if p.is_file()}


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    at = dt.datetime(2026, 12, 1, 9, 0, 0, tzinfo=dt.timezone.utc)
    monkeypatch.setattr(hotkernel.store.record, "utc_now", lambda: at)
    monkeypatch.setenv("HOTKERNEL_WHO", "tester")


def test_same_inputs_same_bytes_whatever_the_parallelism(tmp_path: Path, frozen_clock: None) -> None:
    serial = workspace(tmp_path / "serial")
    one = sync(serial, n=3, executor=LaneExecutor([ScriptedLane("solo")]), gpu_name=None)
    parallel = workspace(tmp_path / "parallel")
    # the first targets finish last: completion order is the reverse of the manifest's
    slow_first = {name: 0.05 * (len(NAMES) - i) for i, name in enumerate(NAMES)}
    lanes = [ScriptedLane(f"lane{i}", delays=slow_first) for i in range(3)]
    many = sync(parallel, n=3, executor=LaneExecutor(lanes), gpu_name=None)
    assert sum(len(lane.ran) for lane in lanes) == len(NAMES) + 2 and all(lane.ran for lane in lanes)
    assert (one.lanes, many.lanes) == ("solo", "lane0, lane1, lane2")  # the report says where the verifies ran
    firsts = [i for i in many.items if i.confirms is None]
    assert [i.name for i in firsts] == sorted(NAMES)  # reported in the order sync selects (by name)
    assert [(i.status, i.verdict) for i in one.items] == [(i.status, i.verdict) for i in many.items]
    assert {i.verdict for i in many.items} == {"faster", "slower", "inconclusive", "incorrect"}
    # each faster target (a new best) was verified twice, the second record naming the first
    pairs = {i.name: i.confirms for i in many.items if i.confirms}
    assert pairs == {i.name: i.record for i in firsts if i.verdict == "faster"} and len(pairs) == 2
    a, b = tree(serial.root), tree(parallel.root)
    assert sorted(a) == sorted(b) and len([p for p in a if p.startswith("results/")]) == len(NAMES) + 2
    assert [p for p in a if a[p] != b[p]] == []
    assert plan(parallel, gpu_name=None).items == [] and leaderboard_difference(parallel) is None


def test_each_gpu_model_keys_its_own_entry_and_records_keep_the_uuid(tmp_path: Path, frozen_clock: None) -> None:
    ws = workspace(tmp_path / "ws", GPU_MANIFEST)
    h200 = ScriptedLane(
        "gpu0",
        kinds=frozenset({"cuda"}),
        delays={"g2": 0.3},
        facts={"device": "NVIDIA H200", "gpu_uuid": "GPU-h200-0", "driver": "580.1", "cpu": "Test CPU"},
    )
    h100 = ScriptedLane(
        "gpu1",
        kinds=frozenset({"cuda"}),
        delays={"g1": 0.3},
        facts={"device": "NVIDIA H100 80GB HBM3", "gpu_uuid": "GPU-h100-1", "driver": "580.1", "cpu": "Test CPU"},
    )
    report = sync(ws, n=3, executor=LaneExecutor([h200, h100]), gpu_name="NVIDIA H200")
    assert [i.status for i in report.items] == ["recorded", "recorded"]
    lock = read_lock(ws)
    ran_on = {key: "NVIDIA H200" if key in h200.ran else "NVIDIA H100 80GB HBM3" for key in ("g1", "g2")}
    for name in ("g1", "g2"):
        (device,) = lock.targets[name]
        assert device == ran_on[name]
        rec = hotkernel.store.record.load_record(ws.root / lock.targets[name][device].record)
        assert rec.provenance.gpu_uuid == ("GPU-h200-0" if device == "NVIDIA H200" else "GPU-h100-1")
        assert rec.provenance.device == device and rec.provenance.cpu == "Test CPU"


class HangingLane(ScriptedLane):
    """Answers ``alpha`` at once; every other job runs until the sync cancels it."""

    cancelled: list[str]

    def run(self, job: Job, cancel: threading.Event, status) -> LaneRun:
        if job.target == "alpha":
            return super().run(job, cancel, status)
        self.ran.append(job.key)
        cancel.wait(60)
        self.cancelled.append(job.key)
        raise LaneDied("cancelled")


def test_ctrl_c_in_the_middle_keeps_what_was_recorded_and_a_consistent_lock(tmp_path: Path, frozen_clock: None) -> None:
    ws = workspace(tmp_path / "ws")
    HangingLane.cancelled = []
    lanes = [HangingLane(f"lane{i}") for i in range(3)]

    def progress(done: int, total: int, message: str) -> None:
        if message == "alpha: done: faster":  # inside the record's deferred block: raised once it is whole
            signal.raise_signal(signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        sync(ws, n=3, executor=LaneExecutor(lanes), gpu_name=None, progress=progress)
    assert sorted(HangingLane.cancelled) == sorted(k for lane in lanes for k in lane.ran if k != "alpha")
    assert len(HangingLane.cancelled) in (2, 3)  # the lanes were busy (alpha's lane may take another) and stopped
    lock = read_lock(ws)  # alpha's first record is whole and vouched; unconfirmed, it is not in the lock
    (first,) = lock.records
    assert first.startswith("results/alpha/") and list(lock.targets) == []
    pending = plan(ws, gpu_name=None)
    assert pending.problems == [] and [i.name for i in pending.items] == sorted(NAMES)
    again = sync(ws, n=3, executor=LaneExecutor([ScriptedLane("solo")]), gpu_name=None)  # the lock was let go
    assert {i.status for i in again.items} == {"recorded"} and {i.name for i in again.items} == set(NAMES)
    assert "delta" in [i.name for i in again.items if i.confirms]  # a new best: verified twice


KERNEL = "def scale_add(x, w):\n    return x * w + 1.0\n"
REAL = (
    "version: 1\ndefaults:\n  device: cpu\n  dtype: fp32\ntargets:\n  scale:\n    from: ./kern.py:scale_add\n"
    "    shapes: [32x64]\n    extra: [w:64]\n"
)


@pytest.mark.slow
def test_a_real_child_lane_verifies_a_cpu_target_in_a_private_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "kern.py").write_text(KERNEL)
    (root / "hotkernel.yaml").write_text(REAL)
    ws = Workspace(root)
    report = sync(ws, n=3, executor=LaneExecutor([ProcessLane(ws, "cpu", frozenset({"cpu"}))]))
    (item,) = report.items
    assert (item.status, item.verdict) == ("recorded", "inconclusive"), item
    rec = hotkernel.store.record.load_record(root / item.record)
    assert 3 <= rec.result.rounds_completed <= rec.result.max_rounds  # the sequential rule may go past n
    assert rec.provenance.cpu and rec.provenance.torch
    assert rec.result.baseline.script == "targets/scale/baseline.py"
    assert read_lock(ws).targets["scale"]["cpu"].record == item.record
    assert plan(ws).items == []


@pytest.mark.slow
def test_a_candidate_importing_a_module_the_copy_lacks_says_how_to_fix_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lane's private copy holds the target's files only: a candidate that imports a helper folder of the
    workspace no target names fails there, and the report says where to put it (or --serial)."""
    pytest.importorskip("torch")
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    root = tmp_path / "ws"
    (root / "helpers").mkdir(parents=True)
    (root / "kern.py").write_text(KERNEL)
    (root / "helpers" / "fast.py").write_text(KERNEL.replace("scale_add", "fast"))
    (root / "hotkernel.yaml").write_text(REAL)
    ws = Workspace(root)
    render_target(ws, "scale", resolved_target(load_manifest(ws.manifest), "scale"))
    candidate = root / "targets" / "scale" / "candidate.py"
    text = candidate.read_text()
    candidate.write_text(
        text + "\nsys.path.insert(0, os.path.dirname(_TARGETS_DIR))\nfrom helpers.fast import fast as kernel\n"
    )
    report = sync(ws, n=3, executor=LaneExecutor([ProcessLane(ws, "cpu", frozenset({"cpu"}))]))
    (item,) = report.items
    assert item.verdict == "invalid" and "ModuleNotFoundError: No module named 'helpers'" in (item.reason or "")
    assert "lane's private copy of the workspace" in item.reason and "lacks helpers" in item.reason
    assert "hotkernel sync --serial" in item.reason
