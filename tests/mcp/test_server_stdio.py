"""The real ``hotkernel`` process over stdio (``hotkernel``, ``hotkernel serve``, ``python -m hotkernel``): it
answers, reports errors as tool errors, and never loads torch."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from hotkernel.mcp import jobs

pytestmark = pytest.mark.anyio
MANIFEST = """\
version: 1
defaults:
  device: cpu
targets:
  scale:
    from: ./kernels/scale.py:scale
    shapes: ["16x16"]
    dtype: fp32
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def hotkernel_command() -> str:
    """The console script next to this interpreter (the installed entry point), else on PATH."""
    here = Path(sys.executable).parent / "hotkernel"
    found = str(here) if here.is_file() else shutil.which("hotkernel")
    if found is None:
        pytest.skip("the hotkernel console script is not installed")
    return found


def mapped_libraries(pid: int) -> str:
    with open(f"/proc/{pid}/maps") as handle:
        return handle.read()


@pytest.mark.parametrize("launch", ["hotkernel", "hotkernel serve", "python -m hotkernel"])
async def test_real_process_serves_over_stdio(tmp_path: Path, launch: str) -> None:
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "scale.py").write_text("def scale(x):\n    return x * 2\n")
    (tmp_path / "hotkernel.yaml").write_text(MANIFEST)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "HOTKERNEL_PYTHON": sys.executable,
        "HOTKERNEL_WORKSPACE": str(tmp_path),
    }
    command, args = {
        "hotkernel": (hotkernel_command(), []),
        "hotkernel serve": (hotkernel_command(), ["serve"]),
        "python -m hotkernel": (sys.executable, ["-m", "hotkernel"]),
    }[launch]
    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(tmp_path))
    before = set(jobs.descendants(os.getpid()))
    async with Client(params) as client:
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert {"bench", "verify", "record", "sync", "job_status"} <= tools
        listed = await client.call_tool("list_targets", {})
        assert not listed.is_error, listed.content
        assert [t["name"] for t in listed.structured_content["targets"]] == ["scale"]
        bad = await client.call_tool("show_target", {"target": "missing"})
        assert bad.is_error and "known targets: scale" in bad.content[0].text
        for name in ("gpu_info", "plan", "leaderboard"):
            result = await client.call_tool(name, {})
            assert not result.is_error, (name, result.content)
        server = [pid for pid in jobs.descendants(os.getpid()) if pid not in before]
        assert server, "no server process found"
        for pid in server:
            maps = mapped_libraries(pid)
            assert "libtorch" not in maps and "torch/_C" not in maps, f"server process {pid} loaded torch"
    await anyio.sleep(0.2)
