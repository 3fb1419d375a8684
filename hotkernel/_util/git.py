"""The workspace's git facts, for provenance and the default author."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 10.0


def git_output(args: list[str], *, root: Path) -> str | None:
    """Stripped stdout of ``git -C root ARGS``, None when git is missing, fails or times out."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state(root: Path) -> tuple[str | None, bool | None]:
    """(HEAD commit, dirty?) of the workspace's git repository, (None, None) outside one."""
    commit = git_output(["rev-parse", "HEAD"], root=root)
    if commit is None:  # a copy of the workspace without .git (e.g. a GPU machine): the caller may say
        pinned = os.environ.get("HOTKERNEL_GIT_COMMIT", "").strip()
        return (pinned, None) if pinned else (None, None)
    status = git_output(["status", "--porcelain", "--untracked-files=no"], root=root)
    return commit, bool(status)


def git_user_name(root: Path) -> str | None:
    return git_output(["config", "user.name"], root=root)
