"""torch.compile's caches live in the workspace: a second fresh process finds what the first one compiled."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel.run import runner
from hotkernel.workspace.paths import Workspace


def test_cache_env_points_into_the_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(runner._USER_COMPILE_ENV, "TORCHINDUCTOR_CACHE_DIR", None)  # the user set none
    ws = Workspace(tmp_path)
    env = runner.compile_cache_env(ws)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / ".hotkernel" / "inductor")
    assert env["TORCHINDUCTOR_FX_GRAPH_CACHE"] == "1"
    monkeypatch.setitem(runner._USER_COMPILE_ENV, "TORCHINDUCTOR_CACHE_DIR", "/elsewhere")
    assert runner.compile_cache_env(ws)["TORCHINDUCTOR_CACHE_DIR"] == "/elsewhere"  # the user's choice wins


def test_one_process_serving_two_workspaces_gives_each_its_own_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP server runs one workspace, then another: the first one's cache is not taken for the user's."""
    monkeypatch.setitem(runner._USER_COMPILE_ENV, "TORCHINDUCTOR_CACHE_DIR", None)
    monkeypatch.setattr(os, "environ", dict(os.environ))  # the test's own copy
    first, second = Workspace(tmp_path / "a"), Workspace(tmp_path / "b")
    runner.use_compile_cache(first)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "a" / ".hotkernel" / "inductor")
    runner.use_compile_cache(second)
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "b" / ".hotkernel" / "inductor")


def test_judge_start_gives_children_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge and the workers start with a copy of os.environ: the cache is set before either starts."""
    monkeypatch.setitem(runner._USER_COMPILE_ENV, "TORCHINDUCTOR_CACHE_DIR", None)
    seen: list[str | None] = []

    class FakeJudge:
        def __init__(self, python: str, contract: str, compile_warm: bool = False) -> None:
            seen.append(os.environ.get("TORCHINDUCTOR_CACHE_DIR"))

    session = runner.JudgeProcess(Workspace(tmp_path), python=sys.executable, prestart=False)
    monkeypatch.setattr(session.contract, "Judge", FakeJudge)
    monkeypatch.setattr(os, "environ", dict(os.environ))  # the test's own copy
    session.start()
    assert seen == [str(tmp_path / ".hotkernel" / "inductor")]
    assert (tmp_path / ".hotkernel" / "inductor").is_dir()
    assert ".hotkernel/inductor" not in {p.relative_to(tmp_path).as_posix() for p in runner.workspace_files(session.ws)}


COMPILED = """
import torch
f = torch.compile(lambda x: torch.nn.functional.silu(x) * 2 + OFFSET)
print(float(f(torch.ones(64)).sum()))
"""


@pytest.mark.slow
def test_second_process_reuses_the_compiled_graph(tmp_path: Path) -> None:
    """Two fresh processes compile the same function: the first writes its FX graph entry, the second writes no
    new one (the FX graph files and their modification times after run 1 are all there and unchanged after run 2).

    The cache starts as a copy of the one this run's tests share (tests/conftest.py), where other functions were
    compiled: a first compile into a cold cache costs about twice one into a warm cache (14 s of CPU against 7 s
    on a 2-core box). The function's constant is drawn afresh, so no cache holds its graph already."""
    pytest.importorskip("torch")
    ws = Workspace(tmp_path)
    cache = tmp_path / "cache"
    shared = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if shared and Path(shared).is_dir():
        shutil.copytree(shared, cache, ignore=shutil.ignore_patterns("locks", "*.lock", "*.tmp*"))
    env = {**os.environ, **runner.compile_cache_env(ws), "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    script = tmp_path / "compiled.py"
    script.write_text(COMPILED.replace("OFFSET", repr(1.0 + random.random())))

    def graphs() -> dict[str, float]:
        return {str(p): p.stat().st_mtime for p in cache.rglob("*") if p.is_file() and "fxgraph" in str(p)}

    def run_once() -> dict[str, float]:
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        return graphs()

    seeded = graphs()
    first = run_once()
    assert set(first) - set(seeded)  # this function's FX graph entry was written
    second = run_once()
    assert second == first
