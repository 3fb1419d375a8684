"""A problem file's probe becomes manifest keys (``problem_fields`` / ``fill_problem``): tensors as
``name:shape``, scalars, structured inputs and a KernelBench Model's ``state`` as bare names, the inputs a GPU
MODE reference writes into as ``outputs``; the real probe runs on problem files written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.manifest.load import check_target_fields
from hotkernel.manifest.problem import ManifestProblem
from hotkernel.run.targets import fill_problem, problem_fields
from hotkernel.workspace.paths import Workspace

SCALAR_BN_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x, scale):
        return self.bn(x) * scale


batch_size = 32
features = 16


def get_inputs():
    return [torch.randn(batch_size, features), 1.5]


def get_init_inputs():
    return [features]
"""
BUFFER_TASK = """import torch


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(size, generator=gen), torch.empty(size)


def ref_kernel(data):
    x, out = data
    out[...] = torch.relu(x) * 2
    return out
"""


def tensor(name: str, shape: list[int]) -> dict:
    return {"name": name, "kind": "tensor", "shape": shape, "dtype": "float32", "floating": True}


def test_kinds_map_to_extras_rotate_and_outputs() -> None:
    probe = {
        "shapes": [
            [
                tensor("a", [8, 4]),
                {"name": "s", "kind": "scalar", "value": 2.0},
                {"name": "cfg", "kind": "tree", "leaves": []},
                {"name": "state", "kind": "state", "tensors": 3, "bytes": 96},
            ]
        ],
        "destinations": [],
        "cases": None,
    }
    fields = problem_fields(probe, {"from": "./p.py"})
    assert fields["input"] == "a" and fields["shapes"] == ["8x4"]
    assert fields["extra"] == ["s", "cfg", "state"]
    assert fields["rotate"] == ["a", "s", "cfg"]
    assert "outputs" not in fields


def test_gpumode_destinations_become_outputs_and_cases_name_shapes_by_tensor() -> None:
    probe = {
        "shapes": [[tensor("x0", [64]), tensor("x1", [64])], [tensor("x0", [128]), tensor("x1", [128])]],
        "destinations": ["x1"],
        "cases": [{"size": 64}, {"size": 128}],
    }
    fields = problem_fields(probe, {"from": "./t.py"})
    assert fields["outputs"] == ["x1"] and fields["extra"] == ["x1:64"]
    assert fields["shapes"] == [{"x0": "64", "x1": "64"}, {"x0": "128", "x1": "128"}]
    probe = {"shapes": [[{"name": "data", "kind": "tree", "leaves": []}, tensor("w", [4])]], "cases": [{"n": 4}]}
    fields = problem_fields(probe, {})  # a first input with no tensor (a config dict) is structured, unnamed
    assert (fields["shapes"], fields["structured"]) == ([{"w": "4"}], ["data"])
    scalar = {"shapes": [[{"name": "alpha", "kind": "scalar", "value": 0.5}, tensor("w", [4])]], "cases": [{"n": 4}]}
    with pytest.raises(HotkernelError, match="alpha: the first input is a scalar without dimensions"):
        problem_fields(scalar, {})


def test_old_probe_entries_still_map() -> None:
    probe = {"shapes": [[{"name": "x", "shape": [4, 4]}, {"name": "fc_weight", "shape": [4, 4], "param": "fc.weight"}]]}
    fields = problem_fields(probe, {})
    assert fields["extra"] == ["fc_weight:4x4"] and fields["rotate"] == ["x"]


def test_a_buffer_inside_a_structured_input_is_an_output_by_its_path(tmp_path: Path) -> None:
    probe = {
        "shapes": [[tensor("x", [4]), {"name": "data", "kind": "tree", "leaves": []}]],
        "destinations": ["data['out']"],
    }
    fields = problem_fields(probe, {})
    assert fields["outputs"] == ["data['out']"]
    fields = {**fields, "from": "./problems/task.py", "dtype": "fp32"}
    check_target_fields("buf", fields, None)
    said = r"dat\['out'\]\" names no input of the kernel; did you mean 'data'\? inputs: x, data"
    with pytest.raises(ManifestProblem, match=said):
        check_target_fields("buf", {**fields, "outputs": ["dat['out']"]}, None)


@pytest.mark.slow
def test_real_probe_of_a_scalar_batchnorm_model_and_a_buffer_task(tmp_path: Path) -> None:
    (tmp_path / "problems").mkdir()
    (tmp_path / "problems" / "bn.py").write_text(SCALAR_BN_PROBLEM)
    (tmp_path / "problems" / "buf.py").write_text(BUFFER_TASK)
    ws = Workspace(tmp_path)
    fields = fill_problem(ws, {"from": "./problems/bn.py", "device": "cpu"})
    assert (fields["input"], fields["shapes"], fields["extra"]) == ("x", ["32x16"], ["scale", "state"])
    assert fields["rotate"] == ["x", "scale"] and "outputs" not in fields
    check_target_fields("bn", fields, tmp_path)
    fields = fill_problem(ws, {"from": "./problems/buf.py", "device": "cpu", "cases": [{"size": 256}]})
    assert fields["outputs"] == ["x1"] and fields["rotate"] == ["x0", "x1"]
    check_target_fields("buf", fields, tmp_path)
