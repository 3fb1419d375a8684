"""What every tool module shares: the registration decorator, the server state, parameter types, helpers.

Tool modules (``hotkernel.mcp.tools.*``) declare their tools with ``@tool(...)``; ``hotkernel.mcp.app`` wraps
each one (errors become ``ToolError`` there, in one place) and adds it to the server. The server's state (the
directory it works on) comes through the lifespan context, never a global.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from hotkernel.errors import HotkernelError, quote
from hotkernel.workspace.paths import MANIFEST_NAME, TARGET_NAME_RE, Workspace, find_workspace, safe_path

DEFAULT_WAIT_S = 50.0
MAX_PATH = 4096  # characters of a workspace-relative path parameter (PATH_MAX on Linux)
MAX_TEXT = 300  # characters of a one-line free-text parameter
MAX_ARGS = 256  # items of an argument list
MAX_ARG = 4096  # characters of one argument

TOOLS: list[tuple[Callable[..., Any], ToolAnnotations]] = []


@dataclass(frozen=True)
class ServerState:
    """What the lifespan hands every tool call: the directory the server was started for."""

    root: Path


def tool(*, read_only: bool, destructive: bool, idempotent: bool, open_world: bool = False) -> Callable:
    """Declare a tool with truthful annotations; ``hotkernel.mcp.app`` registers it."""

    def declare(fn: Callable[..., Any]) -> Callable[..., Any]:
        hints = ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=destructive,
            idempotent_hint=idempotent,
            open_world_hint=open_world,
        )
        TOOLS.append((fn, hints))
        return fn

    return declare


# ---- shared parameter types --------------------------------------------------------------------------------

TargetName = Annotated[
    str,
    Field(
        description="target name as written in hotkernel.yaml: a Python identifier (letters, digits, '_', at "
        "most 64 characters); list_targets shows them",
        pattern=TARGET_NAME_RE.pattern,
        min_length=1,
        max_length=64,
    ),
]
WaitS = Annotated[
    float,
    Field(
        description="seconds (0 to 3600, default 50) to wait for the result in this call. When the job is "
        "still "
        "running after wait_s the call returns its job_id with state 'running' and the job keeps going: poll "
        "it with job_status. 0 starts the job and returns at once. Keep it under your client's tool timeout",
        ge=0,
        le=3600,
    ),
]
Role = Annotated[
    Literal["baseline", "candidate"],
    Field(description="which rendered script of the target: 'baseline' (the number to beat) or 'candidate'"),
]


# ---- helpers -----------------------------------------------------------------------------------------------


def start_dir(ctx: Context) -> Path:
    """The directory this server works on (from the lifespan context)."""
    state: ServerState = ctx.request_context.lifespan_context
    return state.root


def workspace_of(ctx: Context) -> Workspace:
    """The workspace this server works on; a ToolError that says how to make one when there is none."""
    try:
        return find_workspace(start_dir(ctx))
    except HotkernelError:
        raise ToolError(
            f"no {MANIFEST_NAME} in {start_dir(ctx)} or above: call new_target to start a workspace there, "
            f"or "
            "start the server in a workspace (HOTKERNEL_WORKSPACE / the client's working directory)"
        ) from None


def load_manifest(ws: Workspace) -> Any:
    from hotkernel.manifest import load_manifest as load

    return load(ws.manifest)


def known_target(ws: Workspace, name: str, param: str = "target") -> Any:
    """The manifest, after checking that ``name`` is one of its targets (else a ToolError listing them)."""
    manifest = load_manifest(ws)
    if name not in manifest.targets:
        known = ", ".join(sorted(manifest.targets)) or "none yet (add one with add_target or new_target)"
        raise ToolError(f"{param} {quote(name)} is not in {MANIFEST_NAME}; known targets: {known}")
    return manifest


def rel(ws: Workspace, path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ws.root.resolve()))
    except ValueError:
        return str(path)


def inside(ws: Workspace, user_path: str, param: str) -> Path:
    """``user_path`` resolved inside the workspace, or a ToolError naming the parameter."""
    try:
        return safe_path(ws.root, user_path, what=param)
    except HotkernelError as err:
        raise ToolError(str(err)) from None


def existing_file(ws: Workspace, user_path: str, param: str, hint: str) -> Path:
    """``user_path`` as an existing file inside the workspace, else a ToolError naming ``param`` and ``hint``."""
    path = inside(ws, user_path, param)
    if not path.is_file():
        raise ToolError(f"{param} {quote(user_path)} is not a file in the workspace: {hint}")
    return path


def render(ws: Workspace, name: str) -> tuple[list[str], list[str], dict[str, Any]]:
    """Render a target from the manifest: (written, kept, resolved spec)."""
    from hotkernel.manifest import resolved_target
    from hotkernel.run.render import render_target

    resolved = resolved_target(load_manifest(ws), name)
    rendered = render_target(ws, name, resolved)
    return list(rendered.written), list(rendered.kept), resolved
