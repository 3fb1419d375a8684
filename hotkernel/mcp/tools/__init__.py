"""One module per group of MCP tools; hotkernel.mcp.app registers them."""
