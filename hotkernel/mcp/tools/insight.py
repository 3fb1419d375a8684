"""The insight tools: one MCP tool per entry of ``hotkernel.insight.registry.REGISTRY``, none written by hand.

Each tool's parameters are its ``Params`` model's fields (less the CLI-only ones), plus ``wait_s`` for the
long-running ones, which run as jobs. A tool that takes a ``target`` gets it checked and rendered first.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from pydantic import BaseModel, Field

from hotkernel.insight.base import Cli, InsightContext, InsightTool, cli_only
from hotkernel.insight.registry import REGISTRY
from hotkernel.mcp.base import (
    DEFAULT_WAIT_S,
    WaitS,
    known_target,
    outcome_model,
    render,
    run_job,
    start_dir,
    tool,
    workspace_of,
)


def mcp_parameters(tool_def: InsightTool) -> list[inspect.Parameter]:
    """The MCP parameters of a tool: every field of its model that is not CLI-only, as declared there."""
    params = []
    for name, info in tool_def.Params.model_fields.items():
        if cli_only(tool_def.Params, name):
            continue
        metadata = [m for m in info.metadata if not isinstance(m, Cli)]
        field = Field(description=info.description)
        annotation = Annotated[(info.annotation, field, *metadata)]  # type: ignore[valid-type]
        default = inspect.Parameter.empty if info.is_required() else info.default
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return params


def _prepare_target(ctx: Context, params: BaseModel) -> None:
    """A ``target`` parameter must name a target of the manifest; it is rendered before the tool runs."""
    target = getattr(params, "target", None)
    if target is not None:
        ws = workspace_of(ctx)
        known_target(ws, target)
        render(ws, target)


def make_tool(tool_def: InsightTool) -> Any:
    """An MCP tool function for ``tool_def``, with a real signature (the SDK builds the schema from it)."""
    parameters = mcp_parameters(tool_def)
    context = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)
    if tool_def.LONG_RUNNING:
        outcome = outcome_model(tool_def.RESULT, f"{tool_def.CLI_NAME.title()}Outcome")
        wait = inspect.Parameter("wait_s", inspect.Parameter.KEYWORD_ONLY, default=DEFAULT_WAIT_S, annotation=WaitS)

        async def run_as_job(ctx: Context, wait_s: float = DEFAULT_WAIT_S, **values: Any) -> Any:
            params = tool_def.Params(**values)
            ws = workspace_of(ctx)
            _prepare_target(ctx, params)
            info, result = await run_job(ctx, tool_def.NAME, ws, params.model_dump(mode="json"), wait_s)
            return outcome(job=info, result=result)

        fn: Any = run_as_job
        signature = inspect.Signature([context, *parameters, wait], return_annotation=outcome)
    else:

        def run_here(ctx: Context, **values: Any) -> Any:
            params = tool_def.Params(**values)
            _prepare_target(ctx, params)
            return tool_def.run(params, InsightContext.at(start_dir(ctx), confined=True))

        fn = run_here
        signature = inspect.Signature([context, *parameters], return_annotation=tool_def.RESULT)
    fn.__name__ = fn.__qualname__ = tool_def.NAME
    fn.__doc__ = tool_def.DESCRIPTION
    fn.__signature__ = signature
    fn.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    fn.__annotations__["return"] = signature.return_annotation
    return fn


for _tool_def in REGISTRY.values():
    hints = _tool_def.HINTS
    tool(read_only=hints.read_only, destructive=hints.destructive, idempotent=hints.idempotent)(make_tool(_tool_def))
