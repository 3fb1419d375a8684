"""``hotkernel audit TARGET`` on a CPU workspace with real verifies: the counted best reproduces, a candidate that
turned slow does not (exit 1, both intervals), and files changed since the record are refused in one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.run.render import render_target
from hotkernel.run.runstore import run_ids
from hotkernel.workspace.paths import Workspace

pytestmark = pytest.mark.slow

BASELINE = """import torch


def rms_scale(x, w, *, eps):
    for _ in range(200):  # the same result 200 times: a baseline any honest candidate beats by far
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    return y
"""
MANIFEST = """version: 1
targets:
  rms:
    from: ./kernels/ops.py:rms_scale
    shapes: [64x256]
    extra: ["w:256"]
    dtype: fp32
    kwargs: {eps: 1.0e-6}
    device: cpu
"""
KERNEL = """SLOW = {slow!r}  # while this file exists the candidate does the baseline's work


def kernel(x, w, *, eps):
    if os.path.exists(SLOW):
        return _baseline_kernel(x, w, eps=eps)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


if __name__ == "__main__":
    hk_contract.main(__file__)
"""
ROUNDS = ("-n", "3", "--max-rounds", "3")


def _workspace(root: Path) -> Workspace:
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "ops.py").write_text(BASELINE)
    (root / "hotkernel.yaml").write_text(MANIFEST)
    ws = Workspace(root)
    render_target(ws, "rms", resolved_target(load_manifest(ws.manifest), "rms"))
    candidate = ws.target_dir("rms") / "candidate.py"
    text = candidate.read_text()
    candidate.write_text(text[: text.index("# Start here")] + KERNEL.format(slow=str(root / "slow")))
    return ws


def _hotkernel(ws: Workspace, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(ws.root), "HOTKERNEL_PYTHON": sys.executable, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", *args], capture_output=True, text=True, env=env, cwd=ws.root, timeout=1200
    )


def _verify_and_record(ws: Workspace, *confirms: str) -> dict:
    done = _hotkernel(ws, "verify", "targets/rms/baseline.py", "targets/rms/candidate.py", *ROUNDS)
    said = done.stderr  # verify prints for people on stderr (progress, verdict, run id)
    assert done.returncode == 0 and re.search(r"^faster ", said, re.M), done.stdout + said
    (run_id,) = re.findall(r"^run: (\S+)$", said, re.M)
    assert f"next: hotkernel record rms {run_id}" in said and run_ids(ws)[-1] == run_id
    kept = _hotkernel(ws, "record", "rms", run_id, "--who", "pytest", "--note", "once", *confirms, "--json")
    assert kept.returncode == 0, kept.stderr
    return json.loads(kept.stdout)


def test_audit_reruns_the_best_and_says_whether_it_reproduces(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    first = _verify_and_record(ws)
    assert first["awaiting_confirmation"] is True
    second = _verify_and_record(ws, "--confirms", first["path"])
    assert second["confirmed"] is True
    record = json.loads((ws.root / second["path"]).read_text())
    low, high = record["result"]["interval"]

    same = _hotkernel(ws, "audit", "rms")
    assert same.returncode == 0, same.stdout + same.stderr
    lines = same.stdout.splitlines()
    assert lines[0].startswith(f"record: {second['path']}: faster") and f"[{low:.3f}, {high:.3f}]" in lines[0]
    assert lines[1].startswith("rerun:  faster") and lines[-1].startswith("reproduces:")

    (tmp_path / "ws" / "slow").write_text("")  # the same bytes, now doing the baseline's work
    slow = _hotkernel(ws, "audit", "rms", "--json")
    assert slow.returncode == 1, slow.stdout + slow.stderr
    report = json.loads(slow.stdout)
    assert report["reproduces"] is False and report["rerun"]["verdict"] != "faster", report["rerun"]["reason"]
    assert report["recorded_interval"] == [low, high] and report["rerun_interval"] is not None
    rerun_low, rerun_high = report["rerun_interval"]
    assert report["consistent"] is (rerun_low <= high and low <= rerun_high)  # consistent: the intervals overlap

    candidate = ws.target_dir("rms") / "candidate.py"
    candidate.write_text(candidate.read_text() + "# edited\n")
    before = run_ids(ws)
    changed = _hotkernel(ws, "audit", "rms")
    assert changed.returncode == 1 and run_ids(ws) == before  # refused before any run
    assert changed.stderr.count("\n") == 1 and "targets/rms/candidate.py changed since" in changed.stderr


def test_audit_of_a_target_without_a_crowned_best_is_one_line(tmp_path: Path) -> None:
    ws = _workspace(tmp_path / "ws")
    done = _hotkernel(ws, "audit", "rms")
    assert done.returncode == 1 and "rms has no counted best" in done.stderr and "Traceback" not in done.stderr
