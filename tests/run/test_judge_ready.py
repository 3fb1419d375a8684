"""verify/bench start the judge at once (its import of torch is the interpreter's probe): a python without torch
is a one-line error before any run, an explicit python is not test-run first, and the manifest is read once."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from adversarial.workspace import TARGET, make_workspace

from hotkernel.errors import HotkernelError
from hotkernel.manifest import load as manifest_load
from hotkernel.run import runner
from hotkernel.run.bench import bench
from hotkernel.run.verify import verify
from hotkernel.workspace import interpreter


def no_torch_python(folder: Path) -> str:
    """An executable that fails the way a python without torch fails when it runs the judge."""
    path = folder / "python-no-torch"
    path.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize("verb", ["verify", "bench"])
def test_python_without_torch_is_one_line_error_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verb: str
) -> None:
    ws, _ = make_workspace(tmp_path)
    monkeypatch.setenv(interpreter.ENV_VAR, no_torch_python(tmp_path))
    probes: list[str] = []
    monkeypatch.setattr(interpreter, "probe_python", lambda path, **kw: probes.append(path))
    baseline, candidate = f"targets/{TARGET}/baseline.py", f"targets/{TARGET}/candidate.py"
    with pytest.raises(HotkernelError) as info:
        if verb == "verify":
            verify(ws, baseline, candidate, n=3)
        else:
            bench(ws, candidate, n=1)
    message = str(info.value)
    assert "cannot import torch (ModuleNotFoundError: No module named 'torch')" in message
    assert "pip install torch" in message and "HOTKERNEL_PYTHON" in message and "\n" not in message
    assert probes == []  # the judge was the probe: no separate `import torch` ran before it
    assert not [name for name in os.listdir(ws.root) if name.startswith("results")]  # nothing recorded


def test_verify_reads_the_manifest_once_for_all_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws, _ = make_workspace(tmp_path)
    reads: list[Path] = []
    real = manifest_load.load_manifest

    def counting(path: Path, *args: object, **kwargs: object) -> object:
        reads.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(runner, "load_manifest", counting)
    seen: list[object] = []

    class ReadyJudge:
        def __init__(self, ws: object, *, python: str, compile_warm: bool = False) -> None: ...
        def want_compile_warm(self, compile_warm: bool) -> None: ...
        def __enter__(self) -> ReadyJudge:
            return self

        def __exit__(self, *exc: object) -> None: ...
        def ensure_ready(self) -> None: ...

    def fake_run(ws: object, script: object, *, resolved: object = None, role: str = "", **kw: object) -> object:
        seen.append(resolved)
        return runner.RunOutcome(
            status="invalid", reason="crashed: stop here", wall_s=0.0, script=str(script), role=role
        )

    monkeypatch.setattr(runner, "JudgeProcess", ReadyJudge)
    monkeypatch.setattr(runner, "run_script", fake_run)
    verify(ws, f"targets/{TARGET}/baseline.py", f"targets/{TARGET}/candidate.py", n=5, python="python")
    assert len(reads) == 1 and seen and all(item is not None and item["name"] == TARGET for item in seen)
