"""A real end-to-end `hotkernel sync` on a small CPU target, with the real contract and the user's torch.

untouched candidate -> inconclusive; wrong candidate -> incorrect (fail fast); edited baseline -> invalid;
a crashing script -> a clear bench error; a bad manifest changes nothing in results/, the lock or the board.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel.store.leaderboard import current_protocol
from hotkernel.store.scan import load_record

pytestmark = pytest.mark.slow

KERNEL = "def scale_add(x, w):\n    return x * w + 1.0\n"
MANIFEST = """\
version: 1
defaults:
  device: cpu
  dtype: fp32
targets:
  scale:
    from: ./kern.py:scale_add
    shapes: [32x64]
    extra: [w:64]
"""
WRONG = """

def kernel(x, w):
    return x * w  # forgot the + 1.0
"""
CRASH = """

def kernel(x, w):
    raise RuntimeError("boom")
"""


def _hk(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "HOTKERNEL_WORKSPACE": str(root),
        "HOTKERNEL_PYTHON": sys.executable,
        "HOTKERNEL_WHO": "e2e test",
    }
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", *args], capture_output=True, text=True, env=env, cwd=root, timeout=900
    )


def _state(root: Path) -> dict[str, bytes]:
    files = [root / "hotkernel.lock", root / "LEADERBOARD.md", *sorted((root / "results").rglob("*"))]
    return {str(p): p.read_bytes() for p in files if p.is_file()}


def _last_record(root: Path) -> dict:
    """The newest record of ``scale``, decoded from its compact file as the store reads it."""
    latest = sorted((root / "results" / "scale").glob("*.json"))[-1]
    record = load_record(latest)
    assert record is not None, latest
    return record.model_dump(mode="json")


def test_sync_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    root = tmp_path
    (root / "kern.py").write_text(KERNEL)
    (root / "hotkernel.yaml").write_text(MANIFEST)

    # 1. untouched candidate: rendered, verified, recorded -> inconclusive; then up to date.
    first = _hk(root, "sync", "-n", "3", "--json")
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    (item,) = report["items"]
    assert item["status"] == "recorded" and item["verdict"] == "inconclusive", item
    assert item["who"] == "hotkernel (generated: the untouched candidate calls the baseline)"
    assert report["lanes"] == "local"  # no GPU here: one verify at a time in the sync process
    rec = _last_record(root)
    # the generated candidate declares WHO, which wins over the session default (HOTKERNEL_WHO)
    assert rec["kind"] == "record" and rec["contract"] == current_protocol()
    assert rec["spec"]["atol"] == rec["tolerances"]["atol"] and rec["spec"]["rtol"] == rec["tolerances"]["rtol"]
    assert rec["spec"]["inputs"][0]["shapes"] == [[32, 64]] and rec["manifest_fingerprint"]
    assert rec["who"] == "hotkernel (generated: the untouched candidate calls the baseline)"
    # the sequential rule stops at n when the answer is settled, else goes on to max_rounds (2n); rounds are ABBA
    result = rec["result"]
    assert 3 <= result["rounds_completed"] <= result["max_rounds"] == 6
    assert result["order"] == ["B", "C", "C", "B"] * (result["rounds_completed"] // 2) + ["B", "C"] * (
        result["rounds_completed"] % 2
    )
    assert rec["provenance"]["device_kind"] == "cpu" and rec["provenance"]["torch"]
    assert "speedup" in rec["result"] and rec["result"]["speedup"] is None
    lock = json.loads((root / "hotkernel.lock").read_text())
    assert lock["targets"]["scale"]["cpu"]["record"] == item["record"]
    assert (root / "LEADERBOARD.md").read_text().startswith("<!-- Code generated")
    check = _hk(root, "sync", "--check")
    assert check.returncode == 0 and "No changes" in check.stdout
    assert _hk(root, "leaderboard", "--check").returncode == 0
    again = _hk(root, "sync")  # nothing to run: it says where the target stands, and claims no run
    assert again.returncode == 0 and "scale.... up to date; last record: inconclusive on " in again.stdout
    assert "Sync: 1 up to date." in again.stdout and "recorded" not in again.stdout

    # 2. bench: every sample, mean/std/min/median.
    bench = _hk(root, "bench", "targets/scale/baseline.py", "-n", "2", "--warmup", "0", "--json")
    assert bench.returncode == 0, bench.stderr
    stats = json.loads(bench.stdout)["stats"]
    assert stats["n"] == 2 and len(stats["samples_ms"]) == 2 and stats["min_ms"] <= stats["median_ms"]

    # 3. a wrong candidate -> incorrect, named check, and verify stops at the first candidate run.
    candidate = root / "targets" / "scale" / "candidate.py"
    original = candidate.read_text()
    header = "".join(
        line for line in original.split("# Start here")[0].splitlines(keepends=True) if not line.startswith("WHO = ")
    )
    candidate.write_text(header + WRONG)  # written by hand, without WHO: the session default is its author
    assert "~ scale: candidate changed" in _hk(root, "plan").stdout
    wrong = _hk(root, "sync", "-n", "3", "--json")
    assert wrong.returncode == 1, wrong.stderr
    (item,) = json.loads(wrong.stdout)["items"]
    assert item["who"] == "e2e test" and _last_record(root)["who"] == "e2e test"
    assert item["verdict"] == "incorrect" and item["reason"].split(":")[0] in (
        "outputs_match_reference",
        "timed_outputs_match_reference",
    ), item
    assert len(_last_record(root)["result"]["runs"]) == 2  # B then C, then it stopped

    # 4. a crashing candidate: bench reports it, one line, no traceback from hotkernel.
    candidate.write_text(original.split("# Start here")[0] + CRASH)
    crash = _hk(root, "bench", "targets/scale/candidate.py", "-n", "1", "--warmup", "0", "--json")
    assert crash.returncode == 1
    result = json.loads(crash.stdout)
    assert result["status"] != "ok" and result["reason"] and "boom" in json.dumps(result)

    # 5. an edited baseline -> invalid (baseline_unchanged), nothing run.
    candidate.write_text(original)
    baseline = root / "targets" / "scale" / "baseline.py"
    baseline.write_text(baseline.read_text() + "\n# tuned by hand\n")
    assert "baseline edited" in _hk(root, "plan").stdout
    edited = _hk(root, "sync", "-n", "3", "--json")
    assert edited.returncode == 1
    (item,) = json.loads(edited.stdout)["items"]
    assert item["verdict"] == "invalid" and "baseline_unchanged" in item["reason"], item
    assert "baseline edited" in _hk(root, "plan").stdout  # an invalid run is recorded, never locked in
    assert _hk(root, "sync", "--check").returncode == 2

    # 6. a bad manifest: one line naming the place, and results/, the lock and the board untouched.
    before = _state(root)
    (root / "hotkernel.yaml").write_text(MANIFEST.replace("dtype: fp32", "dtype: bf17"))
    for args in (("sync", "-n", "3"), ("sync", "--check"), ("plan",)):
        bad = _hk(root, *args)
        assert bad.returncode == 1 and "hotkernel.yaml:" in bad.stderr and "Traceback" not in bad.stderr
    assert _state(root) == before
