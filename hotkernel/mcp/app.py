"""The MCP server: every hotkernel capability as a typed tool over stdio (``hotkernel``, ``hotkernel serve``).

A thin layer over the library, laid out as the SDK's examples are: the tools live in ``hotkernel.mcp.tools.*``
(``insight`` is generated from the insight registry), declared with ``hotkernel.mcp.base.tool``; this module
builds the server, hands it its state through the lifespan context, and wraps every tool once, turning
anticipated failures (``HotkernelError``, bad arguments) into a ``ToolError`` with the library's one-line text.
Calls that run the user's interpreter run as jobs (``hotkernel.mcp.jobs``): they report progress, can be
cancelled (the job's whole process tree is killed), and return a job id when they outlast ``wait_s`` so
clients with a 60 s tool timeout can poll.
"""

from __future__ import annotations

import functools
import inspect
import logging
import os
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import ValidationError

from hotkernel import __version__
from hotkernel.errors import HotkernelError, shorten
from hotkernel.mcp import jobs
from hotkernel.mcp.base import TOOLS, ServerState
from hotkernel.mcp.tools import insight, measure, results, targets
from hotkernel.mcp.tools import jobs as job_tools

TOOL_MODULES = (measure, targets, results, insight, job_tools)  # importing each declares its tools
log = logging.getLogger("hotkernel.mcp.app")

INSTRUCTIONS = (
    "hotkernel measures and verifies GPU kernel speedups. Loop: bench the baseline (the number to beat), "
    "torch_trace/profile to find the dominant kernel, roofline for its floor, one change to the candidate, "
    "verify, record (win or lose). Long calls (bench, verify, sync, profile, calibrate, torch_trace) "
    "return a job id when they outlast wait_s: poll it with job_status."
)


# ---- the one wrapper: errors and registration --------------------------------------------------------------


def _tool_error(name: str, err: BaseException) -> ToolError:
    """Turn an anticipated failure into the one-line ToolError the model reads."""
    if isinstance(err, ToolError):
        return err
    if isinstance(err, HotkernelError):
        return ToolError(shorten(str(err)))
    if isinstance(err, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in err.errors(include_url=False)
        )
        return ToolError(shorten(f"invalid value ({problems})"))
    log.exception("tool %s crashed", name)
    detail = shorten(str(err), 500)
    return ToolError(f"internal error {type(err).__name__}: {detail} (a hotkernel bug: please report it)")


def wrapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with every anticipated failure turned into a ToolError (the one place that does it)."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except Exception as err:
                raise _tool_error(fn.__name__, err) from None

        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            raise _tool_error(fn.__name__, err) from None

    return run


def build_server(root: str | os.PathLike[str] | None = None) -> MCPServer:
    """A server whose tools work on the workspace at (or above) ``root``.

    ``root`` defaults to ``HOTKERNEL_WORKSPACE``, then ``CLAUDE_PROJECT_DIR``, then the current directory.
    """
    start = root or os.environ.get("HOTKERNEL_WORKSPACE") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    state = ServerState(root=Path(start).resolve())

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[ServerState]:
        yield state

    level = os.environ.get("HOTKERNEL_LOG_LEVEL", "WARNING").upper()
    server = MCPServer(
        "hotkernel",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level=level if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL") else "WARNING",
        lifespan=lifespan,
    )
    for fn, hints in TOOLS:
        server.add_tool(wrapped(fn), annotations=hints, structured_output=True)
    return server


def serve() -> None:
    """Serve MCP on stdio until the client closes the pipe; running jobs are killed on the way out."""

    def stop(signum: int, _frame: object) -> None:  # SIGTERM/SIGHUP: no job outlives the server
        jobs.cancel_all_jobs()
        raise SystemExit(128 + signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, stop)
    server = build_server()
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        jobs.cancel_all_jobs()
