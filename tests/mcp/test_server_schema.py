"""Schema quality of every MCP tool, and the plugin / skill files that point at them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest
from mcp import Client

import hotkernel
from hotkernel.mcp.app import build_server

ROOT = Path(__file__).resolve().parents[2]
SKILL = ROOT / "skills" / "kernel-speedrun" / "SKILL.md"
LOOP_TOOLS = ("bench", "torch_trace", "profile", "roofline", "disasm", "verify", "profile_diff", "record")


def listed_tools() -> list:
    async def fetch() -> list:
        async with Client(build_server(ROOT)) as client:
            return (await client.list_tools()).tools

    return anyio.run(fetch)


TOOLS = listed_tools()
TOOL_NAMES = {tool.name for tool in TOOLS}


def property_names(schema: object) -> set[str]:
    """Every property name and enum value anywhere in a JSON schema (nested models and $defs included)."""
    found: set[str] = set()
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties" and isinstance(value, dict):
                found |= set(value)
            if key == "enum" and isinstance(value, list):
                found |= {str(v) for v in value}
            found |= property_names(value)
    elif isinstance(schema, list):
        for item in schema:
            found |= property_names(item)
    return found


@pytest.mark.parametrize("tool", TOOLS, ids=lambda t: t.name)
def test_tool_is_documented(tool) -> None:
    description = tool.description or ""
    assert len(description) >= 120, f"{tool.name}: the description must say what, when and instead-of"
    others = TOOL_NAMES - {tool.name}
    assert any(re.search(rf"\b{name}\b", description) for name in others), (
        f"{tool.name}: the description names no sibling tool to use instead"
    )
    for name, prop in tool.input_schema.get("properties", {}).items():
        assert len(prop.get("description", "")) >= 15, f"{tool.name}.{name} has no real description"
    assert tool.output_schema and tool.output_schema.get("type") == "object", f"{tool.name}: no output schema"
    hints = tool.annotations
    assert hints is not None, f"{tool.name}: no annotations"
    for field in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
        assert getattr(hints, field) is not None, f"{tool.name}: {field} not set"
    assert hints.open_world_hint is False, f"{tool.name}: tools touch only the workspace and the GPU"
    if hints.read_only_hint:
        assert not hints.destructive_hint


def test_numeric_parameters_have_ranges() -> None:
    for tool in TOOLS:
        for name, prop in tool.input_schema.get("properties", {}).items():
            variants = prop.get("anyOf", [prop])
            for variant in variants:
                if variant.get("type") in ("integer", "number"):
                    has_floor = "minimum" in variant or "exclusiveMinimum" in variant
                    assert has_floor, f"{tool.name}.{name}: no minimum"


def test_annotations_are_truthful() -> None:
    by_name = {tool.name: tool.annotations for tool in TOOLS}
    for name in ("gpu_info", "list_targets", "show_target", "plan", "history", "top_kernels", "list_jobs"):
        assert by_name[name].read_only_hint is True, name
    for name in ("bench", "verify", "record", "sync", "add_target", "new_target", "calibrate", "leaderboard"):
        assert by_name[name].read_only_hint is False, name
    for name in ("remove_target", "invalidate_record", "cancel_job"):
        assert by_name[name].destructive_hint is True, name


def test_skill_frontmatter_and_tool_names() -> None:
    text = SKILL.read_text()
    front = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    assert front, "SKILL.md needs YAML frontmatter"
    fields = dict(line.split(": ", 1) for line in front.group(1).splitlines())
    assert fields["name"] == SKILL.parent.name
    assert 50 < len(fields["description"]) <= 1024
    known = (
        TOOL_NAMES
        | set().union(*(property_names(t.input_schema) for t in TOOLS))
        | set().union(*(property_names(t.output_schema) for t in TOOLS))
    )
    mentioned = set(re.findall(r"`([a-z][a-z0-9_]*)(?::[^`]*)?`", text))
    unknown = mentioned - known
    assert unknown == set(), f"SKILL.md names things the server does not have: {unknown}"
    for name in LOOP_TOOLS:
        assert f"`{name}`" in text, f"the loop must use {name}"
    assert "three changes in a row" in text.lower() and "5%" in text


def test_plugin_pins_this_version() -> None:
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    market = json.loads((ROOT / ".claude-plugin" / "marketplace.json").read_text())
    assert plugin["version"] == hotkernel.__version__
    server = plugin["mcpServers"]["hotkernel"]
    assert server["command"] == "uvx" and server["args"] == [f"hotkernel@{hotkernel.__version__}", "serve"]
    assert server["env"]["HOTKERNEL_PYTHON"] == "${user_config.python}"
    option = plugin["userConfig"]["python"]
    assert option["type"] == "file" and option["title"] and option["description"]
    assert [p["name"] for p in market["plugins"]] == [plugin["name"]]
    assert (ROOT / market["plugins"][0]["source"] / ".claude-plugin" / "plugin.json").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'version = "{hotkernel.__version__}"' in pyproject
