"""A process that escapes a run (re-parented to the orchestrator, the run's subreaper) is flagged however briefly
it lives: here a candidate double-forks a process that exits after 50 ms, long before the end-of-run check."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hotkernel.run.runner import JudgeProcess, run_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

pytestmark = pytest.mark.slow

SHORT_LIVED_ESCAPEE = """
import os
import time

import torch


def kernel(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(0.05)  # a short burner: gone before the run ends
        os._exit(0)
    os._exit(0)
"""

HONEST_CHILD = """
import subprocess
import sys

import torch

subprocess.run([sys.executable, "-c", "pass"], check=True)  # a child the script waits for: not an escape


def kernel(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory):
    ws, resolved = make_workspace(Path(tmp_path_factory.mktemp("escape")))
    with JudgeProcess(ws, python=python()) as judge:
        yield ws, resolved, judge


def _run(session, source: str):
    ws, resolved, judge = session
    (ws.target_dir(TARGET) / "candidate.py").write_text(source)
    return run_script(
        ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, timeout_s=120, resolved=resolved
    )


def test_a_short_lived_double_forked_process_is_flagged(session) -> None:
    outcome = _run(session, SHORT_LIVED_ESCAPEE)
    assert outcome.status == "invalid", f"{outcome.status} / {outcome.reason}\n{outcome.stderr_tail[-1500:]}"
    assert outcome.reason.startswith("no_leftover_processes:") and "re-parented" in outcome.reason


def test_a_child_the_script_waits_for_is_not_an_escape_and_the_next_run_is_clean(session) -> None:
    outcome = _run(session, HONEST_CHILD)
    assert outcome.status == "ok", f"{outcome.status} / {outcome.reason}\n{outcome.stderr_tail[-1500:]}"
