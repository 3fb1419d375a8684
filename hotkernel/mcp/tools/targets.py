"""The target tools: list, show, add, update, remove and scaffold the targets of hotkernel.yaml."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError
from hotkernel.mcp.base import (
    TargetName,
    inside,
    known_target,
    load_manifest,
    rel,
    render,
    start_dir,
    tool,
    workspace_of,
)
from hotkernel.store.models import HistoryEntry
from hotkernel.workspace.paths import TARGET_NAME_RE, Workspace, find_workspace


class TargetSummary(BaseModel):
    """One target of the manifest."""

    name: str = Field(description="target name")
    source: str = Field(description="the manifest's 'from': module:function or ./path.py:function")
    shapes: list[str] = Field(description="shapes as written; the first is the headline")
    dtype: str = Field(description="bf16 | fp16 | fp32 | fp8_e4m3 | fp8_e5m2")
    device: str = Field(description="'cuda' or 'cpu'")
    rendered: bool = Field(description="True when targets/<name>/baseline.py exists")
    best_speedup: float | None = Field(default=None, description="best counted speedup recorded, if any")


class TargetList(BaseModel):
    """list_targets: the targets of hotkernel.yaml."""

    workspace: str = Field(description="absolute path of the workspace root")
    targets: list[TargetSummary] = Field(description="in manifest order")


class TargetDetail(BaseModel):
    """show_target: the spec, the files and the latest verdicts of one target."""

    name: str = Field(description="target name")
    spec: dict[str, Any] = Field(
        description="the resolved spec: every manifest field with defaults filled in"
    )
    files: dict[str, str | None] = Field(
        description="workspace-relative paths of baseline.py, candidate.py and the contract (None when "
        "missing)"
    )
    history: list[HistoryEntry] = Field(
        description="the latest records of this target, newest first (at most 10)"
    )


class EditResult(BaseModel):
    """add_target / update_target / remove_target / new_target: what changed on disk."""

    name: str = Field(description="target name")
    manifest: str = Field(description="workspace-relative path of the manifest edited")
    written: list[str] = Field(
        default_factory=list, description="workspace-relative files written by rendering"
    )
    kept: list[str] = Field(
        default_factory=list, description="files left as they were (an edited candidate is never overwritten)"
    )
    spec: dict[str, Any] | None = Field(
        default=None, description="the resolved spec after the edit (None: removed)"
    )


def _target_files(ws: Workspace, name: str) -> dict[str, str | None]:
    files = {
        "baseline": ws.target_dir(name) / "baseline.py",
        "candidate": ws.target_dir(name) / "candidate.py",
        "contract": ws.contract_file,
    }
    return {key: (rel(ws, path) if path.is_file() else None) for key, path in files.items()}


def _best_speedup(ws: Workspace, name: str) -> float | None:
    from hotkernel.store.record import history as target_history

    speedups = [
        e.speedup
        for e in target_history(ws, name)
        if e.counted and e.verdict == "faster" and e.speedup is not None
    ]
    return max(speedups) if speedups else None


@tool(read_only=True, destructive=False, idempotent=True)
def list_targets(ctx: Context) -> TargetList:
    """List the targets in hotkernel.yaml with their shapes, dtype, device and best recorded speedup.

    Reads only. Use show_target for one target's full spec, files and records; plan for what is out of date.
    """
    from hotkernel.manifest import resolved_target

    ws = workspace_of(ctx)
    manifest = load_manifest(ws)
    summaries = []
    for name in manifest.targets:
        spec = resolved_target(manifest, name)
        summaries.append(
            TargetSummary(
                name=name,
                source=str(spec.get("from")),
                shapes=[str(s) for s in spec.get("shapes") or []],
                dtype=str(spec.get("dtype")),
                device=str(spec.get("device")),
                rendered=(ws.target_dir(name) / "baseline.py").is_file(),
                best_speedup=_best_speedup(ws, name),
            )
        )
    return TargetList(workspace=str(ws.root), targets=summaries)


@tool(read_only=True, destructive=False, idempotent=True)
def show_target(ctx: Context, target: TargetName) -> TargetDetail:
    """Show one target: its resolved spec (every default filled in), its files and its latest records.

    Reads only. Use list_targets for all targets at a glance, history for every record of a target.
    """
    from hotkernel.manifest import resolved_target
    from hotkernel.store.record import history as target_history

    ws = workspace_of(ctx)
    manifest = known_target(ws, target)
    entries = sorted(target_history(ws, target), key=lambda e: e.created_at, reverse=True)[:10]
    return TargetDetail(
        name=target,
        spec=resolved_target(manifest, target),
        files=_target_files(ws, target),
        history=entries,
    )


Dtype = Literal["bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2"]
MANIFEST_KEYS = {
    "source": "from",
    "shapes": "shapes",
    "input": "input",
    "extra": "extra",
    "dtype": "dtype",
    "device": "device",
    "kwargs": "kwargs",
    "reference": "reference",
    "flops": "flops",
    "bytes_moved": "bytes",
    "atol": "atol",
    "rtol": "rtol",
}


def _target_fields(named: dict[str, Any], more: dict[str, Any] | None) -> dict[str, Any]:
    """The manifest entry keys (as written in hotkernel.yaml) from the tool's parameters; None = not given."""
    fields: dict[str, Any] = dict(more or {})
    for param, key in MANIFEST_KEYS.items():
        if named.get(param) is not None:
            fields[key] = named[param]
    return fields


