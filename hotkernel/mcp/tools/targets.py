"""The target tools: list, show, add, update, remove and scaffold the targets of hotkernel.yaml."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hotkernel.errors import HotkernelError
from hotkernel.manifest import resolve_target
from hotkernel.manifest.edit import EditMode
from hotkernel.manifest.keys import fields_from_mcp, mcp_annotation, mcp_parameter_of
from hotkernel.manifest.model import DTYPES, MAX_ITEMS, MAX_STRING, target_keys
from hotkernel.mcp.base import (
    TargetName,
    known_target,
    load_manifest,
    rel,
    start_dir,
    tool,
    workspace_of,
)
from hotkernel.run.signature import inputs_note
from hotkernel.run.targets import change_target
from hotkernel.store.leaderboard import best_entries, board_rows
from hotkernel.store.models import HistoryEntry
from hotkernel.store.record import history as target_history
from hotkernel.suites.importer import SuiteImport
from hotkernel.suites.importer import import_suite as suite_import
from hotkernel.workspace.paths import Workspace, find_workspace


class TargetSummary(BaseModel):
    """One target of the manifest."""

    name: str = Field(description="target name")
    source: str = Field(description="the manifest's 'from': module:function or ./path.py:function")
    shapes: list[str] = Field(description="shapes as written; the first is the headline")
    dtype: str = Field(description="bf16 | fp16 | fp32 | fp8_e4m3 | fp8_e5m2")
    device: str = Field(description="'cuda' or 'cpu'")
    rendered: bool = Field(description="True when targets/<name>/baseline.py exists")
    best_speedup: float | None = Field(
        default=None,
        description="the board's headline for its crowned candidate, if any: the median speedup of the counted "
        "runs of its files (what reruns give; the highest over devices), as LEADERBOARD.md shows it",
    )


class TargetList(BaseModel):
    """list_targets: the targets of hotkernel.yaml."""

    workspace: str = Field(description="absolute path of the workspace root")
    targets: list[TargetSummary] = Field(description="in manifest order")


PARAMETERS_HELP = (
    "kernel's parameters in call order as the rendered candidate states them: a tensor and its headline shape, a "
    "destination buffer, a value the problem file makes (a scalar or a structure), a KernelBench Model's state"
)


class TargetDetail(BaseModel):
    """show_target: the spec, the files and the latest verdicts of one target."""

    name: str = Field(description="target name")
    spec: dict[str, Any] = Field(description="the resolved spec: every manifest field with defaults filled in")
    files: dict[str, str | None] = Field(
        description="workspace-relative paths of baseline.py, candidate.py and the contract (None when missing)"
    )
    history: list[HistoryEntry] = Field(description="the latest records of this target, newest first (at most 10)")
    correctness: dict[str, Any] | None = Field(
        default=None,
        description="the bounds its outputs are judged at: atol, rtol, rel_l2_max, min_corr, and per_output (each "
        "output's four, in return order) where the target sets output_tolerances",
    )
    parameters: str = Field(default="", description=PARAMETERS_HELP)


class EditResult(BaseModel):
    """add_target / update_target / remove_target / new_target: what changed on disk."""

    name: str = Field(description="target name")
    manifest: str = Field(description="workspace-relative path of the manifest edited")
    written: list[str] = Field(default_factory=list, description="workspace-relative files written by rendering")
    kept: list[str] = Field(
        default_factory=list, description="files left as they were (an edited candidate is never overwritten)"
    )
    spec: dict[str, Any] | None = Field(default=None, description="the resolved spec after the edit (None: removed)")
    parameters: str | None = Field(default=None, description=PARAMETERS_HELP)


def _target_files(ws: Workspace, name: str) -> dict[str, str | None]:
    files = {
        "baseline": ws.target_dir(name) / "baseline.py",
        "candidate": ws.target_dir(name) / "candidate.py",
        "contract": ws.contract_file,
    }
    return {key: (rel(ws, path) if path.is_file() else None) for key, path in files.items()}


def _headlines(ws: Workspace) -> dict[str, float]:
    """Per target, the board's headline speedup (the highest over devices) of its crowned candidate."""
    found: dict[str, float] = {}
    for entry in best_entries(board_rows(ws)):
        value = entry.median if entry.median is not None else (entry.best.speedup if entry.best else None)
        if value is not None:
            found[entry.target] = max(value, found.get(entry.target, value))
    return found


@tool(read_only=True, destructive=False, idempotent=True)
def list_targets(ctx: Context) -> TargetList:
    """List the targets in hotkernel.yaml with their shapes, dtype, device and best recorded speedup.

    Reads only. Use show_target for one target's full spec, files and records; plan for what is out of date.
    """

    ws = workspace_of(ctx)
    manifest = load_manifest(ws)
    summaries = []
    headlines = _headlines(ws)
    for name in manifest.targets:
        target = resolve_target(manifest, name)
        summaries.append(
            TargetSummary(
                name=name,
                source=target.from_,
                shapes=list(target.shapes),
                dtype=target.dtype,
                device=target.device,
                rendered=(ws.target_dir(name) / "baseline.py").is_file(),
                best_speedup=headlines.get(name),
            )
        )
    return TargetList(workspace=str(ws.root), targets=summaries)


