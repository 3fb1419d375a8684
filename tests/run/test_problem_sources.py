"""A module problem's file (and a GPU MODE task's suite utils) is one of the target's sources: hashed around
every run, so a candidate that edits the baseline's problem makes the run invalid."""

from __future__ import annotations

from pathlib import Path

from hotkernel.run.runner import source_files, source_hashes
from hotkernel.workspace.paths import Workspace


def test_problem_files_and_gpumode_utils_are_sources(tmp_path: Path) -> None:
    kb = tmp_path / "problems" / "kernelbench" / "level1"
    kb.mkdir(parents=True)
    (kb / "23_Softmax.py").write_text("class Model: ...\n")
    task = tmp_path / "problems" / "gpumode" / "suite" / "task"
    task.mkdir(parents=True)
    (task / "reference.py").write_text("def ref_kernel(data): ...\n")
    (task.parent / "utils.py").write_text("def make_match_reference(*a): ...\n")
    (tmp_path / "utils.py").write_text("# a workspace-root file: the root's own *.py never pulls in its parent\n")
    (tmp_path / "p.py").write_text("class Model: ...\n")
    ws = Workspace(tmp_path)
    rel = {
        path.relative_to(tmp_path).as_posix()
        for path in source_files(ws, {"from": "./problems/kernelbench/level1/23_Softmax.py"})
    }
    assert rel == {"problems/kernelbench/level1/23_Softmax.py"}
    rel = {
        path.relative_to(tmp_path).as_posix()
        for path in source_files(ws, {"from": "./problems/gpumode/suite/task/reference.py"})
    }
    assert rel == {"problems/gpumode/suite/task/reference.py", "problems/gpumode/suite/utils.py"}
    rel = {path.relative_to(tmp_path).as_posix() for path in source_files(ws, {"from": "./p.py"})}
    assert rel == {"p.py", "utils.py"}  # the root: its own files only, nothing above it
    before = source_hashes(ws, {"from": "./problems/kernelbench/level1/23_Softmax.py"})
    (kb / "23_Softmax.py").write_text("class Model: ...  # slowed down\n")
    assert source_hashes(ws, {"from": "./problems/kernelbench/level1/23_Softmax.py"}) != before
