"""Which python runs a workspace's targets: an explicit one, else ``find_python`` with the manifest's setting."""

from __future__ import annotations

from hotkernel.manifest.load import load_manifest
from hotkernel.workspace.interpreter import find_python
from hotkernel.workspace.paths import Workspace


def user_python(ws: Workspace | None, python: str | None = None, *, probe: bool = True) -> str:
    """``python`` if given; else ``HOTKERNEL_PYTHON``, the manifest's ``defaults.python``, then the first
    ``python``/``python3`` on PATH that imports torch (``find_python``, which raises with the fix).
    ``probe=False``: an explicit interpreter is not test-run (the caller's judge reports a missing torch)."""
    if python:
        return python
    manifest_python = None
    if ws is not None and ws.manifest.is_file():
        manifest_python = load_manifest(ws.manifest).python
    root = ws.root if ws is not None else None
    return str(find_python(manifest_python, root=root, probe_explicit=probe).path)
