"""Adding, changing and removing a target, as ``hotkernel new`` and the MCP target tools do it: validate, edit
``hotkernel.yaml`` under the workspace lock, render ``targets/<name>/``; on any failure the manifest is put back
byte for byte. One call sequence and one set of messages; each caller names keys its own way (``--shape`` or
``shapes``) through ``label``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError
from hotkernel.manifest.edit import EDIT_WAIT_S, EditMode, edit_target, write_manifest
from hotkernel.manifest.load import ManifestProblem, check_target_fields, dotted
from hotkernel.manifest.resolve import correctness_bounds, resolved_target
from hotkernel.manifest.schema import schema_reference
from hotkernel.run.render import RenderResult, render_target
from hotkernel.workspace.lockfile import workspace_lock
from hotkernel.workspace.paths import MANIFEST_NAME, Workspace

# How a caller names a manifest key and the rest of its path: ("shapes", "[1]") -> "--shape" or "shapes[1]".
KeyLabel = Callable[[str, str], str]


def yaml_label(key: str, rest: str) -> str:
    return f"{key}{rest}"


class TargetEdit(BaseModel):
    """What an add/update/remove did."""

    target: str = Field(description="target name")
    manifest: str = Field(description="path of the manifest edited")
    created_manifest: bool = Field(description="the manifest did not exist before")
    replaced: bool = Field(description="the target existed before the edit")
    resolved: dict[str, Any] | None = Field(description="the resolved spec after the edit (None: removed)")
    correctness: dict[str, float] | None = Field(
        description="the bounds the contract checks outputs against: atol, rtol, rel_l2_max, min_corr"
    )
    render: RenderResult | None = Field(description="files written and kept by rendering (None: removed)")


def _problem_text(problem: ManifestProblem, label: KeyLabel) -> str:
    """``--shape[1]: msg`` / ``shapes[1]: msg`` from a problem at ``targets.NAME.KEY...``."""
    loc = problem.loc
    if len(loc) > 2:
        rest = dotted(("_", *loc[3:]))[1:]
        return f"{label(str(loc[2]), rest)}: {problem.message}"
    return problem.message


def _as_edit_error(message: str, name: str, label: KeyLabel) -> str:
    """A line-numbered error about the entry being edited (whose lines were never written): name the key."""
    place = rf"^\S*{re.escape(MANIFEST_NAME)}:\d+:\s*targets\.{re.escape(name)}\.([A-Za-z_]+)(\S*):\s*"
    match = re.match(place, message)
    if not match:
        return message
    return f"{label(match.group(1), match.group(2))}: {message[match.end():]} ({MANIFEST_NAME} left as it was)"


def change_target(
    ws: Workspace,
    name: str,
    fields: dict[str, Any] | None = None,
    *,
    mode: EditMode = "add",
    label: KeyLabel = yaml_label,
    command: str = "hotkernel new",
) -> TargetEdit:
    """Validate ``fields`` (manifest keys), edit the manifest (``add``/``replace``/``update``/``remove``) and
    render the target, all under the workspace lock; the manifest is restored when any step fails."""
    fields = dict(fields or {})
    if mode in ("add", "replace"):
        try:
            check_target_fields(name, fields, ws.root)
        except ManifestProblem as problem:
            raise HotkernelError(_problem_text(problem, label)) from None
    with workspace_lock(ws, wait_s=EDIT_WAIT_S, command=command):
        before = ws.manifest.read_text(encoding="utf-8") if ws.manifest.is_file() else None
        try:
            outcome = edit_target(ws.manifest, name, fields, mode=mode, schema_ref=schema_reference(ws.root),
                                  command=command)
            if mode == "remove":
                resolved = bounds = rendered = None
            else:
                resolved = resolved_target(outcome.manifest, name)
                bounds = correctness_bounds(resolved)
                rendered = render_target(ws, name, resolved)
        except BaseException as err:
            if before is None:
                ws.manifest.unlink(missing_ok=True)
            elif not ws.manifest.is_file() or ws.manifest.read_text(encoding="utf-8") != before:
                write_manifest(ws.manifest, before)
            if isinstance(err, HotkernelError):
                raise HotkernelError(_as_edit_error(str(err), name, label)) from None
            raise
    return TargetEdit(
        target=name,
        manifest=str(ws.manifest),
        created_manifest=outcome.created,
        replaced=outcome.replaced,
        resolved=resolved,
        correctness=bounds,
        render=rendered,
    )


def describe_bounds(edit: TargetEdit) -> str:
    """One line: the tolerances the contract will apply, and where they came from."""
    if edit.resolved is None or edit.correctness is None:
        return ""
    bounds = edit.correctness
    dtype = edit.resolved["dtype"]
    return (
        f"correctness ({dtype}): |out - ref| <= {bounds['atol']:g} + {bounds['rtol']:g} * |ref| elementwise, "
        f"relative L2 error <= {bounds['rel_l2_max']:g}, correlation with the reference >= {bounds['min_corr']:g} "
        "(set atol/rtol in hotkernel.yaml to change the first two)"
    )
