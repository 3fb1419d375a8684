"""The MCP import_suite tool: the same library function as ``hotkernel import``, errors as tool errors."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from hotkernel.manifest import load_manifest

GPUMODE = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode_task" / "demo" / "scaled_relu"


def _call(root: Path, arguments: dict, tool: str = "import_suite") -> tuple[bool, str, dict | None]:
    pytest.importorskip("mcp")
    from mcp import Client

    from hotkernel.mcp.app import build_server

    async def run() -> tuple[bool, str, dict | None]:
        async with Client(build_server(root)) as client:
            result = await client.call_tool(tool, arguments)
            text = "\n".join(getattr(c, "text", "") for c in result.content)
            return result.is_error, text, result.structured_content

    return anyio.run(run)


def test_a_missing_suite_directory_is_a_tool_error(tmp_path: Path) -> None:
    failed, text, _ = _call(tmp_path, {"suite": "kernelbench", "directory": "nowhere"})
    assert failed and "nowhere is not a directory" in text
    assert not (tmp_path / "hotkernel.yaml").exists()


@pytest.mark.slow
def test_import_suite_adds_the_gpumode_task(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)  # the probe runs in the user's python: this one has torch
    failed, text, data = _call(tmp_path, {"suite": "gpumode", "directory": str(GPUMODE), "device": "cpu"})
    assert not failed, text
    assert data is not None and [i["target"] for i in data["imported"]] == ["gm_demo_scaled_relu"]
    assert "gm_demo_scaled_relu" in load_manifest(tmp_path / "hotkernel.yaml").targets


MULTI_GPU = (
    Path(__file__).resolve().parents[1] / "fixtures" / "gpumode_problems" / "problems" / "hkdemo" / "multi_gpu_py"
)


def test_import_suite_lists_a_skip_with_its_reason(tmp_path: Path) -> None:
    failed, text, data = _call(tmp_path, {"suite": "gpumode", "directory": str(MULTI_GPU), "device": "cpu"})
    assert not failed, text
    assert data is not None and data["imported"] == []
    assert data["skipped"][0]["reason"] == "needs 8 GPUs (tests: world_size: 8 in task.yml)"


DICT_ONLY = MULTI_GPU.parent / "dict_only_py"


@pytest.mark.slow
def test_a_structured_task_is_reported_as_the_candidate_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """import_suite names the structured inputs (what each case's headline is) and show_target says each input as
    the rendered candidate does: made by the problem file, not a tensor of the label's shape."""
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    failed, text, data = _call(tmp_path, {"suite": "gpumode", "directory": str(DICT_ONLY), "device": "cpu"})
    assert not failed, text
    shapes = ["x0: tuple of 2 tensors, the first 64x128", "x0: tuple of 2 tensors, the first 256x64"]
    assert data is not None and data["imported"][0]["shapes"] == shapes
    failed, text, shown = _call(tmp_path, {"target": "gm_hkdemo_dict_only_py"}, tool="show_target")
    assert not failed and shown is not None, text
    assert "x0: made by the problem file" in shown["parameters"] and "a tensor of" not in shown["parameters"]
    assert [item["shapes"] for item in shown["spec"]["inputs"]] == [None, None, None]
