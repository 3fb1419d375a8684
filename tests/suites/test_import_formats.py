"""``hotkernel import`` on suites in their authors' layouts (tasks and problem files written for these tests):
the level read from the folder, the Model's state, output buffers, flags, and every skip with its reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotkernel.cli.commands.import_ import summary
from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.suites import gpumode
from hotkernel.suites.importer import import_suite
from hotkernel.suites.kernelbench import folder_level
from hotkernel.workspace.paths import Workspace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KB2 = FIXTURES / "kernelbench_suite" / "level2"
GM = FIXTURES / "gpumode_problems" / "problems" / "hkdemo"


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.chdir(tmp_path)
    return Workspace(tmp_path)


def test_the_level_is_read_from_the_folder_name() -> None:
    assert folder_level(Path("/x/KernelBench/level2")) == 2
    assert folder_level(Path("/x/level_3")) == 3
    assert folder_level(Path("/x/problems")) == 1


def test_a_multi_gpu_task_says_how_many_gpus_it_needs() -> None:
    task = gpumode.read_task(GM / "multi_gpu_py")
    assert (task.gpus, task.gpus_reason) == (8, "needs 8 GPUs (tests: world_size: 8 in task.yml)")
    assert gpumode.gpus_needed({"multi_gpu": True}) == (2, "needs several GPUs (multi_gpu: true in task.yml)")
    assert gpumode.read_task(GM / "out_buffer_py").gpus == 1


def test_a_multi_gpu_task_is_skipped_with_the_reason(ws: Workspace) -> None:
    result = import_suite(ws, "gpumode", GM / "multi_gpu_py", device="cpu")
    assert result.imported == []
    assert [s.reason for s in result.skipped] == ["needs 8 GPUs (tests: world_size: 8 in task.yml)"]
    assert not ws.manifest.exists()


@pytest.mark.slow
def test_a_level_imports_with_its_state_its_scalars_and_its_flags(ws: Workspace) -> None:
    result = import_suite(ws, "kernelbench", KB2, device="cpu")
    assert [i.target for i in result.imported] == [
        "kb2_001_batchnorm_model",
        "kb2_002_deep_linear_bn_stack",
        "kb2_003_scalar_multiplication",
        "kb2_004_linear_min_clamp_dropout",
        "kb2_005_linear_dropout",
        "kb2_006_plain_attribute_rnn",
    ], result.skipped
    targets = load_manifest(ws.manifest).targets
    assert targets["kb2_002_deep_linear_bn_stack"].extra == ["state"]  # 420 tensors, one input
    assert targets["kb2_003_scalar_multiplication"].extra == ["s", "state"]
    assert (ws.root / "problems" / "kernelbench" / "level2" / "1_BatchNorm_Model.py").is_file()
    flags = {i.target: i.flags for i in result.imported}
    assert flags["kb2_001_batchnorm_model"] == []
    assert flags["kb2_004_linear_min_clamp_dropout"][0].startswith("constant output: every element is 0")
    assert flags["kb2_005_linear_dropout"][0].startswith("random output")
    lines = summary(result)
    assert any(line.startswith("flagged kb2_004_linear_min_clamp_dropout: constant output") for line in lines)


@pytest.mark.slow
def test_a_0d_output_buffer_is_named_not_shaped(ws: Workspace) -> None:
    """A 0-d tensor has no dimensions a manifest shape can write: it is a bare name in extra, left out of the
    shapes that key the cases, and still an output buffer."""
    result = import_suite(ws, "gpumode", GM / "scalar_out_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_scalar_out_py"], result.skipped
    spec = load_manifest(ws.manifest).targets["gm_hkdemo_scalar_out_py"]
    assert spec.extra == ["x1"] and spec.outputs == ["x1"]  # type: ignore[attr-defined]
    assert spec.shapes == [{"x0": "4096"}, {"x0": "16384"}]


@pytest.mark.slow
def test_an_output_buffer_of_a_gpumode_task_becomes_an_output(ws: Workspace) -> None:
    result = import_suite(ws, "gpumode", GM / "out_buffer_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_out_buffer_py"], result.skipped
    spec = load_manifest(ws.manifest).targets["gm_hkdemo_out_buffer_py"]
    assert spec.outputs == ["x2"]  # type: ignore[attr-defined]
    assert (ws.root / "problems" / "gpumode" / "hkdemo" / "eval.py").is_file()


@pytest.mark.slow
def test_a_task_whose_inputs_are_all_structured_is_named_by_a_tensor_inside_them(ws: Workspace) -> None:
    """data is a list of (x, w) tuples and nothing else (like a grouped GEMM task): each case is named by the
    first tensor of each structure, those inputs are `structured`, and the candidate says the file makes them
    (on the H100 on 2026-12-06 such a task stopped the import of all of GPU MODE's problems/ with rc 1)."""
    result = import_suite(ws, "gpumode", GM / "dict_only_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_dict_only_py"], result.skipped
    spec = load_manifest(ws.manifest).targets["gm_hkdemo_dict_only_py"]
    assert spec.shapes == [  # type: ignore[attr-defined]
        {"x0": "64x128", "x1": "64x128", "x2": "64x128"},
        {"x0": "256x64", "x1": "256x64", "x2": "256x64"},
    ]
    assert spec.structured == ["x0", "x1", "x2"]  # type: ignore[attr-defined]
    resolved = resolved_target(load_manifest(ws.manifest), "gm_hkdemo_dict_only_py")
    assert [item["shapes"] for item in resolved["inputs"]] == [None, None, None]  # no tensor of 64x128 is made
    doc = (ws.target_dir("gm_hkdemo_dict_only_py") / "candidate.py").read_text(encoding="utf-8")
    assert "x0: made by the problem file" in doc and "a tensor of the dtype" not in doc


@pytest.mark.slow
def test_a_single_dict_input_imports(ws: Workspace) -> None:
    result = import_suite(ws, "gpumode", GM / "dict_input_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_dict_input_py"], result.skipped
    spec = load_manifest(ws.manifest).targets["gm_hkdemo_dict_input_py"]
    assert (spec.input, spec.shapes, spec.structured) == ("data", [{"data": "64x128"}], ["data"])  # type: ignore[attr-defined]


@pytest.mark.slow
def test_a_task_that_cannot_be_a_target_is_skipped_and_the_rest_of_the_folder_imports(ws: Workspace) -> None:
    """multi_gpu_py needs more GPUs than one: it is skipped with that reason, and every other task of the folder
    is imported (grouped_py, whose buffers lie inside a list of tuples, too)."""
    result = import_suite(ws, "gpumode", GM, device="cpu")
    reasons = {Path(s.problem).name: s.reason for s in result.skipped}  # each skip names the task folder
    assert set(reasons) == {"multi_gpu_py"}, reasons
    imported = {i.target for i in result.imported}
    assert {"gm_hkdemo_dict_only_py", "gm_hkdemo_grouped_py", "gm_hkdemo_out_buffer_py"} <= imported
    assert set(load_manifest(ws.manifest).targets) == imported


@pytest.mark.slow
def test_buffers_inside_a_list_of_tuples_are_outputs_by_their_path_in_every_case(ws: Workspace) -> None:
    """grouped_py writes each group's result into the c of (a, b, c) in a list: each c is an output by its path,
    for every case (4 groups in the first benchmark, 2 in the second), and the candidate says so."""
    result = import_suite(ws, "gpumode", GM / "grouped_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_grouped_py"], result.skipped
    spec = load_manifest(ws.manifest).targets["gm_hkdemo_grouped_py"]
    assert spec.outputs == ["x0[0][2]", "x0[1][2]", "x0[2][2]", "x0[3][2]"]  # type: ignore[attr-defined]
    doc = " ".join((ws.target_dir("gm_hkdemo_grouped_py") / "candidate.py").read_text(encoding="utf-8").split())
    assert "inside it, [0][2], [1][2], [2][2], [3][2] are destination buffers" in doc


@pytest.mark.slow
def test_a_config_before_the_tensors_is_a_structured_first_input(ws: Workspace) -> None:
    """data = (config dict, x): the first input holds no tensor, so the headline shape names x and the config is
    `structured`; the loader takes a headline without the first input only then."""
    result = import_suite(ws, "gpumode", GM / "config_first_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_config_first_py"], result.skipped
    spec = load_manifest(ws.manifest).targets["gm_hkdemo_config_first_py"]
    assert (spec.input, spec.shapes, spec.structured) == ("x0", [{"x1": "1024x1024"}], ["x0"])  # type: ignore[attr-defined]
