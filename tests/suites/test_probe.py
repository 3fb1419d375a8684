"""The probe (``hk_contract.probe_problem``) on problem files written in the suites' own layouts: every input
described (tensors, Python scalars, dict inputs, the Model's state as one entry), destination buffers, the
real-run fallback for data-dependent shapes, flags for constant and random outputs; and the real KernelBench
files of ../shared/kernelbench read in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hotkernel.contract import limits, probe  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KB2 = FIXTURES / "kernelbench_suite" / "level2"
GM = FIXTURES / "gpumode_problems" / "problems" / "hkdemo"
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "kernelbench"
needs_kb = pytest.mark.skipif(not SHARED.is_dir(), reason=f"KernelBench not at {SHARED}")


def run(path: Path, cases: list[dict[str, Any]] | None = None, scale: float | None = None) -> dict[str, Any]:
    return probe.probe_problem(torch, str(path), scale, cases, "cpu")


def by_name(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in entries}


def test_a_batchnorm_model_has_its_state_as_one_entry_in_training_mode() -> None:
    reply = run(KB2 / "1_BatchNorm_Model.py")
    entries = reply["shapes"][0]
    assert [e["name"] for e in entries] == ["x", "state"]
    assert entries[-1] == {"name": "state", "kind": "state", "tensors": 5, "bytes": (4 * 8 * 4) + 8}
    assert reply["mode"] == "train" and reply["how"] == "meta" and reply["flags"] == []


def test_a_model_with_hundreds_of_tensors_is_one_state_entry() -> None:
    entries = run(KB2 / "2_Deep_Linear_BN_Stack.py")["shapes"][0]
    assert len(entries) == 2 and entries[1]["kind"] == "state" and entries[1]["tensors"] == 420


def test_tensors_kept_as_plain_attributes_join_the_state_as_buffers() -> None:
    entries = run(KB2 / "6_Plain_Attribute_RNN.py")["shapes"][0]
    assert [e["name"] for e in entries] == ["x", "initial_hidden", "state"]
    # cell.weight, cell.bias, then the two plain attributes hidden (4x10) and h0 (2x4x10)
    assert entries[-1] == {"name": "state", "kind": "state", "tensors": 4, "bytes": 4 * (10 * 22 + 10 + 40 + 80)}


def test_a_python_scalar_input_is_a_scalar_entry() -> None:
    entries = by_name(run(KB2 / "3_Scalar_Multiplication.py")["shapes"][0])
    assert entries["A"]["kind"] == "tensor" and entries["A"]["shape"] == [128, 96]
    assert entries["s"] == {"name": "s", "kind": "scalar", "value": 2.5}
    assert entries["state"]["tensors"] == 0


def test_a_constant_output_and_a_random_output_are_flagged() -> None:
    constant = run(KB2 / "4_Linear_Min_Clamp_Dropout.py")["flags"]
    assert any(flag.startswith("constant output: every element is 0") for flag in constant), constant
    random = run(KB2 / "5_Linear_Dropout.py")["flags"]
    assert any(flag.startswith("random output") and "Dropout(p=0.5)" in flag for flag in random), random
    assert run(KB2 / "3_Scalar_Multiplication.py")["flags"] == []


def test_scale_shrinks_every_large_dimension_not_only_the_batch() -> None:
    reply = run(KB2 / "5_Linear_Dropout.py", scale=0.25)
    assert reply["cases"] == [{"batch_size": 128, "in_features": 1024, "out_features": 512}]
    assert reply["shapes"][0][0]["shape"] == [128, 1024]
    assert reply["shapes"][0][1]["bytes"] == (1024 * 512 + 512) * 4  # the weights shrink too


FIXED_SIZE_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, image_size=256):
        super().__init__()
        self.image_size = image_size  # as Swin's img_size: fixed in __init__, not taken from get_init_inputs
        self.proj = nn.Linear(image_size, features)
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        assert x.shape[-1] == self.image_size, f"Input image size {x.shape[-1]} doesn't match model"
        return self.bn(self.proj(x))


batch_size = 128
image_size = 256
features = 512


def get_inputs():
    return [torch.randn(batch_size, image_size)]


def get_init_inputs():
    return [features]
"""


