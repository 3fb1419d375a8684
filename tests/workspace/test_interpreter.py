"""Which python runs kernels: HOTKERNEL_PYTHON, else the manifest's, else the first on PATH with torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.workspace import interpreter
from hotkernel.workspace.interpreter import ENV_VAR, find_python, probe_python


@pytest.fixture(autouse=True)
def fresh_probes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    interpreter.clear_probe_cache()
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "probe-cache"))  # no probe kept from another test


def fake_python(directory: Path, name: str, torch_version: str | None, *, sleep_s: float = 0) -> Path:
    """An executable that answers the torch probe like a python with (or without) torch; counts its torch
    probes (not the ``sys.path`` read of the probe cache's fingerprint, which it cannot answer: no cache)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    answer = (
        f"printf '%s' '{torch_version}'"
        if torch_version
        else "echo \"ModuleNotFoundError: No module named 'torch'\" >&2; exit 1"
    )
    path.write_text(
        f"#!/bin/sh\ncase \"$2\" in *'import torch'*) echo called >> '{path}.calls';; esac\n"
        f"{f'sleep {sleep_s}' if sleep_s else ''}\n{answer}\n",
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def calls(path: Path) -> int:
    log = Path(f"{path}.calls")
    return len(log.read_text(encoding="utf-8").splitlines()) if log.exists() else 0


def test_env_wins_over_manifest_and_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env_python = fake_python(tmp_path / "env", "python", "2.9.0+env")
    manifest_python = fake_python(tmp_path / "manifest", "python", "2.9.0+manifest")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    monkeypatch.setenv(ENV_VAR, str(env_python))
    choice = find_python(str(manifest_python))
    assert (choice.path, choice.source, choice.torch_version) == (str(env_python), "env", "2.9.0+env")
    assert calls(manifest_python) == 0
    assert "from HOTKERNEL_PYTHON" in choice.describe() and "torch 2.9.0+env" in choice.describe()


def test_manifest_python_relative_to_the_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_python(tmp_path / ".venv" / "bin", "python", "2.8.0")
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))
    choice = find_python(".venv/bin/python", root=tmp_path)
    assert choice.source == "manifest" and choice.torch_version == "2.8.0"
    assert Path(choice.path) == tmp_path / ".venv" / "bin" / "python"


def test_path_search_skips_pythons_without_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bare = fake_python(tmp_path / "a", "python", None)
    with_torch = fake_python(tmp_path / "b", "python3", "2.7.1")
    fake_python(tmp_path / "c", "python", "9.9.9")  # later on PATH: never reached
    monkeypatch.setenv("PATH", os.pathsep.join(str(tmp_path / d) for d in ("a", "b", "c")))
    choice = find_python(None)
    assert (choice.path, choice.source, choice.torch_version) == (str(with_torch), "path", "2.7.1")
    assert calls(bare) == 1


def test_probe_is_cached_per_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = fake_python(tmp_path / "a", "python", "2.7.1")
    monkeypatch.setenv("PATH", str(tmp_path / "a"))
    for _ in range(3):
        assert find_python(None).torch_version == "2.7.1"
    assert calls(python) == 1


def test_no_torch_anywhere_names_the_three_fixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_python(tmp_path / "a", "python3", None)
    monkeypatch.setenv("PATH", str(tmp_path / "a"))
    with pytest.raises(HotkernelError) as caught:
        find_python(None)
    message = str(caught.value)
    assert "\n" not in message
    for fix in ("HOTKERNEL_PYTHON=", "`python: /path/to/python` under `defaults:`", "pip install torch"):
        assert fix in message
    assert "No module named 'torch'" in message and str(tmp_path / "a" / "python3") in message


def test_explicit_python_without_torch_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bare = fake_python(tmp_path / "a", "python", None)
    monkeypatch.setenv(ENV_VAR, str(bare))
    with pytest.raises(HotkernelError, match=r"HOTKERNEL_PYTHON .* cannot import torch"):
        find_python(None)
    choice = find_python(None, require_torch=False)
    assert choice.source == "env" and choice.torch_version is None


def test_explicit_python_that_does_not_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "missing" / "python"))
    with pytest.raises(HotkernelError, match="is not an executable file"):
        find_python(None)
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HotkernelError, match="is not on PATH"):
        find_python("python-that-does-not-exist")


def test_a_hanging_probe_times_out(tmp_path: Path) -> None:
    slow = fake_python(tmp_path / "a", "python", "1.0", sleep_s=5)
    probe = probe_python(str(slow), timeout_s=0.3)
    assert probe.torch_version is None and "took over 0.3 s" in (probe.problem or "")


def test_this_venv_python_has_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.setenv(ENV_VAR, sys.executable)
    choice = find_python(None)
    assert choice.source == "env" and choice.torch_version


def test_tool_modules_never_import_torch() -> None:
    code = (
        "import sys, hotkernel.manifest, hotkernel.manifest.schema, hotkernel.workspace.interpreter\n"
        "import hotkernel.cli.commands.new\n"
        "assert 'torch' not in sys.modules and 'triton' not in sys.modules, 'torch imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_an_unexpanded_plugin_option_counts_as_unset(monkeypatch) -> None:
    from hotkernel.workspace.interpreter import find_python

    monkeypatch.setenv("HOTKERNEL_PYTHON", "${user_config.python}")
    choice = find_python(None, require_torch=False)
    assert choice.source != "env"