@tool(read_only=True, destructive=False, idempotent=True)
def show_target(ctx: Context, target: TargetName) -> TargetDetail:
    """Show one target: its resolved spec (every default filled in), its files and its latest records.

    Reads only. Use list_targets for all targets at a glance, history for every record of a target.
    """

    ws = workspace_of(ctx)
    manifest = known_target(ws, target)
    entries = sorted(target_history(ws, target), key=lambda e: e.created_at, reverse=True)[:10]
    resolved = resolve_target(manifest, target)
    return TargetDetail(
        name=target,
        spec=resolved.spec(),
        files=_target_files(ws, target),
        history=entries,
        correctness=resolved.bounds(),
        parameters=inputs_note(resolved),
    )


# ---- edits: one parameter per manifest key, generated from the key metadata (hotkernel.manifest.model) ---------

FieldsParam = Annotated[
    dict[Annotated[str, Field(max_length=64)], Any] | None,
    Field(
        description="manifest keys by their hotkernel.yaml names (e.g. {'min_bytes': 1024}), validated like the "
        "named parameters; a null value removes the key (update_target); default None",
        max_length=MAX_ITEMS,
    ),
]


def _parameter_label(key: str, rest: str) -> str:
    """A manifest key as the tool parameter that sets it (``from`` -> ``source``), with its index."""
    return f"{mcp_parameter_of(key)}{rest}"