def _check_sources(ws: Workspace, fields: dict[str, Any]) -> None:
    """A './path.py:function' reference (from, reference, derive) must point inside the workspace."""
    for key in ("from", "reference", "derive"):
        value = fields.get(key)
        if not isinstance(value, str):
            continue
        path = value.rsplit(":", 1)[0]
        if "/" in path or path.endswith(".py"):
            inside(ws, path, "source" if key == "from" else key)


SourceParam = Annotated[
    str,
    Field(
        description="the function to speed up (the manifest's 'from'): 'module:function' importable in the "
        "user's python, or './path.py:function' relative to the workspace root (must stay inside it)",
        min_length=3,
        pattern=r"^[^:]+:[A-Za-z_][A-Za-z0-9_.]*$",
    ),
]
Shape = str | dict[str, str]
ShapesParam = Annotated[
    list[Shape],
    Field(
        description="one or more shapes; the first is the headline. A string like '4096x8192' is the first "
        "input's shape; a mapping like {'x': '4096x8192', 'w': '8192'} gives input name -> shape",
        min_length=1,
        max_length=32,
    ),
]
OptShapes = Annotated[
    list[Shape] | None,
    Field(
        description="new shapes (see add_target); the first is the headline; default None = unchanged",
        min_length=1,
        max_length=32,
    ),
]
OptInput = Annotated[
    str | None,
    Field(description="name of the first input; default None = 'x'", pattern=TARGET_NAME_RE.pattern),
]
OptExtraInputs = Annotated[
    list[str] | None,
    Field(
        description="further random inputs after the first, in call order, as 'name:shape' "
        "(e.g. ['w:8192']); default None = none",
        max_length=32,
    ),
]
OptDtype = Annotated[
    Dtype | None, Field(description="element type of every input; default None = the manifest default (bf16)")
]
OptDevice = Annotated[
    Literal["cuda", "cpu"] | None,
    Field(description="where it runs: 'cuda' or 'cpu'; default None = the manifest default (cuda)"),
]
OptKwargs = Annotated[
    dict[str, Any] | None,
    Field(
        description="constants passed as keyword arguments to both sides, e.g. {'eps': 1e-6}; default None"
    ),
]
OptReference = Annotated[
    str | None,
    Field(
        description="function giving the right answer ('module:function' or './path.py:function'), run in "
        "fp32 by the judge; default None = the 'from' function on upcast inputs"
    ),
]
OptFlops = Annotated[
    float | None,
    Field(description="FLOPs of one call, >= 0 (for the roofline); default None = unknown", ge=0),
]
OptBytes = Annotated[
    int | None,
    Field(description="bytes one call moves, >= 0 (manifest 'bytes'); default None = inputs + outputs", ge=0),
]
OptTol = Annotated[
    float | None,
    Field(description="tolerance of the correctness check, 0 to 1; default None = by dtype", ge=0, le=1),
]
OptFields = Annotated[
    dict[str, Any] | None,
    Field(
        description="any other hotkernel.yaml target keys (rotate, min_bytes, derive, inputs, seed, iters), "
        "validated against the manifest schema; a null value removes the key (update_target); default None"
    ),
]


@tool(read_only=False, destructive=False, idempotent=False)
def add_target(
    ctx: Context,
    name: TargetName,
    source: SourceParam,
    shapes: ShapesParam,
    input: OptInput = None,
    extra: OptExtraInputs = None,
    dtype: OptDtype = None,
    device: OptDevice = None,
    kwargs: OptKwargs = None,
    reference: OptReference = None,
    flops: OptFlops = None,
    bytes_moved: OptBytes = None,
    atol: OptTol = None,
    rtol: OptTol = None,
    fields: OptFields = None,
) -> EditResult:
    """Add a target to the existing hotkernel.yaml (a minimal diff: comments and other entries stay), then
    render targets/<name>/baseline.py and candidate.py (the file you edit).

    Fails when the name exists (use update_target) or there is no hotkernel.yaml yet (use new_target). On any
    failure the manifest is left as it was.
    """
    from hotkernel.manifest import add_target as manifest_add

    ws = workspace_of(ctx)
    entry = _target_fields(locals(), fields)
    _check_sources(ws, entry)
    if name in load_manifest(ws).targets:
        raise ToolError(f"name {name!r} is already a target: use update_target to change it")
    return _edit_then_render(ws, name, lambda: manifest_add(ws.manifest, name, entry))


