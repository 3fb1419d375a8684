"""A run executes the script's bytes as they are on disk now: Python's bytecode cache trusts a ``.pyc`` whose
source has the same size and whole-second mtime, so a candidate rewritten within the same second at the same size
would otherwise run its previous code (as the adversarial suite's hangs/segfault pair once did)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hotkernel.run.runner import JudgeProcess, run_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

pytestmark = pytest.mark.slow

HONEST = """import torch


def kernel(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
"""
WRONG = HONEST.replace("+ eps) * w", "+ eps) + w")  # same length, wrong result


def test_a_rewrite_of_the_same_size_and_second_runs_the_new_code(tmp_path: Path) -> None:
    assert len(WRONG) == len(HONEST) and WRONG != HONEST
    ws, resolved = make_workspace(tmp_path / "ws")
    candidate = ws.target_dir(TARGET) / "candidate.py"
    with JudgeProcess(ws, python=python()) as judge:
        outcomes = []
        for source in (HONEST, WRONG, HONEST):
            candidate.write_text(source)
            os.utime(candidate, (1_700_000_000, 1_700_000_000))  # the same mtime every time
            outcome = run_script(
                ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, timeout_s=120, resolved=resolved
            )
            outcomes.append((outcome.status, outcome.reason))
    assert [status for status, _ in outcomes] == ["ok", "incorrect", "ok"], outcomes
    assert not list(candidate.parent.glob("__pycache__/*")), "a run wrote bytecode into the workspace"
