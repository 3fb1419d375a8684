"""A tiny CPU workspace for contract tests: one fp32 target ``rms`` (64x256 rows scaled by their RMS and a
weight), rendered, with helpers to swap in a candidate. Reusable by other test modules
(``from adversarial.workspace import make_workspace``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.run import render
from hotkernel.run.render import render_target
from hotkernel.run.runner import JudgeProcess, sources_digest
from hotkernel.workspace.paths import Workspace

TARGET = "rms"
CANDIDATES_DIR = Path(__file__).resolve().parent / "candidates"
KERNEL_SOURCE = '''"""The baseline kernel: rows scaled by their root-mean-square, times a weight."""

import torch


def rms_scale(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
'''
MANIFEST_SOURCE = """version: 1
targets:
  rms:
    from: ./kernels/ops.py:rms_scale
    shapes: [64x256]
    extra: ["w:256"]
    dtype: fp32
    kwargs: {eps: 1.0e-6}
    device: cpu
"""


def default_resolved(**overrides: Any) -> dict[str, Any]:
    """The render context of ``rms`` as docs/architecture.md defines it (every default filled in)."""
    resolved: dict[str, Any] = {
        "name": TARGET,
        "from": "./kernels/ops.py:rms_scale",
        "reference": None,
        "derive": None,
        "derived_inputs": None,
        "inputs": [{"name": "x", "shapes": [[64, 256]]}, {"name": "w", "shapes": [[256]]}],
        "shapes": ["64x256"],
        "dtype": "fp32",
        "kwargs": {"eps": 1e-6},
        "rotate": ["x"],
        "flops": None,
        "bytes": None,
        "min_bytes": None,
        "atol": 1e-4,
        "rtol": 1e-4,
        "seed": None,
        "iters": None,
        "device": "cpu",
    }
    resolved.update(overrides)
    return resolved


def manifest_resolved(ws: Workspace) -> dict[str, Any]:
    """``resolved_target`` of ``rms`` from the workspace manifest."""
    return resolved_target(load_manifest(ws.manifest), TARGET)


def make_workspace(root: Path, **overrides: Any) -> tuple[Workspace, dict[str, Any]]:
    """Write kernels/ops.py and hotkernel.yaml under ``root`` and render ``rms``; (workspace, resolved)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "kernels").mkdir(exist_ok=True)
    (root / "kernels" / "ops.py").write_text(KERNEL_SOURCE)
    (root / "hotkernel.yaml").write_text(MANIFEST_SOURCE)
    ws = Workspace(root)
    resolved = default_resolved(**overrides) if overrides else manifest_resolved(ws)
    render_target(ws, TARGET, resolved)
    return ws, resolved


def install_candidate(ws: Workspace, name: str) -> Path:
    """Copy ``candidates/<name>.py`` over ``targets/rms/candidate.py``; returns the candidate path."""
    path = ws.target_dir(TARGET) / "candidate.py"
    shutil.copyfile(CANDIDATES_DIR / f"{name}.py", path)
    return path


def python() -> str:
    """The user interpreter for tests: HOTKERNEL_PYTHON or this venv's python (it has CPU torch)."""
    return os.environ.get("HOTKERNEL_PYTHON") or sys.executable


class SharedJudge:
    """One judge serving the runs of several tests, each test in a workspace of its own (a judge start imports
    torch). The judge keeps a target's expected outputs and its baseline's own error per SPEC, not per workspace:
    ``judge_for`` asserts that a SPEC seen before comes with the same source files, so no test is judged against
    what another test's baseline computed."""

    def __init__(self, judge: JudgeProcess) -> None:
        self.judge = judge
        self.sources: dict[str, str] = {}  # SPEC (as the judge keys it) -> digest of the target's source files

    def judge_for(self, ws: Workspace, name: str, resolved: dict[str, Any]) -> JudgeProcess:
        spec = render.contract_module().read_spec(str(ws.target_dir(name) / "baseline.py"))
        key = json.dumps(spec, sort_keys=True)
        digest = sources_digest(ws, resolved)
        assert self.sources.setdefault(key, digest) == digest, f"two workspaces share the SPEC of {name}: {key}"
        return self.judge


@contextmanager
def shared_judge(root: Path) -> Iterator[SharedJudge]:
    """A ``SharedJudge`` started with this interpreter, closed on the way out."""
    root.mkdir(parents=True, exist_ok=True)
    with JudgeProcess(Workspace(root), python=python()) as judge:
        yield SharedJudge(judge)