def test_a_scale_that_breaks_the_forward_falls_back_and_says_why(tmp_path: Path) -> None:
    """--scale whose shapes the Model's forward rejects (an image size the Model fixes; KernelBench level 3's
    29_SwinMLP, whose scaled A/A crashed at its first run) is not used: the next candidate (the batch alone)
    is, and the flags say why."""
    file = tmp_path / "fixed_size.py"
    file.write_text(FIXED_SIZE_PROBLEM)
    reply = run(file, scale=0.25)
    assert reply["cases"] == [{"batch_size": 32}]
    assert reply["shapes"][0][0]["shape"] == [32, 256]
    failed = [flag for flag in reply["flags"] if flag.startswith("--scale of batch_size, features, image_size")]
    assert failed and "the forward at these shapes raised AssertionError: Input image size 64" in failed[0], reply
    assert "--scale shrank only batch_size" in reply["flags"]
    # where the batch alone breaks it too (BatchNorm of one value per channel), the shipped shapes, described
    small = tmp_path / "fixed_size_batch_2.py"
    small.write_text(FIXED_SIZE_PROBLEM.replace("batch_size = 128", "batch_size = 2"))
    reply = run(small, scale=0.25)
    assert reply["cases"] is None and reply["shapes"][0][0]["shape"] == [2, 256], reply
    assert sum(flag.startswith("--scale of") and "failed" in flag for flag in reply["flags"]) == 2


def test_an_output_buffer_in_data_is_a_destination() -> None:
    reply = run(GM / "out_buffer_py" / "reference.py", [{"size": 64}, {"size": 128}])
    assert reply["destinations"] == ["x2"] and reply["how"] == "fake"
    assert [e["name"] for e in reply["shapes"][1]] == ["x0", "x1", "x2"]
    assert reply["shapes"][1][2]["shape"] == [128, 128]


def test_a_reference_that_returns_a_new_tensor_has_no_destination() -> None:
    assert run(GM / "alias_py" / "reference.py", [{"rows": 4, "cols": 8}])["destinations"] == []


def test_a_dict_input_is_one_tree_entry_with_its_tensor_leaves() -> None:
    (entry,) = run(GM / "dict_input_py" / "reference.py", [{"rows": 4, "cols": 8}])["shapes"][0]
    assert entry["name"] == "data" and entry["kind"] == "tree" and entry["type"] == "dict"
    assert [(leaf["path"], leaf["shape"]) for leaf in entry["leaves"]] == [("['x']", [4, 8]), ("['w']", [8])]


def test_data_dependent_shapes_fall_back_to_one_real_run() -> None:
    reply = run(GM / "data_dependent_py" / "reference.py", [{"size": 100}])
    assert reply["how"] == "real"
    (entry,) = reply["shapes"][0]
    assert 50 <= entry["shape"][0] < 100
    assert reply["outputs"][0]["shape"] == [1]


def test_a_real_run_that_would_not_fit_is_refused_with_the_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "probe_free_bytes", lambda torch, device: 1000)
    with pytest.raises(ValueError, match=r"needs about 0\.00 GiB on cpu, 0\.00 GiB free"):
        run(GM / "data_dependent_py" / "reference.py", [{"size": 100}])


def test_a_reference_under_another_name_is_found_through_check_implementation() -> None:
    reply = run(GM / "alias_py" / "reference.py", [{"rows": 4, "cols": 8}])
    assert reply["reference"] == "check_implementation" and reply["outputs"][0]["shape"] == [4, 8]


