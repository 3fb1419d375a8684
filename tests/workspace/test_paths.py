"""Path guards: every read and write stays inside the workspace; oversized paths never reach the file system."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.workspace.paths import MAX_NAME, MAX_PATH, safe_path


def test_escapes_are_refused_and_the_message_is_short(tmp_path: Path) -> None:
    with pytest.raises(HotkernelError, match="outside the workspace"):
        safe_path(tmp_path, "../etc/passwd", what="script")
    long = "a/" * (MAX_PATH // 2 + 10)
    with pytest.raises(HotkernelError, match="longer than") as err:
        safe_path(tmp_path, long, what="script")
    assert len(str(err.value)) < 400
    with pytest.raises(HotkernelError, match="has a name of") as err:
        safe_path(tmp_path, "x" * (MAX_NAME + 1), what="script")  # File name too long, before the OS says it
    assert len(str(err.value)) < 400
    with pytest.raises(HotkernelError, match="NUL byte"):
        safe_path(tmp_path, "a\x00b", what="script")


def test_a_path_inside_resolves(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text("")
    assert safe_path(tmp_path, "k.py") == (tmp_path / "k.py").resolve()
