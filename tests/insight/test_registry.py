"""The insight registry: every entry satisfies the protocol; the CLI and the MCP server are built from it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from hotkernel.errors import HotkernelError
from hotkernel.insight.base import InsightContext, cli_only, cli_spec
from hotkernel.insight.registry import REGISTRY
from hotkernel.mcp import jobs
from hotkernel.mcp.app import build_server

PROTOCOL = (
    "NAME",
    "CLI_NAME",
    "CLI_HELP",
    "DESCRIPTION",
    "Params",
    "RESULT",
    "HINTS",
    "LONG_RUNNING",
    "run",
    "summary_lines",
)


def test_the_eight_tools_are_registered() -> None:
    assert set(REGISTRY) == {
        "gpu_info",
        "roofline",
        "calibrate",
        "torch_trace",
        "profile",
        "profile_diff",
        "top_kernels",
        "disasm",
    }


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_entry_satisfies_the_protocol(name: str) -> None:
    tool = REGISTRY[name]
    missing = [attr for attr in PROTOCOL if not hasattr(tool, attr)]
    assert missing == [], f"{name} lacks {missing}"
    assert tool.NAME == name and len(tool.DESCRIPTION) >= 120
    for field, info in tool.Params.model_fields.items():
        assert info.description, f"{name}.{field} has no description"
        assert cli_spec(tool.Params, field) is not None or not cli_only(tool.Params, field), (
            f"{name}.{field} is CLI-only but has no Cli flags"
        )


def test_long_running_tools_are_job_operations() -> None:
    long_running = {name for name, tool in REGISTRY.items() if tool.LONG_RUNNING}
    assert long_running == {"calibrate", "torch_trace", "profile", "profile_diff"}
    assert long_running <= set(jobs.OPERATIONS) and {"bench", "verify", "sync"} <= set(jobs.OPERATIONS)


def test_mcp_tools_are_the_registry_minus_cli_only_fields() -> None:
    async def fetch() -> dict:
        async with Client(build_server(Path.cwd())) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    listed = anyio.run(fetch)
    for name, tool in REGISTRY.items():
        props = set(listed[name].input_schema.get("properties", {}))
        expected = {f for f in tool.Params.model_fields if not cli_only(tool.Params, f)}
        assert props == expected | ({"wait_s"} if tool.LONG_RUNNING else set()), name
        hints = listed[name].annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            tool.HINTS.read_only,
            tool.HINTS.destructive,
            tool.HINTS.idempotent,
        )
    assert "command" not in set(listed["profile"].input_schema["properties"])


def test_confined_context_refuses_a_path_outside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "hotkernel.yaml").write_text("version: 1\ntargets: {}\n")
    ctx = InsightContext.at(tmp_path, confined=True)
    with pytest.raises(HotkernelError, match="outside the workspace"):
        ctx.path("../elsewhere.csv", "report")
    assert InsightContext.at(tmp_path, confined=False).path("../elsewhere.csv", "report") == Path("../elsewhere.csv")
    with pytest.raises(HotkernelError, match="name of 300 characters"):
        ctx.path("d/" + "x" * 300, "report")
