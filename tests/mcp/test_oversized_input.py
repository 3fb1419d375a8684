"""Oversized input: every tool, every parameter, given a 1 MB value, answers one clear ToolError.

None may crash (an internal error), and none may echo the input back: at most ~200 characters of it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer

from hotkernel.errors import quote, shorten
from hotkernel.mcp.app import build_server

MB = 1 << 20
MANIFEST = (
    "version: 1\ndefaults:\n  device: cpu\ntargets:\n  scale:\n    from: ./kernels/scale.py:scale\n"
    '    shapes: ["64x64"]\n'
)


def longest_run(text: str, char: str = "x") -> int:
    """Length of the longest run of ``char`` in ``text`` (how much of the input an error echoed)."""
    return max((len(m) for m in re.findall(f"{re.escape(char)}+", text)), default=0)


def oversized(schema: dict) -> object:
    """A 1 MB value of the parameter's JSON type: a string, a list of one such string, or a huge number."""
    types = {v.get("type") for v in schema.get("anyOf", [schema])}
    if "array" in types:
        return ["x" * MB]
    if types & {"integer", "number"} and "string" not in types:
        return float("1" + "0" * 300)  # the largest finite double's order: far above every bound
    return "x" * MB


def calls(root: Path) -> list[tuple[str, str, dict]]:
    """(tool, parameter, arguments): each parameter oversized in turn, the others left out or oversized."""

    async def fetch() -> list:
        async with Client(build_server(root)) as client:
            return (await client.list_tools()).tools

    cases = []
    for tool in anyio.run(fetch):
        props = tool.input_schema.get("properties", {})
        required = tool.input_schema.get("required", [])
        for name, schema in props.items():
            if {v.get("type") for v in schema.get("anyOf", [schema])} <= {"boolean", "null"}:
                continue
            args = {r: oversized(props[r]) for r in required}
            args[name] = oversized(schema)
            cases.append((tool.name, name, args))
    return cases


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ws")
    (root / "hotkernel.yaml").write_text(MANIFEST)
    (root / "kernels").mkdir()
    (root / "kernels" / "scale.py").write_text("def scale(x):\n    return x * 2.0\n")
    return root


@pytest.fixture(scope="module")
def server(workspace: Path) -> MCPServer:
    """One server for every call: building one (its tools' schemas) costs more than the call, and each call gets
    a client session of its own."""
    return build_server(workspace)


CASES = calls(Path(__file__).resolve().parents[2])


@pytest.mark.parametrize(("tool", "param", "args"), CASES, ids=[f"{t}.{p}" for t, p, _ in CASES])
def test_oversized_parameter_is_a_clear_error(server: MCPServer, tool: str, param: str, args: dict) -> None:
    async def call():
        async with Client(server) as client:
            return await client.call_tool(tool, args)

    result = anyio.run(call)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error, f"{tool}.{param}: a 1 MB value was accepted: {text[:300]}"
    assert "internal error" not in text, f"{tool}.{param}: {text[:300]}"
    assert longest_run(text) <= 200, f"{tool}.{param} echoed {longest_run(text):,} characters of the input"
    assert len(text) < 4000, f"{tool}.{param}: a {len(text):,}-character error"


def test_every_tool_with_parameters_is_covered() -> None:
    covered = {tool for tool, _, _ in CASES}
    assert {"bench", "verify", "record", "job_status", "torch_trace", "profile", "disasm", "new_target"} <= covered
    assert len(covered) >= 18


@pytest.mark.parametrize("tool", ["top_kernels", "disasm", "torch_trace"])
def test_a_path_name_past_name_max_is_refused_before_the_file_system(server: MCPServer, tool: str) -> None:
    """A path inside the schema's length but with a 4000-character name: a clear error, not ENAMETOOLONG."""
    param = {"top_kernels": "report", "disasm": "source", "torch_trace": "script"}[tool]

    async def call():
        async with Client(server) as client:
            return await client.call_tool(
                tool, {param: "x" * 4000, "wait_s": 5} if tool == "torch_trace" else {param: "x" * 4000}
            )

    result = anyio.run(call)
    text = "\n".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error and "internal error" not in text and "name of 4,000 characters" in text, text[:300]
    assert longest_run(text) <= 200


def test_quote_and_shorten_cut_what_they_print() -> None:
    assert quote("abc") == "'abc'"
    cut = quote("x" * MB)
    assert longest_run(cut) <= 200 and "1,048,578 characters" in cut
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(4300)
    try:
        assert quote(10**5000) == "<a int too large to print>"
    finally:
        sys.set_int_max_str_digits(old)
    assert len(shorten("y" * 10_000)) < 2100 and shorten("short") == "short"
