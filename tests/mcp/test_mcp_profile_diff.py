"""The profile_diff MCP tool: two captured H200 reports inside the workspace, as a job; paths confined; the
target mode without Nsight says the fix."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client

from hotkernel.mcp.app import build_server

pytestmark = pytest.mark.anyio
H200 = Path(__file__).parent.parent / "fixtures" / "h200"
MANIFEST = """\
version: 1
defaults:
  device: cpu
targets:
  scale:
    from: ./kernels/scale.py:scale
    shapes: ["64x64"]
    dtype: fp32
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    (root / "kernels").mkdir(parents=True)
    (root / "hotkernel.yaml").write_text(MANIFEST)
    (root / "kernels" / "scale.py").write_text("def scale(x):\n    return x * 2.0\n")
    (root / "reports").mkdir()
    (root / "reports" / "before.csv").write_bytes((H200 / "ncu_details_csv.out").read_bytes())
    (root / "reports" / "after.csv").write_bytes((H200 / "ncu_import_details_csv.out").read_bytes())
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    monkeypatch.delenv("HOTKERNEL_WORKSPACE", raising=False)
    return root


def text_of(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def test_two_reports_in_the_workspace(workspace: Path) -> None:
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool(
            "profile_diff", {"a": "reports/before.csv", "b": "reports/after.csv", "top": 2, "wait_s": 60}
        )
    assert not result.is_error, text_of(result)
    outcome = result.structured_content
    assert outcome["job"]["state"] == "done"
    diff = outcome["result"]
    assert diff["kernel_count"] == 5 and len(diff["kernels"]) == 2 and diff["moved_most"] == []
    first = diff["kernels"][0]
    assert first["kernel"] == "cunn_SoftMaxForwardReg" and first["match"] == "name"
    time_us = next(m for m in first["metrics"] if m["metric"] == "time_us")
    assert time_us["a"] == pytest.approx(130.784) and time_us["b"] == pytest.approx(129.44)


async def test_paths_are_confined_and_modes_exclusive(workspace: Path) -> None:
    outside = str(H200 / "ncu_details_csv.out")
    async with Client(build_server(workspace)) as client:
        escaped = await client.call_tool("profile_diff", {"a": outside, "b": "reports/after.csv"})
        neither = await client.call_tool("profile_diff", {"a": "reports/before.csv"})
        unknown = await client.call_tool("profile_diff", {"target": "nope"})
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert escaped.is_error and "report A (a)" in text_of(escaped) and "outside the workspace" in text_of(escaped)
    assert neither.is_error and "give two reports" in text_of(neither)
    assert unknown.is_error and "'nope' is not in hotkernel.yaml" in text_of(unknown)
    schema = tools["profile_diff"].input_schema["properties"]
    assert {"a", "b", "target", "kernel_regex", "launch_count", "top", "timeout_s", "wait_s"} <= set(schema)
    assert "command" not in schema and "out" not in schema  # CLI only: the server runs no arbitrary command


@pytest.mark.slow  # renders the target, whose command runs the user's python
async def test_target_without_nsight_says_the_fix(workspace: Path) -> None:
    from hotkernel.insight.ncu_report import find_ncu

    if find_ncu() is not None:
        pytest.skip("Nsight Compute is installed here")
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool("profile_diff", {"target": "scale", "kernel_regex": "x", "wait_s": 120})
    assert result.is_error
    text = text_of(result)
    assert "profiling A" in text and "ncu (Nsight Compute) not found" in text and "fix:" in text, text
