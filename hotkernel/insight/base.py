"""What an insight tool is: the protocol every entry of ``hotkernel.insight.registry.REGISTRY`` satisfies.

An insight tool is a module (pre-commit's ``lang_base`` model): it names itself, declares its parameters as one
pydantic model, runs them, and says its result in a few lines. The CLI builds one command per tool from the
model and the MCP server one tool per entry; neither knows any tool by name. Per-field markers say where a
parameter shows: ``Cli(...)`` gives its command-line flags (a field without one is MCP-only), ``CLI_ONLY`` keeps
a field off the MCP schema.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from hotkernel.errors import HotkernelError, quote
from hotkernel.workspace.paths import Workspace, check_path_length, find_workspace, safe_path

ProgressFn = Callable[..., None]


@dataclass(frozen=True)
class Hints:
    """What a tool does to the world (the MCP annotations; tools touch only the workspace and the GPU)."""

    read_only: bool
    destructive: bool
    idempotent: bool


@dataclass(frozen=True)
class Cli:
    """Command-line shape of one parameter: its flags (none and ``argument``: positional), help and default."""

    flags: tuple[str, ...] = ()
    help: str = ""
    argument: bool = False
    trailing: bool = False  # the rest of the command line (after the script, or after ``--``)
    default: Any = ...  # the CLI default when it differs from the model's (``...``: the model's)


class _CliOnly:
    def __repr__(self) -> str:
        return "CLI_ONLY"


CLI_ONLY = _CliOnly()  # marker: the field exists on the command line only, never in the MCP schema


@dataclass
class InsightContext:
    """Where a tool runs: its start directory, the workspace there (if any), and how paths are confined.

    ``confined`` (the MCP server): a path parameter must resolve inside the workspace. Otherwise (the CLI) it is
    relative to the current directory, as a shell user expects.
    """

    start: Path
    workspace: Workspace | None
    confined: bool
    progress: ProgressFn = field(default=lambda *args, **kwargs: None)

    @classmethod
    def at(cls, start: str | os.PathLike[str], *, confined: bool, progress: ProgressFn | None = None) -> InsightContext:
        """The context for ``start`` and the workspace at or above it (None when there is none)."""
        root = Path(start).resolve()
        try:
            ws: Workspace | None = find_workspace(root)
        except HotkernelError:
            ws = None
        return cls(root, ws, confined, progress or (lambda *args, **kwargs: None))

    def require_workspace(self, tool: str) -> Workspace:
        if self.workspace is None:
            raise HotkernelError(
                f"{tool}: no hotkernel.yaml in {self.start} or above: run it inside a workspace "
                "(`hotkernel new ...` makes one)"
            )
        return self.workspace

    def path(self, user_path: str, param: str) -> Path:
        """``user_path`` as a Path: checked for length first, then confined to the workspace when asked."""
        check_path_length(user_path, param)
        if not self.confined:
            return Path(user_path)
        ws = self.require_workspace(param)
        return safe_path(ws.root, user_path, what=param)

    def existing_file(self, user_path: str, param: str, hint: str = "") -> Path:
        """``path(user_path)``, which must be an existing file (else an error naming ``param``)."""
        path = self.path(user_path, param)
        if not path.is_file():
            where = "in the workspace" if self.confined else "here"
            raise HotkernelError(f"{param} {quote(user_path)} is not a file {where}" + (f": {hint}" if hint else ""))
        return path


class InsightTool(Protocol):
    """One insight tool; a module satisfies it with module-level names."""

    NAME: str  # MCP tool name and job operation
    CLI_NAME: str  # the ``hotkernel`` verb
    CLI_HELP: str  # the command's help
    DESCRIPTION: str  # the MCP tool description: what, when, and which sibling tool instead
    Params: type[BaseModel]  # every parameter, with Field descriptions and limits
    RESULT: type[BaseModel]  # what run returns (the MCP output schema)
    HINTS: Hints
    LONG_RUNNING: bool  # runs the user's interpreter: an MCP job (progress, cancel, poll)

    def run(self, params: Any, ctx: InsightContext) -> Any:
        """Do the work; anticipated failures raise HotkernelError."""
        ...

    def summary_lines(self, result: Any) -> list[str]:
        """The result for a terminal, a few lines."""
        ...


def cli_spec(model: type[BaseModel], name: str) -> Cli | None:
    """The ``Cli`` marker of a field, or None when the field is MCP-only."""
    return next((m for m in model.model_fields[name].metadata if isinstance(m, Cli)), None)


def cli_only(model: type[BaseModel], name: str) -> bool:
    """True when the field is kept off the MCP schema."""
    return any(m is CLI_ONLY for m in model.model_fields[name].metadata)
