"""``hotkernel serve``: the MCP server on stdio (bare ``hotkernel`` does the same)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to the CLI."""

    @app.command("serve")
    def serve_command() -> None:
        """Serve MCP on stdio for a coding agent (Claude Code, Codex, Cursor): every hotkernel tool."""
        from hotkernel.mcp.app import serve

        serve()