@tool(read_only=False, destructive=False, idempotent=True)
def update_target(
    ctx: Context,
    name: TargetName,
    source: Annotated[
        str | None,
        Field(description="new 'from' (module:function or ./path.py:function); default None = unchanged"),
    ] = None,
    shapes: OptShapes = None,
    input: OptInput = None,
    extra: OptExtraInputs = None,
    dtype: OptDtype = None,
    device: OptDevice = None,
    kwargs: OptKwargs = None,
    reference: OptReference = None,
    flops: OptFlops = None,
    bytes_moved: OptBytes = None,
    atol: OptTol = None,
    rtol: OptTol = None,
    fields: OptFields = None,
) -> EditResult:
    """Change keys of an existing target in hotkernel.yaml (minimal diff), then re-render its baseline.

    Only the keys given change; the candidate you edited is kept. Records made before the change become out of
    date (plan shows it; sync re-runs them). Use add_target for a new target, remove_target to drop one.
    """
    from hotkernel.manifest import update_target as manifest_update

    ws = workspace_of(ctx)
    known_target(ws, name, "name")
    entry = _target_fields(locals(), fields)
    if not entry:
        raise ToolError("give at least one key to change (source, shapes, dtype, ..., or fields)")
    _check_sources(ws, entry)
    return _edit_then_render(ws, name, lambda: manifest_update(ws.manifest, name, entry))


@tool(read_only=False, destructive=True, idempotent=True)
def remove_target(ctx: Context, name: TargetName) -> EditResult:
    """Remove a target's entry from hotkernel.yaml (minimal diff; comments above it stay).

    Its records under results/ and its files under targets/<name>/ are kept (history stays readable). Use
    invalidate_record to discount one bad record instead, update_target to change the target.
    """
    from hotkernel.manifest import remove_target as manifest_remove

    ws = workspace_of(ctx)
    known_target(ws, name, "name")
    manifest_remove(ws.manifest, name)
    return EditResult(name=name, manifest=rel(ws, ws.manifest), spec=None)


def _edit_then_render(ws: Workspace, name: str, edit: Callable[[], Any]) -> EditResult:
    """Apply a manifest edit and render; on any failure restore the manifest byte for byte."""
    before = ws.manifest.read_bytes() if ws.manifest.is_file() else None
    try:
        edit()
        written, kept, spec = render(ws, name)
    except BaseException as err:
        if before is None:
            ws.manifest.unlink(missing_ok=True)
        else:
            ws.manifest.write_bytes(before)
        if isinstance(err, HotkernelError):
            raise ToolError(_as_parameter_error(str(err))) from None
        raise
    return EditResult(name=name, manifest=rel(ws, ws.manifest), written=written, kept=kept, spec=spec)


_PARAMETER_OF_KEY = {"from": "source", "bytes": "bytes_moved"}


def _as_parameter_error(message: str) -> str:
    """A manifest error about an edit the tool rolled back: drop the ``hotkernel.yaml:LINE:`` prefix (that line
    is gone) and name the tool parameter (``targets.t.from`` -> ``source``)."""
    text = re.sub(r"^\S*hotkernel\.yaml:\d+:\s*", "", message)
    match = re.match(r"targets\.[A-Za-z_][A-Za-z0-9_]*\.([A-Za-z_]+)(\S*):\s*", text)
    if match:
        key = match.group(1)
        text = f"{_PARAMETER_OF_KEY.get(key, key)}{match.group(2)}: {text[match.end():]}"
    return text + " (hotkernel.yaml left as it was)"


@tool(read_only=False, destructive=False, idempotent=False)
def new_target(
    ctx: Context,
    name: TargetName,
    source: SourceParam,
    shapes: ShapesParam,
    input: OptInput = None,
    extra: OptExtraInputs = None,
    dtype: OptDtype = None,
    device: OptDevice = None,
    kwargs: OptKwargs = None,
    reference: OptReference = None,
    flops: OptFlops = None,
    bytes_moved: OptBytes = None,
    atol: OptTol = None,
    rtol: OptTol = None,
    fields: OptFields = None,
) -> EditResult:
    """Scaffold a target to speed up: create hotkernel.yaml in the server's directory when there is none, add
    the target, and render targets/hk_contract.py and targets/<name>/{baseline,candidate}.py.

    The first step of a speedrun on a new function; refuses a name that exists (use update_target). In a
    workspace that already has a manifest, add_target does the same.
    """
    from hotkernel.manifest import add_target as manifest_add

    try:
        ws = find_workspace(start_dir(ctx))
    except HotkernelError:
        ws = Workspace(start_dir(ctx))
    entry = _target_fields(locals(), fields)
    _check_sources(ws, entry)
    if ws.manifest.is_file() and name in load_manifest(ws).targets:
        raise ToolError(f"name {name!r} is already a target: use update_target to change it")
    return _edit_then_render(ws, name, lambda: manifest_add(ws.manifest, name, entry))
