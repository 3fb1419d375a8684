"""Where a workspace's files live, and the guards that keep every read and write inside it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from hotkernel.errors import HotkernelError, quote

MANIFEST_NAME = "hotkernel.yaml"
MAX_PATH = 4096  # characters of a path parameter: PATH_MAX on Linux, checked before any file system call
MAX_NAME = 255  # characters of one path component: NAME_MAX on Linux
# Match with ``fullmatch``: ``$`` alone also matches before a trailing newline ("sm\n"). The pattern keeps its
# anchors for JSON schemas (where ``$`` is the end of the text).
TARGET_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


@dataclass(frozen=True)
class Workspace:
    """A directory holding ``hotkernel.yaml``; every other path is derived from ``root``."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_NAME

    @property
    def targets_dir(self) -> Path:
        return self.root / "targets"

    @property
    def results_dir(self) -> Path:
        return self.root / "results"

    @property
    def lock_file(self) -> Path:
        """The reconciler's state (DVC's dvc.lock): fingerprints and the record each produced."""
        return self.root / "hotkernel.lock"

    @property
    def leaderboard(self) -> Path:
        return self.root / "LEADERBOARD.md"

    @property
    def state_dir(self) -> Path:
        """Machine-local state: calibration per GPU UUID, the workspace mutex, scratch run dirs."""
        return self.root / ".hotkernel"

    @property
    def contract_file(self) -> Path:
        """The vendored contract module that baseline and candidate scripts import."""
        return self.targets_dir / "hk_contract.py"

    def target_dir(self, name: str) -> Path:
        return self.targets_dir / validate_target_name(name)

    def inside(self, user_path: str | os.PathLike[str], *, what: str = "path") -> Path:
        """Resolve ``user_path`` (relative to root) and refuse anything that escapes the workspace."""
        return safe_path(self.root, user_path, what=what)


def validate_target_name(name: str) -> str:
    """A target name is an identifier: letters, digits, underscore; no ``/``, ``..`` or spaces."""
    if not isinstance(name, str) or not TARGET_NAME_RE.fullmatch(name):
        raise HotkernelError(
            f"target name {name!r:.200} is not allowed: use a Python identifier such as 'rmsnorm' or "
            "'decode_attention' (letters, digits, '_'; at most 64 characters)"
        )
    return name


def safe_path(root: Path, user_path: str | os.PathLike[str], *, what: str = "path") -> Path:
    """Return ``root / user_path`` resolved, or raise when it (or a symlink on the way) leaves ``root``."""
    raw = os.fspath(user_path)
    check_path_length(raw, what)
    if "\x00" in raw:
        raise HotkernelError(f"{what} {quote(raw)} contains a NUL byte")
    root_resolved = root.resolve()
    candidate = Path(raw)
    if not candidate.is_absolute():
        candidate = root_resolved / candidate
    resolved = candidate.resolve()
    if resolved != root_resolved and root_resolved not in resolved.parents:
        raise HotkernelError(
            f"{what} {quote(raw)} is outside the workspace {root_resolved}: give a path inside it "
            "(no '..', no absolute path elsewhere, no symlink that leads out)"
        )
    return resolved


def check_path_length(user_path: str, param: str) -> None:
    """A path longer than the OS allows is an error naming the parameter, before the file system sees it."""
    if len(user_path) > MAX_PATH:
        raise HotkernelError(
            f"{param}: path of {len(user_path):,} characters is longer than {MAX_PATH}: give a real file path"
        )
    longest = max(user_path.split("/"), key=len)
    if len(longest) > MAX_NAME:
        raise HotkernelError(
            f"{param}: path {quote(user_path, 80)} has a name of {len(longest):,} characters (the limit is "
            f"{MAX_NAME}): give a real file path"
        )


def find_workspace(start: str | os.PathLike[str] | None = None) -> Workspace:
    """The nearest directory at or above ``start`` (default: cwd, or ``HOTKERNEL_WORKSPACE``) with a manifest."""
    env = os.environ.get("HOTKERNEL_WORKSPACE")
    here = Path(start or env or os.getcwd()).resolve()
    for directory in (here, *here.parents):
        if (directory / MANIFEST_NAME).is_file():
            return Workspace(directory)
    raise HotkernelError(
        f"no {MANIFEST_NAME} found in {here} or any parent: run `hotkernel new NAME --from FILE.py:FUNC ...` "
        "to start a workspace here, or cd into one"
    )