def test_two_candidate_references_are_ambiguous(tmp_path: Path) -> None:
    file = tmp_path / "reference.py"
    file.write_text(
        "import torch\n\ndef generate_input(n, seed):\n    return (torch.ones(n),)\n\n"
        "def reference(data):\n    return data[0]\n\ndef ref(data):\n    return data[0]\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"several references \(reference, ref\); name one ref_kernel"):
        run(file, [{"n": 4}])


def test_structured_values_are_described_leaf_by_leaf() -> None:
    from dataclasses import dataclass

    @dataclass
    class Config:
        x: Any
        k: int

    class Plain:
        def __init__(self) -> None:
            self.weights = [torch.ones(2, 3), torch.zeros(4)]
            self.alpha = 0.5

    entry = probe.describe(torch, "x0", (Config(torch.ones(5), 3), Plain()))
    assert [(leaf["path"], leaf["shape"]) for leaf in entry["leaves"]] == [
        ("[0].x", [5]),
        ("[1].weights[0]", [2, 3]),
        ("[1].weights[1]", [4]),
    ]
    assert probe.describe(torch, "t", torch.tensor(1.5)) == {
        "name": "t",
        "kind": "tensor",
        "shape": [],
        "dtype": "float32",
        "floating": True,
    }


@needs_kb
@pytest.mark.parametrize("name", ["5_Matrix_scalar_multiplication.py", "33_BatchNorm.py"])
def test_the_level_1_problems_that_were_skipped_now_probe(name: str) -> None:
    reply = run(SHARED / "level1" / name)
    kinds = [entry["kind"] for entry in reply["shapes"][0]]
    assert kinds[-1] == "state" and reply["mode"] == "train"
    if name.startswith("5_"):
        assert kinds == ["tensor", "scalar", "state"]
    else:
        assert reply["shapes"][0][-1]["tensors"] == 5  # weight, bias, running_mean, running_var, num_batches_tracked


CUDA_ONLY_TASK = """import torch


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    return (torch.randn(size, device="cuda", generator=gen),)


def ref_kernel(data):
    return data[0] * torch.full((1,), 2.0, device="cuda")
"""


@pytest.mark.skipif(torch.cuda.is_available(), reason="the hint is for a torch without a GPU")
def test_a_task_that_needs_cuda_beyond_its_inputs_says_where_to_import_it(tmp_path: Path) -> None:
    """GPU MODE's references build their data on ``device="cuda"``, which a cpu target moves (``made_on``); a
    reference that makes CUDA tensors itself cannot run on a torch without a GPU: the reason says the step, and
    the one fix, in one line."""
    task = tmp_path / "reference.py"
    task.write_text(CUDA_ONLY_TASK)
    with pytest.raises(ValueError) as raised:
        probe.probe_problem(torch, str(task), None, [{"size": 64}], "cpu")
    reason = str(raised.value)
    assert reason.startswith(f"{task}:11: the reference on {{'size': 64}} (a real run on cpu) raised "), reason
    assert reason.endswith("import it on a machine with an NVIDIA GPU") and "\n" not in reason
    assert len(reason) < 500, reason  # PyTorch's CUDA errors run on for a paragraph: their first sentence
    inputs_only = tmp_path / "inputs_only.py"  # a file of its own: a process loads a problem file once
    inputs_only.write_text(CUDA_ONLY_TASK.replace(' * torch.full((1,), 2.0, device="cuda")', " * 2"))
    found = probe.probe_problem(torch, str(inputs_only), None, [{"size": 64}], "cpu")  # its inputs alone name CUDA
    assert [entry["shape"] for entry in found["shapes"][0]] == [[64]]
    assert any(flag.startswith("generate_input makes its tensors on CUDA itself") for flag in found["flags"])


def test_an_output_that_overflows_is_flagged_at_import_even_when_fake_tensors_told_its_shapes() -> None:
    # shapes come from FakeTensorMode; one real run of the smallest case on the CPU finds the overflow (GPU MODE's
    # helion/kda, an exploding recurrence, was first met in a verify on the H100)
    reply = run(GM / "overflow_py" / "reference.py", [{"steps": 512, "width": 8}])
    assert reply["how"] == "fake"
    assert reply["flags"] == ["the reference output holds NaN or inf"]
    assert reply["flag_run"].startswith("real run on cpu")


def test_nan_in_an_output_is_not_taken_for_a_random_output() -> None:
    # NaN != NaN: the same output compared with itself must not read as "the same inputs give other outputs"
    out = torch.tensor([1.0, float("nan"), float("inf")])
    assert probe.signal_flags(torch, out, out.clone(), []) == ["the reference output holds NaN or inf"]
    other = torch.tensor([1.0, float("nan"), 2.0])
    assert any(flag.startswith("random output") for flag in probe.signal_flags(torch, out, other, []))


def test_files_that_import_each_other_are_named_both_on_one_line(tmp_path: Path) -> None:
    """GPU MODE's amd/mla as shipped: reference.py imports task.py, which imports reference.py."""
    (tmp_path / "task.py").write_text("from reference import Config\ninput_t = tuple\n")
    (tmp_path / "reference.py").write_text(
        "from task import input_t\n\nclass Config:\n    pass\n\ndef ref_kernel(data):\n    return data\n"
    )
    with pytest.raises(ValueError) as caught:
        run(tmp_path / "reference.py")
    line = str(caught.value)
    assert line.startswith(f"{tmp_path / 'reference.py'}:1: reference.py and task.py import each other"), line
    assert "imports 'input_t' from it" in line and "third file" in line and "\n" not in line


def test_a_case_whose_buffers_fake_tensors_cannot_tell_is_flagged_not_dropped(tmp_path: Path) -> None:
    """The first case's destination is told under FakeTensorMode; the second case's reference is data dependent
    there, so its buffers are unknown: a flag says so and what to write, instead of nothing."""
    task = tmp_path / "reference.py"
    task.write_text(
        "import torch\n\n"
        "def ref_kernel(data):\n"
        "    a, out = data\n"
        "    if a.shape[0] > 8:\n"
        "        a = a[a.nonzero()[:, 0]] if a.nonzero().shape[0] else a\n"
        "    out[: a.shape[0]].copy_(a * 2)\n"
        "    return out\n\n"
        "def generate_input(size, seed):\n"
        "    gen = torch.Generator().manual_seed(seed)\n"
        "    return torch.randn(size, generator=gen), torch.empty(size)\n"
    )
    reply = run(task, [{"size": 4}, {"size": 16}])
    assert reply["how"] == "fake" and reply["destinations"] == ["x1"]
    (flag,) = [flag for flag in reply["flags"] if "are not known" in flag]
    assert flag.startswith("the output buffers of case {'size': 16} are not known: its reference fails under ")
    assert "add their paths to the target's `outputs`" in flag
