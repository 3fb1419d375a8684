"""One source for each target key: the CLI ``new`` options, the MCP target tools and the written key order are
generated from the metadata on ``TargetSpec``'s fields; every key is reachable from both, and both take the same
path (validate, edit under the workspace lock, render) with the same limits."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from hotkernel.cli.app import app
from hotkernel.errors import HotkernelError
from hotkernel.manifest import TARGET_KEY_ORDER, TargetSpec, load_manifest, target_keys
from hotkernel.manifest.keys import mcp_parameter_names, parse_kwarg
from hotkernel.manifest.model import MAX_STRING, key_of

KERNEL = """\
def scale(x, w, *, alpha=1.0):
    return x * w * alpha


def reference(x, w, *, alpha=1.0):
    return x * w * alpha


def pack(x, w, *, alpha=1.0):
    return x, w
"""
# A valid value for every key, as the CLI takes it and as it lands in hotkernel.yaml.
SAMPLES: dict[str, tuple[list[str], object]] = {
    "from": (["./k.py:scale"], "./k.py:scale"),
    "input": (["x"], "x"),
    "shapes": (["8x16", "4x16"], ["8x16", "4x16"]),
    "extra": (["w:16"], ["w:16"]),
    "dtype": (["fp32"], "fp32"),
    "kwargs": (["alpha=2.0"], {"alpha": 2.0}),
    "rotate": (["w"], ["w"]),
    "derive": (["./k.py:pack"], "./k.py:pack"),
    "inputs": (["x", "w"], ["x", "w"]),
    "outputs": (["w"], ["w"]),
    "reference": (["./k.py:reference"], "./k.py:reference"),
    "flops": (["256"], 256.0),
    "bytes": (["1024"], 1024),
    "min_bytes": (["512"], 512),
    "atol": (["0.001"], 0.001),
    "rtol": (["0.002"], 0.002),
    "output_tolerances": (["atol=0.01,min_corr=0.5"], [{"atol": 0.01, "min_corr": 0.5}]),
    "seed": (["7"], 7),
    "iters": (["3"], 3),
    "device": (["cpu"], "cpu"),
    "threads": (["2"], 2),
    "competitors": (["compile", "./k.py:scale"], ["compile", "./k.py:scale"]),
}
# Keys that go only with a module problem (from: ./problem.py): `cases` in tests/suites/test_suites.py, `structured`
# in tests/suites/test_import_formats.py and tests/manifest/test_problem_files.py.
PROBLEM_ONLY = {"cases": (["batch_size=4"], [{"batch_size": 4}]), "structured": (["data"], ["data"])}


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("HOTKERNEL_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    return tmp_path


def test_every_field_carries_its_metadata_and_the_order_is_the_field_order() -> None:
    fields = TargetSpec.model_fields
    assert TARGET_KEY_ORDER == tuple(field.alias or name for name, field in fields.items())
    assert set(SAMPLES) | set(PROBLEM_ONLY) == set(TARGET_KEY_ORDER), "add a sample value for the new key"
    for name, field in fields.items():
        key = key_of(field)
        assert key.cli.startswith("--") and key.mcp.isidentifier() and field.description, name
    assert len({key.key.cli for key in target_keys()}) == len(fields)
    assert len({key.key.mcp for key in target_keys()}) == len(fields)


def test_the_cli_exposes_every_key_and_writes_it(workspace: Path) -> None:
    help_text = CliRunner().invoke(app, ["new", "--help"], terminal_width=200).output
    args = ["new", "t"]
    for key in target_keys():
        assert key.key.cli in help_text, key.yaml
        for value in SAMPLES.get(key.yaml, ([], None))[0]:
            args += [key.key.cli, value]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    written = load_manifest(workspace / "hotkernel.yaml").targets["t"].model_dump(by_alias=True, exclude_unset=True)
    assert written == {key: expected for key, (_, expected) in SAMPLES.items()}
    entry = (workspace / "hotkernel.yaml").read_text(encoding="utf-8").split("  t:\n", 1)[1]
    order = [key for key in TARGET_KEY_ORDER if key not in PROBLEM_ONLY]
    assert [line.split(":", 1)[0].strip() for line in entry.splitlines()] == order


def _mcp_call(root: Path, tool: str, arguments: dict) -> tuple[bool, str, dict | None]:
    pytest.importorskip("mcp")
    from mcp import Client

    from hotkernel.mcp.app import build_server

    async def run() -> tuple[bool, str, dict | None]:
        async with Client(build_server(root)) as client:
            result = await client.call_tool(tool, arguments)
            text = "\n".join(getattr(c, "text", "") for c in result.content)
            return result.is_error, text, result.structured_content

    return anyio.run(run)


def _mcp_schemas(root: Path) -> dict[str, dict]:
    pytest.importorskip("mcp")
    from mcp import Client

    from hotkernel.mcp.app import build_server

    async def run() -> dict[str, dict]:
        async with Client(build_server(root)) as client:
            listed = await client.list_tools()
            return {tool.name: tool.input_schema for tool in listed.tools}

    return anyio.run(run)


def test_the_mcp_tools_expose_every_key_with_limits(workspace: Path) -> None:
    schemas = _mcp_schemas(workspace)
    for tool in ("add_target", "update_target", "new_target"):
        properties = schemas[tool]["properties"]
        for key in target_keys():
            assert key.key.mcp in properties, (tool, key.yaml)
            schema = json.dumps(properties[key.key.mcp])
            assert key.help[:40] in schema, (tool, key.yaml)
            if key.key.kind in ("text", "ref") and not key.key.choices:
                assert f'"maxLength": {MAX_STRING}' in schema, (tool, key.yaml)
    assert set(schemas["add_target"]["required"]) == {"name", "source"}  # a module problem's shapes are read
    assert schemas["update_target"]["required"] == ["name"]


def test_mcp_writes_every_key_as_the_cli_does(workspace: Path) -> None:
    names = {yaml: param for param, yaml in mcp_parameter_names().items()}
    arguments: dict = {"name": "t"}
    for key, (_, expected) in SAMPLES.items():
        arguments[names[key]] = expected
    failed, text, _ = _mcp_call(workspace, "new_target", arguments)
    assert not failed, text
    written = load_manifest(workspace / "hotkernel.yaml").targets["t"].model_dump(by_alias=True, exclude_unset=True)
    assert written == {key: expected for key, (_, expected) in SAMPLES.items()}


def test_cli_and_mcp_refuse_the_same_value_with_the_same_message(workspace: Path) -> None:
    cli = CliRunner().invoke(app, ["new", "t", "--from", "./k.py:scale", "--shape", "8", "--rotate", "q"])
    failed, text, _ = _mcp_call(
        workspace, "new_target", {"name": "t", "source": "./k.py:scale", "shapes": ["8"], "rotate": ["q"]}
    )
    assert isinstance(cli.exception, HotkernelError) and failed
    detail = "'q' is not an input of this target; inputs: x"
    assert str(cli.exception) == f"--rotate: {detail}" and text.endswith(f"rotate[0]: {detail}"), text
    assert not (workspace / "hotkernel.yaml").exists()


@pytest.mark.parametrize("param", ["source", "input", "reference", "derive"])
def test_mcp_refuses_a_megabyte_string_without_echoing_it(workspace: Path, param: str) -> None:
    arguments = {"name": "t", "source": "./k.py:scale", "shapes": ["8"], param: "y" * 1_000_000}
    failed, text, _ = _mcp_call(workspace, "new_target", arguments)
    assert failed and len(text) < 1000, text[:300]
    assert "internal error" not in text
    assert not (workspace / "hotkernel.yaml").exists()


def test_a_megabyte_kwarg_is_never_written(workspace: Path) -> None:
    before = "version: 1\ntargets:\n"
    (workspace / "hotkernel.yaml").write_text(before, encoding="utf-8")
    failed, text, _ = _mcp_call(
        workspace,
        "add_target",
        {"name": "t", "source": "./k.py:scale", "shapes": ["8"], "kwargs": {"alpha": "z" * 1_000_000}},
    )
    assert failed and len(text) < 1000 and "1000000 characters" in text, text[:300]
    assert (workspace / "hotkernel.yaml").read_text(encoding="utf-8") == before
    huge_number = {"alpha": int("9" * 4000)}
    failed, text, _ = _mcp_call(
        workspace, "add_target", {"name": "t", "source": "./k.py:scale", "shapes": ["8"], "kwargs": huge_number}
    )
    assert failed and len(text) < 1000 and "internal error" not in text, text[:300]
    assert (workspace / "hotkernel.yaml").read_text(encoding="utf-8") == before
    cli = CliRunner().invoke(
        app, ["new", "t", "--from", "./k.py:scale", "--shape", "8", "--kwarg", "alpha=" + "z" * 1_000_000]
    )
    assert isinstance(cli.exception, HotkernelError) and len(str(cli.exception)) < 1000
    assert (workspace / "hotkernel.yaml").read_text(encoding="utf-8") == before


def test_parse_kwarg_is_bounded() -> None:
    assert parse_kwarg("eps=1e-6") == ("eps", 1e-6)
    with pytest.raises(HotkernelError, match="aliases"):
        parse_kwarg("k=[*a]")
    with pytest.raises(HotkernelError, match="NAME=VALUE"):
        parse_kwarg("lambda=1")


def test_docs_list_every_key_with_its_option_and_parameter() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "manifest.md").read_text(encoding="utf-8")
    table = docs.split("## A target", 1)[1].split("\n\n", 2)[1]
    listed: dict[str, tuple[str, str]] = {}
    for row in table.splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        names, options, params = ([part.strip(" `") for part in cell.split(",")] for cell in cells[:3])
        listed.update({name: (option, param) for name, option, param in zip(names, options, params, strict=True)})
    assert listed == {key.yaml: (key.key.cli, key.key.mcp) for key in target_keys()}


def test_competitors_take_compile_modes_and_function_refs_only() -> None:
    spec = TargetSpec.model_validate(
        {"from": "./k.py:scale", "shapes": ["8"], "competitors": ["compile", " compile-max-autotune", "./k.py:scale"]}
    )
    assert spec.competitors == ["compile", "compile-max-autotune", "./k.py:scale"]
    with pytest.raises(ValueError, match="is not a competitor; write one of compile"):
        TargetSpec.model_validate({"from": "./k.py:scale", "shapes": ["8"], "competitors": ["jit"]})
