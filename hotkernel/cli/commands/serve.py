"""``hotkernel serve``: the MCP server on stdio (bare ``hotkernel`` does the same)."""

from __future__ import annotations

import typer


def serve() -> None:
    """Serve MCP on stdio until the client closes the pipe."""
    from hotkernel.mcp.app import serve as serve_stdio  # the MCP SDK costs ~0.9 s: only a server loads it

    serve_stdio()


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to the CLI."""

    @app.command("serve")
    def serve_command() -> None:
        """Serve MCP on stdio for a coding agent (Claude Code, Codex, Cursor): every hotkernel tool."""
        serve()
