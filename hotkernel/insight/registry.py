"""Every insight tool, by its MCP name (pre-commit's ``all_languages``): the CLI and the MCP server loop over it.

Adding a tool: write its module (the names ``hotkernel.insight.base.InsightTool`` lists) and add it here.
"""

from __future__ import annotations

from hotkernel.insight import (
    calibrate,
    disasm,
    gpu_info,
    profile,
    profile_diff,
    roofline,
    top_kernels,
    torch_trace,
)
from hotkernel.insight.base import InsightTool

REGISTRY: dict[str, InsightTool] = {
    tool.NAME: tool  # type: ignore[misc]
    for tool in (gpu_info, roofline, calibrate, torch_trace, profile, profile_diff, top_kernels, disasm)
}