def _key_parameters(*, required: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a tool the signature ``(ctx, name, <one parameter per target key>, fields)``; ``required``: the
    keys the manifest requires are required parameters (add/new), else every key is optional (update)."""

    def apply(fn: Callable[..., Any]) -> Callable[..., Any]:
        keyword = inspect.Parameter.KEYWORD_ONLY
        params = [
            inspect.Parameter("ctx", keyword, annotation=Context),
            inspect.Parameter("name", keyword, annotation=TargetName),
        ]
        keys = sorted(target_keys(), key=lambda key: not (required and key.required))  # required ones first
        for key in keys:
            needed = required and key.required
            annotation = mcp_annotation(key, required=needed)
            params.append(
                inspect.Parameter(key.key.mcp, keyword, annotation=annotation, **({} if needed else {"default": None}))
            )
        params.append(inspect.Parameter("fields", keyword, annotation=FieldsParam, default=None))
        fn.__signature__ = inspect.Signature(params, return_annotation=EditResult)  # type: ignore[attr-defined]
        fn.__annotations__ = {p.name: p.annotation for p in params} | {"return": EditResult}
        return fn

    return apply


def _entry(arguments: dict[str, Any]) -> dict[str, Any]:
    """The manifest keys given: the named parameters, then ``fields`` (whose nulls are kept: removals)."""
    more = arguments.get("fields") or {}
    return {**fields_from_mcp(arguments), **more}


def _change(ws: Workspace, name: str, fields: dict[str, Any], mode: EditMode, tool_name: str) -> EditResult:
    try:
        edit = change_target(ws, name, fields, mode=mode, label=_parameter_label, command=f"MCP {tool_name}")
    except HotkernelError as err:
        raise ToolError(str(err)) from None
    render = edit.render
    return EditResult(
        name=name,
        manifest=rel(ws, ws.manifest),
        written=list(render.written) if render else [],
        kept=list(render.kept) if render else [],
        spec=edit.resolved.spec() if edit.resolved else None,
        parameters=inputs_note(edit.resolved) if edit.resolved else None,
    )


@tool(read_only=False, destructive=False, idempotent=False)
@_key_parameters(required=True)
def add_target(**arguments: Any) -> EditResult:
    """Add a target to the existing hotkernel.yaml (a minimal diff: comments and other entries stay), then
    render targets/<name>/baseline.py and candidate.py (the file you edit).

    Fails when the name exists (use update_target) or there is no hotkernel.yaml yet (use new_target). On any
    failure the manifest is left as it was.
    """
    ws = workspace_of(arguments["ctx"])
    name = arguments["name"]
    if name in load_manifest(ws).targets:
        raise ToolError(f"name {name!r} is already a target: use update_target to change it")
    return _change(ws, name, _entry(arguments), "add", "add_target")


@tool(read_only=False, destructive=False, idempotent=True)
@_key_parameters(required=False)
def update_target(**arguments: Any) -> EditResult:
    """Change keys of an existing target in hotkernel.yaml (minimal diff), then re-render its baseline.

    Only the keys given change (fields: {key: null} removes one); the candidate you edited is kept. Records made
    before the change become out of date (plan shows it; sync re-runs them). Use add_target for a new target,
    remove_target to drop one.
    """
    ws = workspace_of(arguments["ctx"])
    name = arguments["name"]
    known_target(ws, name, "name")
    entry = _entry(arguments)
    if not entry:
        raise ToolError("give at least one key to change (source, shapes, dtype, ..., or fields)")
    return _change(ws, name, entry, "update", "update_target")


@tool(read_only=False, destructive=True, idempotent=True)
def remove_target(ctx: Context, name: TargetName) -> EditResult:
    """Remove a target's entry from hotkernel.yaml (minimal diff; comments above it stay).

    Its records under results/ and its files under targets/<name>/ are kept (history stays readable). Use
    invalidate_record to discount one bad record instead, update_target to change the target.
    """
    ws = workspace_of(ctx)
    known_target(ws, name, "name")
    return _change(ws, name, {}, "remove", "remove_target")


@tool(read_only=False, destructive=False, idempotent=False)
@_key_parameters(required=True)
def new_target(**arguments: Any) -> EditResult:
    """Scaffold a target to speed up: create hotkernel.yaml in the server's directory when there is none, add
    the target, and render targets/hk_contract.py and targets/<name>/{baseline,candidate}.py.

    The first step of a speedrun on a new function; refuses a name that exists (use update_target). In a
    workspace that already has a manifest, add_target does the same.
    """
    ctx, name = arguments["ctx"], arguments["name"]
    try:
        ws = find_workspace(start_dir(ctx))
    except HotkernelError:
        ws = Workspace(start_dir(ctx))
    if ws.manifest.is_file() and name in load_manifest(ws).targets:
        raise ToolError(f"name {name!r} is already a target: use update_target to change it")
    return _change(ws, name, _entry(arguments), "add", "new_target")


@tool(read_only=False, destructive=False, idempotent=False)
def import_suite(
    ctx: Context,
    suite: Annotated[Literal["kernelbench", "gpumode"], Field(description="kernelbench or gpumode")],
    directory: Annotated[
        str,
        Field(
            max_length=MAX_STRING,
            description="KernelBench: a level folder (or the "
            "folder holding level1/...); GPU MODE: a task folder (reference-kernels/problems/pmpp/"
            "vectoradd_py), a suite folder (problems/pmpp) or problems/ itself",
        ),
    ],
    level: Annotated[
        int | None,
        Field(ge=1, le=10, description="KernelBench level (default: the folder's name, level2 -> 2, else 1)"),
    ] = None,
    problems: Annotated[
        list[int] | None, Field(max_length=1000, description="KernelBench problem numbers, e.g. [19, 23]; default all")
    ] = None,
    dtype: Annotated[
        Literal[DTYPES] | None,
        Field(
            description="target dtype (KernelBench default fp32; GPU "  # type: ignore[valid-type]
            "MODE: the reference's output dtype)"
        ),
    ] = None,
    scale: Annotated[
        float | None,
        Field(
            gt=0,
            le=1,
            description="KernelBench: shrink the batch and every dimension constant above 64 by this factor, e.g. 0.25",
        ),
    ] = None,
    device: Annotated[
        Literal["cuda", "cpu"] | None, Field(description="cuda or cpu (default: defaults.device)")
    ] = None,
    cases: Annotated[
        Literal["benchmarks", "tests"],
        Field(
            description="GPU MODE: the shapes from task.yml's benchmarks (timed sizes) or tests (smaller "
            "correctness sizes, e.g. for a CPU)"
        ),
    ] = "benchmarks",
) -> SuiteImport:
    """Import a problem suite: one target per KernelBench problem file, or one per GPU MODE task (its benchmark
    shapes, its reference's tolerances), added to hotkernel.yaml (created when absent) and rendered.

    The files are copied into problems/ of the workspace and probed on the meta device or under FakeTensorMode
    (one real run, within a memory check, where the shapes are data dependent). Every problem that cannot become
    a target is listed under skipped with its exact reason (e.g. "needs 8 GPUs (world_size: 8 in task.yml)");
    each imported target lists its flags (a constant output that carries no signal, a random output).
    docs/suites.md has the conventions (the Model's state, output buffers, flags). For one function (or one
    problem file) use new_target or add_target instead; list_targets shows what was added.
    """
    try:
        ws = find_workspace(start_dir(ctx))
    except HotkernelError:
        ws = Workspace(start_dir(ctx))
    path = Path(directory).expanduser()
    path = path if path.is_absolute() else start_dir(ctx) / path
    try:
        return suite_import(
            ws,
            suite,
            path,
            level=level,
            problems=problems,
            dtype=dtype,
            scale=scale,
            device=device,
            cases=cases,
            command="import_suite",
        )
    except HotkernelError as err:
        raise ToolError(str(err)) from None
