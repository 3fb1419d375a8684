"""run_command: argument lists, own process group, timeout/cancel kill the whole group, output in files."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from hotkernel._util.procs import find_executable, run_command
from hotkernel.errors import HotkernelError


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); treat it as gone
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


SPAWN_GRANDCHILD = (
    "import subprocess, sys, time\n"
    "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print(child.pid, flush=True)\n"
    "time.sleep(60)\n"
)


def test_output_goes_to_files_and_args_are_not_shell_parsed(tmp_path):
    result = run_command(
        [sys.executable, "-c", "import sys; print(sys.argv[1:])", "a b", "$HOME;ls"],
        timeout_s=30,
        out_dir=tmp_path,
        name="echo",
    )
    assert result.ok
    assert result.stdout().strip() == "['a b', '$HOME;ls']"
    assert result.stdout_path == tmp_path / "echo.stdout"


def test_timeout_kills_the_whole_process_group(tmp_path):
    result = run_command([sys.executable, "-c", SPAWN_GRANDCHILD], timeout_s=2, out_dir=tmp_path)
    assert result.timed_out and not result.ok
    grandchild = int(result.stdout().split()[0])
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_cancel_event_kills_the_group(tmp_path):
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    result = run_command([sys.executable, "-c", SPAWN_GRANDCHILD], timeout_s=60, out_dir=tmp_path, cancel=cancel)
    assert result.cancelled and not result.timed_out
    grandchild = int(result.stdout().split()[0])
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_missing_program_is_one_line_error(tmp_path):
    with pytest.raises(HotkernelError, match="not found"):
        run_command(["/nonexistent/tool-xyz"], timeout_s=5, out_dir=tmp_path)


def test_find_executable_looks_in_extra_dirs(tmp_path, monkeypatch):
    tool = tmp_path / "bin" / "mytool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "/nonexistent")
    assert find_executable("mytool") is None
    assert find_executable("mytool", extra_dirs=[tmp_path / "bin"]) == tool
    monkeypatch.setenv("MY_HOME", str(tmp_path))
    assert find_executable("mytool", env_homes=["MY_HOME"]) == tool


def test_timeout_kills_a_grandchild_that_left_the_group(tmp_path) -> None:
    import os
    import sys
    import time

    from hotkernel._util.procs import run_command

    pid_file = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    result = run_command([sys.executable, "-c", script], timeout_s=3, out_dir=tmp_path, name="spawn")
    assert result.timed_out
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{grandchild}/stat") as handle:
                if handle.read().split(") ", 1)[1].startswith("Z"):
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        os.kill(grandchild, 9)
        raise AssertionError("the grandchild in its own session outlived the timeout")
