"""Module problems and suite imports: KernelBench level-1 files (read from ../shared/kernelbench, never copied
into the repository) and a GPU MODE task of our own, imported and run end to end on the CPU; every bad input
gets its one-line error."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hotkernel.cli.app import app
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest
from hotkernel.run.runner import JudgeProcess, run_script
from hotkernel.suites.importer import import_suite
from hotkernel.workspace.paths import Workspace

KB = Path(__file__).resolve().parents[2].parent / "shared" / "kernelbench" / "level1"
GPUMODE = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode_task" / "demo" / "scaled_relu"
needs_kb = pytest.mark.skipif(not KB.is_dir(), reason=f"KernelBench level 1 not at {KB}")


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.delenv("HOTKERNEL_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    return Workspace(tmp_path)


def python() -> str:
    return os.environ.get("HOTKERNEL_PYTHON", sys.executable)


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JudgeProcess]:
    """One judge for the module's runs: each target has a name of its own, so nothing the judge keeps per target
    (its imported functions, expected outputs, the baseline's error) is shared between two of them."""
    with JudgeProcess(Workspace(tmp_path_factory.mktemp("judge")), python=python()) as judge:
        yield judge


def run_target(ws: Workspace, name: str, judge: JudgeProcess) -> dict:
    """One run of the target's candidate through the runner (worker, judge, checks, the workspace's hashes before
    and after); the run JSON, or the status and reason of a run that gave none."""
    outcome = run_script(ws, f"targets/{name}/candidate.py", python=python(), judge=judge, timeout_s=120)
    return outcome.run if outcome.run is not None else {"ok": False, "status": outcome.status, "reason": outcome.reason}


def new(*args: str) -> object:
    return CliRunner().invoke(app, ["new", *args])


def edit_candidate(ws: Workspace, name: str, old: str, replacement: str) -> None:
    """Replace the rendered candidate's ``old`` line; the edit must land, or the test would judge the baseline."""
    path = ws.target_dir(name) / "candidate.py"
    text = path.read_text(encoding="utf-8")
    assert old in text, text
    path.write_text(text.replace(old, replacement), encoding="utf-8")


# ---- bad input: one line, naming the file (and line) and the fix ---------------------------------------------


def test_a_file_without_model_or_get_inputs_is_named(ws: Workspace) -> None:
    (ws.root / "p.py").write_text("import torch\n\ndef f(x):\n    return x\n", encoding="utf-8")
    result = new("t", "--from", "./p.py", "--shape", "8")
    assert isinstance(result.exception, HotkernelError)
    assert "p.py is not a problem file: it defines no Model, get_inputs, get_init_inputs" in str(result.exception)
    assert not (ws.root / "hotkernel.yaml").exists()


@pytest.mark.slow
def test_get_inputs_that_raises_names_the_file_and_line(ws: Workspace) -> None:
    (ws.root / "p.py").write_text(
        "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n\n"
        "def get_inputs():\n    raise ValueError('no inputs today')\n\ndef get_init_inputs():\n    return []\n",
        encoding="utf-8",
    )
    result = new("t", "--from", "./p.py")
    assert isinstance(result.exception, HotkernelError)
    assert f"{ws.root}/p.py:8: get_inputs() raised ValueError: no inputs today" in str(result.exception)
    assert not (ws.root / "hotkernel.yaml").exists()


@pytest.mark.slow
def test_an_input_that_is_no_tensor_scalar_or_container_is_refused(ws: Workspace) -> None:
    body = (
        "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x, y):\n        return x\n\n"
        "def get_inputs():\n    return [torch.rand(4), {inp}]\n\ndef get_init_inputs():\n    return []\n"
    )
    (ws.root / "a.py").write_text(body.format(inp="print"), encoding="utf-8")
    (ws.root / "b.py").write_text(body.format(inp="3"), encoding="utf-8")
    a, b = new("a", "--from", "./a.py", "--device", "cpu"), new("b", "--from", "./b.py", "--device", "cpu")
    assert "a.py: get_inputs() item 1 (y): the value is a builtin_function_or_method" in str(a.exception)
    assert b.exit_code == 0, b.output  # a Python scalar is a constant of the case
    assert load_manifest(ws.manifest).targets["b"].extra == ["y", "state"]


def test_a_suite_directory_that_does_not_exist(ws: Workspace, tmp_path: Path) -> None:
    with pytest.raises(HotkernelError, match="kernelbench: .*nowhere is not a directory"):
        import_suite(ws, "kernelbench", tmp_path / "nowhere")
    with pytest.raises(HotkernelError, match="gpumode: .*nowhere is not a directory"):
        import_suite(ws, "gpumode", tmp_path / "nowhere")
    (tmp_path / "task").mkdir()
    with pytest.raises(HotkernelError, match="gpumode: no task.yml in .*task or in the folders one or two levels"):
        import_suite(ws, "gpumode", tmp_path / "task")
    (tmp_path / "task" / "task.yml").write_text("benchmarks: [{size: 4}]\n", encoding="utf-8")
    with pytest.raises(HotkernelError, match="reference.py not found; a task folder holds task.yml and reference.py"):
        import_suite(ws, "gpumode", tmp_path / "task")


@needs_kb
def test_unknown_problem_numbers_and_cases_without_a_problem(ws: Workspace) -> None:
    result = CliRunner().invoke(app, ["import", "kernelbench", str(KB), "--problems", "19,555"])
    assert "no problem 555" in str(result.exception)
    (ws.root / "k.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    result = new("t", "--from", "./k.py:f", "--shape", "8", "--case", "batch_size=2")
    assert "cases go with a module problem" in str(result.exception)


# ---- end to end on the CPU -----------------------------------------------------------------------------------


@pytest.mark.slow
@needs_kb
def test_kernelbench_import_scales_the_batch_and_runs_correct(ws: Workspace, judge: JudgeProcess) -> None:
    """ReLU, a matmul and cross-entropy (integer labels, a scalar output) imported and judged ok."""
    result = import_suite(ws, "kernelbench", KB, problems=[1, 19, 95, 33], scale=0.0005, device="cpu")
    names = [item.target for item in result.imported]
    assert names == [
        "kb1_001_square_matrix_multiplication",
        "kb1_019_relu",
        "kb1_095_crossentropyloss",
        "kb1_033_batchnorm",
    ], result.skipped
    assert result.skipped == []
    manifest = load_manifest(ws.manifest)
    ce = manifest.targets["kb1_095_crossentropyloss"]
    assert ce.cases and ce.cases[0]["batch_size"] == 16  # every large dimension shrinks, the batch among them
    assert ce.extra[0] == "targets:16" and ce.extra[-1] == "state" and ce.rotate == ["predictions", "targets"]
    assert (ws.root / "problems/kernelbench/level1/95_CrossEntropyLoss.py").read_bytes() == (
        KB / "95_CrossEntropyLoss.py"
    ).read_bytes()
    for name in ("kb1_001_square_matrix_multiplication", "kb1_095_crossentropyloss"):
        run = run_target(ws, name, judge)
        assert run["ok"] and run["status"] == "ok", (name, run.get("reason"))
        assert run["reference_precision"] == "fp64"


@pytest.mark.slow
@needs_kb
def test_a_module_with_parameters_takes_them_as_inputs(ws: Workspace, judge: JudgeProcess) -> None:
    """LayerNorm: ln.weight and ln.bias come after x, made under the contract's seeds; the skeleton shows them."""
    (ws.root / "kb").mkdir()
    (ws.root / "kb" / "ln.py").write_text((KB / "40_LayerNorm.py").read_text(encoding="utf-8"), encoding="utf-8")
    result = new("ln", "--from", "./kb/ln.py", "--case", "batch_size=2,features=4,dim1=8,dim2=8", "--device", "cpu")
    assert result.exit_code == 0, result.output
    spec = load_manifest(ws.manifest).targets["ln"]
    assert spec.shapes == ["2x4x8x8"] and spec.extra == ["state"]  # ln.weight and ln.bias, one mapping
    assert spec.rotate == ["x"]
    candidate = (ws.target_dir("ln") / "candidate.py").read_text(encoding="utf-8")
    assert "def kernel(x, state" in candidate
    run = run_target(ws, "ln", judge)
    assert run["ok"] and run["status"] == "ok", run.get("reason")


@pytest.mark.slow
@needs_kb
def test_a_wrong_candidate_of_a_module_problem_is_incorrect(ws: Workspace, judge: JudgeProcess) -> None:
    (ws.root / "sm.py").write_text((KB / "23_Softmax.py").read_text(encoding="utf-8"), encoding="utf-8")
    assert new("sm", "--from", "./sm.py", "--case", "batch_size=2,dim=256", "--device", "cpu").exit_code == 0
    softmax = "\ndef kernel(x, state):\n    return torch.softmax(x, dim=1) + 0.01\n"
    edit_candidate(ws, "sm", "\nkernel = _baseline_kernel\n", softmax)
    run = run_target(ws, "sm", judge)
    assert run["status"] == "incorrect", run.get("reason")


@pytest.mark.slow
def test_gpumode_task_imports_one_target_with_its_benchmarks_and_tolerances(ws: Workspace, judge: JudgeProcess) -> None:
    result = import_suite(ws, "gpumode", GPUMODE, device="cpu")
    assert [item.target for item in result.imported] == ["gm_demo_scaled_relu"], result.skipped
    spec = load_manifest(ws.manifest).targets["gm_demo_scaled_relu"]
    assert spec.cases == [{"rows": 16, "cols": 128}, {"rows": 32, "cols": 256}]
    assert (spec.atol, spec.rtol, spec.dtype) == (0.02, 0.02, "fp16")
    assert spec.shapes == [{"x0": "16x128", "x1": "16"}, {"x0": "32x256", "x1": "32"}]
    run = run_target(ws, "gm_demo_scaled_relu", judge)
    assert run["ok"] and run["status"] == "ok", run.get("reason")


EMBEDDING = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num, dim):
        super().__init__()
        self.emb = nn.Embedding(num, dim)

    def forward(self, idx):
        return self.emb(idx)


num = 50
batch_size = 64


def get_inputs():
    return [torch.randint(0, num, (batch_size, 8))]


def get_init_inputs():
    return [num, 16]
"""


@pytest.mark.slow
def test_index_inputs_stay_in_range_under_the_perturbation(ws: Workspace, judge: JudgeProcess) -> None:
    """The perturbed input is the index tensor itself: a standard-normal tail value (or a negative one) would make
    the lookup raise; another element of the tensor keeps every index valid."""
    (ws.root / "emb.py").write_text(EMBEDDING, encoding="utf-8")
    assert new("emb", "--from", "./emb.py", "--device", "cpu").exit_code == 0
    spec = load_manifest(ws.manifest).targets["emb"]
    assert spec.input == "idx" and spec.extra == ["state"] and spec.rotate == ["idx"]
    run = run_target(ws, "emb", judge)
    assert run["ok"] and run["status"] == "ok", run.get("reason")


@pytest.mark.slow
@needs_kb
def test_integer_outputs_are_compared_exactly(ws: Workspace, judge: JudgeProcess) -> None:
    (ws.root / "am.py").write_text((KB / "51_Argmax_over_a_dimension.py").read_text(encoding="utf-8"), encoding="utf-8")
    assert new("am", "--from", "./am.py", "--case", "batch_size=4,dim1=32,dim2=16", "--device", "cpu").exit_code == 0
    assert run_target(ws, "am", judge)["status"] == "ok"
    edit_candidate(
        ws,
        "am",
        "\nkernel = _baseline_kernel\n",
        "\ndef kernel(x, state):\n    return (_baseline_kernel(x, state) + 1) % 32\n",
    )
    run = run_target(ws, "am", judge)
    assert run["status"] == "incorrect" and "outputs_match_reference" in run["reason"], run.get("reason")


BIG_TASK = """import torch


def ref_kernel(data):
    a, b = data
    return a + b


def generate_input(size, seed):
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed)
    return (torch.randn(size, size, device="cpu", generator=gen, dtype=torch.float16),
            torch.randn(size, size, device="cpu", generator=gen, dtype=torch.float16))
"""


@pytest.mark.slow
@needs_kb
def test_shapes_are_read_without_allocating_the_inputs(ws: Workspace) -> None:
    """23_Softmax at its own shape is 6 GiB of fp32 and the GPU MODE-style task below 2 x 20 GB of fp16 with an
    explicit device and generator: both are probed on a 24 GiB machine in seconds (meta / fake tensors)."""
    (ws.root / "sm.py").write_text((KB / "23_Softmax.py").read_text(encoding="utf-8"), encoding="utf-8")
    (ws.root / "ref.py").write_text(BIG_TASK, encoding="utf-8")
    assert new("sm", "--from", "./sm.py").exit_code == 0
    assert new("big", "--from", "./ref.py", "--case", "size=100000", "--dtype", "fp16").exit_code == 0
    targets = load_manifest(ws.manifest).targets
    assert targets["sm"].shapes == ["4096x393216"] and targets["sm"].cases is None
    assert targets["big"].shapes == ["100000x100000"] and targets["big"].extra == ["x1:100000x100000"]
    assert targets["big"].cases == [{"size": 100000}]
