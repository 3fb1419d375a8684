"""Most GPU MODE tasks make their inputs on CUDA themselves (``torch.Generator(device="cuda")``,
``device="cuda"``, ``.cuda()``): as a cpu target such a task's inputs are made on the cpu from the same seeds,
and the import says so (a task written for these tests in GPU MODE's layout)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from hotkernel.manifest import load_manifest
from hotkernel.run.runner import run_script
from hotkernel.suites.importer import import_suite
from hotkernel.workspace.paths import Workspace

GM = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode_problems" / "problems" / "hkdemo"
TASK = GM / "cuda_made_py"
MOVED_FLAG = (
    'generate_input makes its tensors on CUDA itself (device="cuda", .cuda(), a CUDA generator); for this cpu target '
    "they are made on cpu, from the same seeds"
)


def test_each_way_of_asking_for_cuda_gets_the_targets_device() -> None:
    torch = pytest.importorskip("torch")
    from hotkernel.contract.problems import made_on

    real = torch.Generator
    with made_on(torch, "cpu") as moved:
        gen = torch.Generator(device="cuda")
        made = [
            torch.randn(2, device="cuda", generator=gen.manual_seed(1)),
            torch.zeros(2).cuda(),
            torch.ones(2).to("cuda", torch.float64),
            torch.ones(2).to(device="cuda:0"),
            torch.empty(2, device=torch.device("cuda")),
        ]
        assert torch.ones(2).to("cpu").device.type == "cpu"  # a request for the cpu is no move
    assert gen.device.type == "cpu" and [t.device.type for t in made] == ["cpu"] * 5
    assert made[2].dtype == torch.float64
    assert moved.moved == 6  # the generator and the five tensors
    assert torch.Generator is real
    assert torch.equal(made[0], torch.randn(2, generator=torch.Generator().manual_seed(1)))  # same seed, same data


def test_a_cuda_target_is_left_as_it_is() -> None:
    torch = pytest.importorskip("torch")
    from hotkernel.contract.problems import made_on

    real = torch.Generator
    with made_on(torch, "cuda") as moved:
        assert torch.Generator is real
        assert torch.ones(2, device="cpu").device.type == "cpu"
    assert moved.moved == 0


def test_a_generator_that_raises_still_gives_the_real_generator_back() -> None:
    torch = pytest.importorskip("torch")
    from hotkernel.contract.problems import made_on

    real = torch.Generator
    with pytest.raises(ValueError, match="boom"), made_on(torch, "cpu"):
        raise ValueError("boom")
    assert torch.Generator is real


def test_the_same_seed_makes_the_same_inputs_in_every_process_role() -> None:
    """The worker and the judge make one set each from its seed: both must be the same tensors."""
    torch = pytest.importorskip("torch")
    from hotkernel.contract.problems import load_problem

    problem = load_problem(str(TASK / "reference.py"), "/", [{"size": 16}])
    one = problem.inputs(torch, 0, 1234, "cpu", torch.float32)
    two = problem.inputs(torch, 0, 1234, "cpu", torch.float32)
    assert [t.device.type for t in one] == ["cpu"] * 4
    assert all(torch.equal(a, b) for a, b in zip(one[:3], two[:3], strict=True))
    assert not torch.equal(one[0], problem.inputs(torch, 0, 4321, "cpu", torch.float32)[0])


@pytest.mark.slow
def test_a_task_that_makes_cuda_tensors_imports_and_runs_as_a_cpu_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ws = Workspace(tmp_path)
    result = import_suite(ws, "gpumode", TASK, device="cpu")
    [item] = result.imported
    assert item.target == "gm_hkdemo_cuda_made_py", result.skipped
    assert MOVED_FLAG in item.flags
    spec = load_manifest(ws.manifest).targets[item.target]
    assert spec.device == "cpu" and spec.outputs == ["x3"]
    python = os.environ.get("HOTKERNEL_PYTHON", sys.executable)
    outcome = run_script(ws, f"targets/{item.target}/candidate.py", python=python, timeout_s=120)
    assert outcome.run is not None and outcome.run["status"] == "ok", (outcome.status, outcome.reason)
