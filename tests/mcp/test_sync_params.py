"""The MCP sync tool's gpus / executor / address parameters: their schema, the bad combinations refused with
the fix, and what reaches the sync job."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError

from hotkernel.mcp.app import build_server
from hotkernel.mcp.tools import measure

pytestmark = pytest.mark.anyio
MANIFEST = "version: 1\ntargets:\n  scale:\n    from: ./k.py:scale\n    shapes: [8x8]\n    device: cpu\n"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[dict]]:
    (tmp_path / "hotkernel.yaml").write_text(MANIFEST)
    (tmp_path / "k.py").write_text("def scale(x):\n    return x * 2\n")
    seen: list[dict] = []

    async def fake_run_job(ctx, op, ws, args, wait_s):  # stands in for the child-process job
        seen.append({"op": op, **args})
        raise ToolError("stand-in job: not run")

    monkeypatch.setattr(measure, "run_job", fake_run_job)
    return tmp_path, seen


async def test_the_schema_offers_gpus_executor_and_address(workspace) -> None:
    root, _ = workspace
    async with Client(build_server(root)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    props = tools["sync"].input_schema["properties"]
    assert {"gpus", "executor", "address", "serial"} <= set(props)
    assert "'0,1'" in str(props["gpus"]) and "ray" in str(props["executor"])
    timeouts = [tools[name].input_schema["properties"]["timeout_s"] for name in ("bench", "verify")]
    assert timeouts[0] == timeouts[1] and timeouts[0]["maximum"] == 3600  # one annotation, both tools


async def test_the_parameters_reach_the_sync_job(workspace) -> None:
    root, seen = workspace
    async with Client(build_server(root)) as client:
        local = await client.call_tool("sync", {"gpus": "0,1"})
        ray = await client.call_tool("sync", {"executor": "ray", "address": "ray://head:10001"})
        serial = await client.call_tool("sync", {"serial": True})
    assert local.is_error and ray.is_error and serial.is_error  # the stand-in job refuses; the arguments went on
    assert [(s["gpus"], s["executor"], s["address"], s["serial"]) for s in seen] == [
        ("0,1", "local", None, False),
        (None, "ray", "ray://head:10001", False),
        (None, "local", None, True),
    ]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"gpus": "first"}, "gpus"),
        ({"executor": "slurm"}, "executor"),
        ({"address": "head:6379"}, "executor='ray'"),
        ({"executor": "ray", "gpus": "all"}, "gpus is for executor 'local'"),
        ({"serial": True, "gpus": "all"}, "serial runs one verify at a time"),
    ],
)
async def test_bad_combinations_are_refused_with_the_fix(workspace, args: dict, says: str) -> None:
    root, seen = workspace
    async with Client(build_server(root)) as client:
        result = await client.call_tool("sync", args)
    assert result.is_error and says in "\n".join(getattr(c, "text", "") for c in result.content)
    assert seen == []


async def test_budget_s_reaches_the_sync_job_and_is_bounded(workspace) -> None:
    root, seen = workspace
    async with Client(build_server(root)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        given = await client.call_tool("sync", {"budget_s": 600})
        too_small = await client.call_tool("sync", {"budget_s": 1})
    assert "budget" in str(tools["sync"].input_schema["properties"]["budget_s"])
    assert given.is_error and too_small.is_error
    assert [s["budget_s"] for s in seen] == [600]  # the one below the minimum never reached a job
