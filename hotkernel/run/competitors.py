"""A target's competitors (``competitors:`` in hotkernel.yaml): generated ``targets/<name>/competitor_<slug>.py``.

A compile word (``compile``, ``compile-max-autotune``, ``compile-reduce-overhead``) renders ``torch.compile`` of
the baseline's ``from`` function in that mode; a function reference renders that function. The files are
generated: render rewrites them whenever they differ from what hotkernel.yaml says (never edit them).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from hotkernel._util.fs import atomic_write_text
from hotkernel.run.render import _context, _environment
from hotkernel.run.runner import sources_digest
from hotkernel.workspace.paths import Workspace

COMPETITOR_TEMPLATE = "competitor.py.j2"
COMPILE_MODES = {
    "compile": "default",
    "compile-max-autotune": "max-autotune",
    "compile-reduce-overhead": "reduce-overhead",
}
SLUG_MAX = 48


def competitor_slug(competitor: str) -> str:
    """The file-name part of a competitor: ``compile_max_autotune``, or the reference made an identifier
    (``./other.py:fn`` -> ``other_py_fn``; long ones end with a short hash so two never share a file)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", competitor).strip("_").lower() or "competitor"
    if len(slug) > SLUG_MAX:
        slug = slug[: SLUG_MAX - 9] + "_" + hashlib.sha256(competitor.encode()).hexdigest()[:8]
    return slug


def competitor_who(competitor: str) -> str:
    """Who a competitor's record names: ``torch.compile (max-autotune)``, or the function reference."""
    mode = COMPILE_MODES.get(competitor)
    return f"torch.compile ({mode})" if mode else competitor


def competitor_path(ws: Workspace, name: str, competitor: str) -> Path:
    """``targets/<name>/competitor_<slug>.py``."""
    return ws.target_dir(name) / f"competitor_{competitor_slug(competitor)}.py"


def expected_competitor(resolved: dict[str, Any], competitor: str) -> str:
    """The exact text of a competitor's script for this resolved target."""
    mode = COMPILE_MODES.get(competitor)
    script = f"targets/{resolved['name']}/competitor_{competitor_slug(competitor)}.py"
    what = (
        f"torch.compile of the baseline's function {resolved['from']} (mode {mode})"
        if mode
        else f"the function {competitor}"
    )
    return (
        _environment()
        .get_template(COMPETITOR_TEMPLATE)
        .render(
            **_context(resolved),
            competitor=competitor,
            script=script,
            what=what,
            mode=mode,
            mode_literal=json.dumps(mode),
            ref_literal=json.dumps(competitor),
            who_literal=json.dumps(competitor_who(competitor)),
        )
    )


def expected_competitor_sha256(resolved: dict[str, Any], competitor: str) -> str:
    return hashlib.sha256(expected_competitor(resolved, competitor).encode("utf-8")).hexdigest()


def competitor_sources_sha256(ws: Workspace, resolved: dict[str, Any], competitor: str) -> str:
    """Fingerprint of what a competitor runs besides its script: the target's source files and, for a
    function reference, the files of that function's folder."""
    parts = [sources_digest(ws, resolved)]
    if competitor not in COMPILE_MODES:
        parts.append(sources_digest(ws, {"from": competitor}))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def render_competitor(ws: Workspace, name: str, resolved: dict[str, Any], competitor: str) -> Path:
    """Write ``targets/<name>/competitor_<slug>.py`` when it is missing or differs; returns its path."""
    path = competitor_path(ws, name, competitor)
    text = expected_competitor(resolved, competitor)
    if not (path.is_file() and path.read_text(encoding="utf-8") == text):
        atomic_write_text(path, text)
    return path
