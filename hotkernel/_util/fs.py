"""The one atomic write and the sha256 helpers every floor uses."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
import time
from pathlib import Path


def atomic_write_text(path: Path, text: str, *, overwrite: bool = True) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one, never a partial file.

    A dot-named temp file in the same directory, fsync, then ``os.replace`` (``overwrite=True``) or a hard link
    to the final name, which fails with FileExistsError instead of clobbering (``overwrite=False``); the
    directory is fsynced after; the temp file never survives, an error included. The file keeps the mode of
    the one it replaces; a new file gets 0666 less the umask, as ``open()`` would give it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        os.fchmod(fd, _mode_for(path))
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # atomic and never clobbers: FileExistsError when taken
            except (AttributeError, NotImplementedError, PermissionError):  # filesystems without hard links
                if path.exists():
                    raise FileExistsError(path) from None
                os.replace(tmp, path)
        fsync_dir(path.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return path


def _mode_for(path: Path) -> int:
    """The permission bits ``path`` has now, else what a plain ``open(path, "w")`` would create."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def fsync_dir(directory: Path) -> None:
    """Make a rename or link in ``directory`` durable (best effort: some filesystems refuse)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str | None:
    """sha256 of a file's bytes, None when it does not exist or cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


_HASH_BY_STAT: dict[str, tuple[tuple[int, int, int, int], str]] = {}  # path -> (its stat key, sha256)
RACY_NS = 2_000_000_000  # a file changed this recently (ns) is hashed every time: its next change may share a tick


def sha256_by_stat(path: str | os.PathLike[str]) -> str | None:
    """sha256 of a file's bytes, reused while its stat is unchanged (DVC's hash cache); None when it cannot be
    read. The key is the inode, size, mtime and ctime: a write, a file renamed over it or a forged mtime
    (``os.utime``) each set the ctime to the time of the change, which no unprivileged call can set back. A file
    whose ctime is under ``RACY_NS`` old is not kept (git's "racily clean" rule): the filesystem's clock ticks
    coarsely, and a change within the same tick would keep the ctime. So a changed file is always hashed again,
    and a run's integrity check may rely on it (``run/runner.py``)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    name = os.fspath(path)
    kept = _HASH_BY_STAT.get(name)
    if kept is not None and kept[0] == key:
        return kept[1]
    digest = sha256_file(Path(path))
    if digest is not None and time.time_ns() - st.st_ctime_ns >= RACY_NS:
        _HASH_BY_STAT[name] = (key, digest)
    return digest
