"""The one atomic write: whole files only, never clobbering when asked not to, modes kept."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

import hotkernel._util.fs as fs
from hotkernel._util.fs import atomic_write_text, sha256_by_stat, sha256_file, sha256_text


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


def _later_clock(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The cache's clock 10 s ahead (every file looks old enough to keep) and a list of the files it reads."""
    real_now, real_hash = time.time_ns, fs.sha256_file
    read: list[Path] = []
    monkeypatch.setattr(fs.time, "time_ns", lambda: real_now() + 10_000_000_000)
    monkeypatch.setattr(fs, "sha256_file", lambda path: read.append(path) or real_hash(path))
    return read


def test_sha256_by_stat_reads_a_file_once_while_its_stat_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kernel.py"
    path.write_text("a = 1\n")
    read = _later_clock(monkeypatch)
    assert sha256_by_stat(path) == sha256_by_stat(str(path)) == sha256_file(path)
    assert read == [path]
    assert sha256_by_stat(tmp_path / "gone.py") is None


def test_sha256_by_stat_sees_a_same_size_edit_with_its_mtime_forged_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "baseline.py"
    path.write_text("a = 1\n")
    _later_clock(monkeypatch)
    first = sha256_by_stat(path)
    before = path.stat()
    time.sleep(0.05)  # past the filesystem's timestamp tick, so the edit's ctime differs from the write's
    path.write_text("a = 2\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert sha256_by_stat(path) == sha256_file(path) != first


def test_sha256_by_stat_keeps_no_hash_of_a_file_changed_just_now(tmp_path: Path) -> None:
    """Git's racily clean rule: an edit within the same timestamp tick as the hashed write is still seen."""
    path = tmp_path / "candidate.py"
    path.write_text("a = 1\n")
    before = path.stat()
    first = sha256_by_stat(path)
    path.write_text("a = 2\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert sha256_by_stat(path) == sha256_file(path) != first
