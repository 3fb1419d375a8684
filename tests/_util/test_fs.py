"""The one atomic write: whole files only, never clobbering when asked not to, modes kept."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hotkernel._util.fs import atomic_write_text, sha256_file, sha256_text


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_new_file_gets_the_umask_mode_and_a_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        fresh = atomic_write_text(tmp_path / "a.json", "{}\n")
        assert _mode(fresh) == 0o644 and fresh.read_text() == "{}\n"
        fresh.chmod(0o640)
        atomic_write_text(fresh, "[]\n")
        assert _mode(fresh) == 0o640 and fresh.read_text() == "[]\n"
    finally:
        os.umask(umask)


def test_no_overwrite_refuses_and_leaves_no_temp_file(tmp_path: Path) -> None:
    target = atomic_write_text(tmp_path / "r.json", "first\n", overwrite=False)
    with pytest.raises(FileExistsError):
        atomic_write_text(target, "second\n", overwrite=False)
    assert target.read_text() == "first\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_sha256_helpers(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_text("abc")
    assert (
        sha256_file(path) == sha256_text("abc") == ("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    )
    assert sha256_file(tmp_path / "missing") is None
