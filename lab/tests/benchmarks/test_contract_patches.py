"""The device experiments that patch a scratch copy of the contract (lab/benchmarks/device/*_patch.py) still apply to
today's contract: a CPU run of an honest candidate under each is ok; without the perturbation a memoizing
candidate passes, which the contract's own perturbation catches (tests/adversarial/cases.py)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
from adversarial.workspace import TARGET, install_candidate, make_workspace, python  # noqa: E402


def patched_workspace(tmp_path: Path, patch: str):
    """A CPU workspace whose contract (and its templates/ copy) ``lab/benchmarks/device/<patch>.py`` has patched."""
    ws, _ = make_workspace(tmp_path)
    (ws.root / "templates").mkdir(exist_ok=True)
    shutil.copyfile(ws.root / "targets" / "hk_contract.py", ws.root / "templates" / "hk_contract.py")
    spec = importlib.util.spec_from_file_location(patch, ROOT / "lab" / "benchmarks" / "device" / f"{patch}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ROOT = ws.root
    module.main()
    with pytest.raises(AssertionError, match="patched already"):
        module.main()
    return ws


def standalone(ws, candidate: str | None = None) -> dict:
    script = install_candidate(ws, candidate) if candidate else ws.target_dir(TARGET) / "candidate.py"
    proc = subprocess.run([python(), "targets/hk_contract.py", "run", str(script)], cwd=ws.root, capture_output=True,
                          text=True, timeout=300)
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_an_honest_candidate_passes_without_the_perturbation(tmp_path: Path) -> None:
    ws = patched_workspace(tmp_path, "no_perturb_patch")
    assert "experiment" in (ws.root / "targets" / "hk_contract.py").read_text()
    result = standalone(ws)
    assert result["status"] == "ok", result.get("reason")


@pytest.mark.slow
def test_without_the_perturbation_memoized_outputs_pass(tmp_path: Path) -> None:
    """Why the contract keeps its copies (lab/speedrun.md, "What the per-call perturbation costs"): with none,
    the memoizing candidate's repeats are right and nothing catches it."""
    result = standalone(patched_workspace(tmp_path, "no_perturb_patch"), "memo_strided_sample")
    assert result["status"] == "ok", result.get("reason")
