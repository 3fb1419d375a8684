"""A torch probe is kept across commands under the interpreter's fingerprint, and taken again when an install or
uninstall changes a directory on the interpreter's ``sys.path``."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from hotkernel.workspace import interpreter

FAKE = """#!{python}
import json, sys
code = sys.argv[2]
if "sys.path" in code:
    sys.stdout.write(json.dumps(["", {site!r}]))
else:
    with open({count!r}, "a") as handle:
        handle.write("probe\\n")
    if "torch" in open({state!r}).read():
        sys.stdout.write("2.13.0")
    else:
        sys.stderr.write("ModuleNotFoundError: No module named 'torch'\\n")
        sys.exit(1)
"""


@pytest.fixture()
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(interpreter, its site-packages, the file counting its torch probes); the probe cache in tmp_path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    site, count, state = tmp_path / "site-packages", tmp_path / "probes.txt", tmp_path / "state.txt"
    site.mkdir()
    state.write_text("torch")
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text(FAKE.format(python=sys.executable, site=str(site), count=str(count), state=str(state)))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    interpreter.clear_probe_cache()
    yield python, site, count
    interpreter.clear_probe_cache()


def probes(count: Path) -> int:
    return len(count.read_text().splitlines()) if count.exists() else 0


def test_a_second_command_takes_the_kept_probe(fake: tuple[Path, Path, Path]) -> None:
    python, _, count = fake
    assert interpreter.probe_python(str(python)).torch_version == "2.13.0"
    interpreter.clear_probe_cache()  # a new command: nothing cached in the process
    assert interpreter.probe_python(str(python)).torch_version == "2.13.0"
    assert probes(count) == 1
    kept = json.loads(interpreter.probe_cache_file().read_text())
    assert list(kept.values()) == [{"torch_version": "2.13.0", "problem": None}]


def test_an_install_or_uninstall_on_sys_path_probes_again(fake: tuple[Path, Path, Path], tmp_path: Path) -> None:
    python, site, count = fake
    assert interpreter.probe_python(str(python)).torch_version == "2.13.0"
    (tmp_path / "state.txt").write_text("")  # torch uninstalled: the site-packages directory changes
    (site / "torch").mkdir()
    (site / "torch").rmdir()
    os.utime(site, ns=(site.stat().st_atime_ns, site.stat().st_mtime_ns + 1_000_000))
    interpreter.clear_probe_cache()
    probe = interpreter.probe_python(str(python))
    assert probe.torch_version is None and "No module named 'torch'" in (probe.problem or "")
    assert probes(count) == 2
    interpreter.clear_probe_cache()  # a failure is not kept: the next command probes again
    assert interpreter.probe_python(str(python)).torch_version is None
    assert probes(count) == 3


def test_an_unreadable_cache_is_no_failure(fake: tuple[Path, Path, Path]) -> None:
    python, _, count = fake
    interpreter.probe_cache_file().parent.mkdir(parents=True)
    interpreter.probe_cache_file().write_text("{not json")
    assert interpreter.probe_python(str(python)).torch_version == "2.13.0"
    assert probes(count) == 1
