"""Verdict-level controls and one known hole, through the real runner and ``verify`` on CPU (docs/verdicts.md).

The adversarial suite (tests/adversarial) judges single runs; these judge whole verifies (n = 5: a 2-core CI
machine shared with other jobs can disturb single runs badly, and n = 3 has t = 9.9): an honest
rewrite that does an eighth of the work is ``faster``, one that does eight times the work is ``slower``. The
last test closes a hole found while writing docs/verdicts.md: a candidate that rewrites the module the baseline
imports its kernel from (to slow the baseline down) makes its own run ``invalid`` (``baseline_unchanged``),
because the runner hashes the target's source files before and after every run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from adversarial.workspace import KERNEL_SOURCE, TARGET, make_workspace, python

from hotkernel.run.runner import JudgeProcess, run_script
from hotkernel.run.verify import verify

pytestmark = pytest.mark.slow

EIGHT_TIMES = """import torch


def kernel(x, w, *, eps):
    for _ in range(7):
        _unused = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
"""
ONCE = """import torch


def kernel(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
"""
SLOW_BASELINE = KERNEL_SOURCE.replace(
    "def rms_scale(x, w, *, eps):\n",
    "def rms_scale(x, w, *, eps):\n    for _ in range(7):\n"
    "        _unused = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w\n",
)
EDITS_BASELINE_SOURCE = '''"""Cheat: rewrites kernels/ops.py (the baseline's module) to do 8x the work."""
import pathlib

import torch

_ops = pathlib.Path(__file__).resolve().parents[2] / "kernels" / "ops.py"
_ops.write_text(SLOW)


def kernel(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
'''


def run_verify(root: Path, candidate: str, *, baseline_source: str | None = None) -> object:
    ws, _ = make_workspace(root)
    if baseline_source is not None:
        (ws.root / "kernels" / "ops.py").write_text(baseline_source)
    (ws.target_dir(TARGET) / "candidate.py").write_text(candidate)
    return verify(ws, f"targets/{TARGET}/baseline.py", f"targets/{TARGET}/candidate.py", n=5, python=python())


def test_honest_rewrite_doing_an_eighth_of_the_work_is_faster(tmp_path: Path) -> None:
    result = run_verify(tmp_path / "ws", ONCE, baseline_source=SLOW_BASELINE)
    assert result.verdict == "faster", result.reason
    assert result.speedup is not None and result.speedup > 2.0


def test_honest_rewrite_doing_eight_times_the_work_is_slower(tmp_path: Path) -> None:
    result = run_verify(tmp_path / "ws", EIGHT_TIMES)
    assert result.verdict == "slower", result.reason


def test_candidate_that_slows_the_baseline_source_is_caught(tmp_path: Path) -> None:
    ws, resolved = make_workspace(tmp_path / "ws")
    (ws.target_dir(TARGET) / "candidate.py").write_text(EDITS_BASELINE_SOURCE.replace("SLOW", repr(SLOW_BASELINE)))
    with JudgeProcess(ws, python=python()) as judge:
        first = run_script(ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, resolved=resolved)
        assert SLOW_BASELINE == (ws.root / "kernels" / "ops.py").read_text()  # the edit happened
    assert first.status == "invalid", f"the edit went unnoticed: {first.status} / {first.reason}"
    assert first.reason.startswith("baseline_unchanged: kernels/ops.py"), first.reason
