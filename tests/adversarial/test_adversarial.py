"""Every cheat family in ``cases.CASES`` runs through the real runner (worker, judge, hashes) on CPU and must
come out with its exact status and check name; controls come out ok / incorrect."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hotkernel.run.render import initial_candidate, render_target
from hotkernel.run.runner import JudgeProcess, run_script
from hotkernel.workspace.paths import Workspace

from .cases import CASES, PROBLEMS, Case
from .workspace import TARGET, default_resolved, install_candidate, make_workspace, python

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple]:
    ws, resolved = make_workspace(Path(tmp_path_factory.mktemp("adversarial")))
    pristine = (ws.target_dir(TARGET) / "candidate.py").read_text()
    with JudgeProcess(ws, python=python()) as judge:
        yield ws, resolved, pristine, judge


def problem_resolved(ws: Workspace, name: str) -> dict[str, Any]:
    """``rms`` rendered from the problem file PROBLEMS[name] (written under problems/)."""
    (ws.root / "problems").mkdir(exist_ok=True)
    (ws.root / "problems" / f"{name}.py").write_text(PROBLEMS[name])
    inputs = [{"name": "x", "shapes": [[64, 256]]}, {"name": "state", "shapes": None}]
    return default_resolved(**{"from": f"./problems/{name}.py", "kwargs": {}, "cases": [], "inputs": inputs})


@pytest.mark.parametrize(
    "case", CASES, ids=[case.name + (f"-{case.problem}" if case.problem else "") for case in CASES]
)
def test_case(session: tuple, case: Case) -> None:
    ws, resolved, pristine, judge = session
    if case.problem:
        resolved = problem_resolved(ws, case.problem)
        pristine = initial_candidate(resolved)
    render_target(ws, TARGET, resolved)  # restores a baseline/contract an earlier case edited
    if case.name == "untouched":
        (ws.target_dir(TARGET) / "candidate.py").write_text(pristine)
    else:
        install_candidate(ws, case.name)
    outcome = run_script(
        ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, timeout_s=case.timeout_s, resolved=resolved
    )
    detail = f"{case.name}: got {outcome.status} / {outcome.reason}\n{outcome.stderr_tail[-1500:]}"
    assert outcome.status == case.status, detail
    if case.status == "ok":
        assert outcome.reason is None and outcome.ms is not None and outcome.ms > 0, detail
        assert outcome.run is not None and outcome.run["ok"] is True
    else:
        assert outcome.reason is not None, detail
        assert outcome.reason.split(":", 1)[0] in case.checks, detail
        assert outcome.ms is None
