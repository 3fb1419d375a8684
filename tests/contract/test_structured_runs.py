"""Real CPU runs of problem files with structured inputs: a KernelBench Model's ``state`` (BatchNorm in training
mode, a model of more than 200 tensors, dropout), GPU MODE tasks in their own format (an output buffer written by
``ref_kernel`` and returned, a dict input with a scalar), each with its honest and dishonest candidates."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hotkernel.run.render import render_target
from hotkernel.run.runner import RunOutcome, run_script
from hotkernel.workspace.paths import Workspace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, SharedJudge, default_resolved, make_workspace, python, shared_judge  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedJudge]:
    """One judge for the module's runs, each test in a workspace of its own."""
    with shared_judge(tmp_path_factory.mktemp("judge")) as shared:
        yield shared


BATCHNORM_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.bn(self.fc(x))


batch_size = 32
features = 16


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
"""
DEEP_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))

    def forward(self, x, scale):
        for layer in self.layers:
            x = torch.tanh(layer(x)) * scale
        return x


def get_inputs():
    return [torch.randn(8, 8), 1.5]


def get_init_inputs():
    return [8, 110]
"""
DROPOUT_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(p=0.2)

    def forward(self, x):
        return self.drop(x * 2)


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
"""
BUFFER_TASK = """import torch


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(size, generator=gen)
    return x, torch.empty(size)


def ref_kernel(data):
    x, out = data
    out[...] = torch.relu(x) * 2
    return out
"""
# As GPU MODE's grouped GEMM tasks ship theirs: each group's output buffer is the c inside a list of (a, b, c)
GROUPED_TASK = """import torch


def generate_input(m: int, n: int, k: int, seed: int):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    abc = [(torch.randn(m, k, generator=gen), torch.randn(k, n, generator=gen), torch.empty(m, n)) for _ in range(2)]
    return abc, [(m, n, k)] * 2


def ref_kernel(data):
    abc, _ = data
    for a, b, c in abc:
        torch.matmul(a, b, out=c)
    return [c for _, _, c in abc]
"""
GROUPED_ADAPTER = """import torch


def custom_kernel(data):
    abc, _ = data
    for a, b, c in abc:
        {body}
    return [c for _, _, c in abc]


def kernel(*data): return custom_kernel(data)
"""
DICT_TASK = """import torch


def generate_input(rows: int, seed: int):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    weights = {"w": torch.randn(rows, 16, generator=gen), "b": torch.randn(16, generator=gen)}
    return {"x": torch.randn(rows, 16, generator=gen), "params": weights, "alpha": 0.5, "step": torch.tensor(3)}


def ref_kernel(data):
    p = data["params"]
    return (data["x"] * p["w"] + p["b"]) * data["alpha"] + data["step"]
"""

# As GPU MODE's bioml/trimul ships it: the input from the task's own generator, its weights from torch's global RNG
GLOBAL_RNG_TASK = """import torch


def generate_input(rows: int, seed: int):
    gen = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(rows, 16, generator=gen)
    return x, {"w": torch.randn(16), "b": torch.randn(16)}


def ref_kernel(data):
    x, weights = data
    return x * weights["w"] + weights["b"]
"""


def problem_target(root: Path, source: str, resolved: dict[str, Any]) -> tuple[Workspace, dict[str, Any]]:
    ws, _ = make_workspace(root)
    (ws.root / "problems").mkdir()
    (ws.root / "problems" / "task.py").write_text(source)
    spec = default_resolved(**{"from": "./problems/task.py", "kwargs": {}, **resolved})
    render_target(ws, TARGET, spec)
    return ws, spec


def run(ws: Workspace, spec: dict[str, Any], body: str | None, judge: SharedJudge) -> RunOutcome:
    path = ws.target_dir(TARGET) / "candidate.py"
    if body is None:
        script = f"targets/{TARGET}/baseline.py"
    else:
        path.write_text(body)
        script = f"targets/{TARGET}/candidate.py"
    return run_script(ws, script, python=python(), judge=judge.judge_for(ws, TARGET, spec), resolved=spec)


BN_FUNCTIONAL = """import torch
import torch.nn as nn
from torch.func import functional_call


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.bn = nn.BatchNorm1d(features)

    def forward(self, x):
        return self.bn(self.fc(x))


with torch.device("meta"):
    MODEL = Model(16)


def kernel(x, state):
    return functional_call(MODEL, state, (x,))
"""
BN_HANDWRITTEN = """import torch


def kernel(x, state):
    y = x @ state["fc.weight"].T + state["fc.bias"]
    mean, var = y.mean(0), y.var(0, unbiased=False)
    {update}
    return (y - mean) / torch.sqrt(var + 1e-5) * state["bn.weight"] + state["bn.bias"]
"""
BN_UPDATE = """n = y.shape[0]
    state["bn.running_mean"].mul_(0.9).add_(0.1 * mean)
    state["bn.running_var"].mul_(0.9).add_(0.1 * var * n / (n - 1))
    state["bn.num_batches_tracked"].add_(1)"""


def test_batchnorm_state_in_training_mode(tmp_path: Path, judge: SharedJudge) -> None:
    spec_keys = {
        "inputs": [{"name": "x", "shapes": [[32, 16]]}, {"name": "state", "shapes": None}],
        "shapes": ["32x16"],
        "rotate": ["x"],
        "cases": [],
    }
    ws, spec = problem_target(tmp_path / "ws", BATCHNORM_PROBLEM, spec_keys)
    outcome = run(ws, spec, None, judge)
    assert outcome.status == "ok", outcome.reason
    outcome = run(ws, spec, BN_FUNCTIONAL, judge)
    assert outcome.status == "ok", outcome.reason
    outcome = run(ws, spec, BN_HANDWRITTEN.format(update=BN_UPDATE), judge)
    assert outcome.status == "ok", outcome.reason
    # the right output, but the running statistics left as they were: judged like an output
    outcome = run(ws, spec, BN_HANDWRITTEN.format(update="pass"), judge)
    assert outcome.status == "incorrect", outcome.reason
    assert outcome.reason.startswith("outputs_match_reference"), outcome.reason
    # a parameter changed in place is tampering
    tamper = BN_HANDWRITTEN.format(
        update=BN_UPDATE + '\n    state["fc.bias"].add_(0)\n    state["bn.weight"].mul_(1.5)'
    )
    outcome = run(ws, spec, tamper, judge)
    assert outcome.status == "incorrect", outcome.reason
    assert outcome.reason.startswith("inputs_unchanged"), outcome.reason


ITEM_IN_INIT_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, depth, drop_path_rate):
        super().__init__()
        # as Swin's drop-path rates (KernelBench level 3's 29_SwinMLP): Python floats read from a tensor in
        # __init__, which a Model built on the meta device cannot give
        self.rates = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]
        self.layers = nn.ModuleList(nn.Linear(features, features) for _ in self.rates)

    def forward(self, x):
        for layer, rate in zip(self.layers, self.rates):
            x = x + (1.0 - rate) * torch.tanh(layer(x))
        return x


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return [16, 3, 0.5]
"""


def test_a_model_whose_init_reads_tensor_values_runs_its_baseline(tmp_path: Path, judge: SharedJudge) -> None:
    """The Model that ``functional_call`` fills with the state is built on the CPU where its ``__init__`` needs
    real values (``.item()``): the baseline runs (it crashed on the meta device), a candidate that drops the
    rates is still ``incorrect``."""
    spec_keys = {
        "inputs": [{"name": "x", "shapes": [[8, 16]]}, {"name": "state", "shapes": None}],
        "shapes": ["8x16"],
        "rotate": ["x"],
        "cases": [],
    }
    ws, spec = problem_target(tmp_path / "ws", ITEM_IN_INIT_PROBLEM, spec_keys)
    outcome = run(ws, spec, None, judge)
    assert outcome.status == "ok", outcome.reason
    no_rates = """import torch


def kernel(x, state):
    for i in range(3):
        x = x + torch.tanh(x @ state[f"layers.{i}.weight"].T + state[f"layers.{i}.bias"])
    return x
"""
    outcome = run(ws, spec, no_rates, judge)
    assert outcome.status == "incorrect", outcome.reason
    assert outcome.reason.startswith("outputs_match_reference"), outcome.reason


def test_a_model_of_more_than_200_tensors_with_a_scalar_input(tmp_path: Path, judge: SharedJudge) -> None:
    spec_keys = {
        "inputs": [
            {"name": "x", "shapes": [[8, 8]]},
            {"name": "scale", "shapes": None},
            {"name": "state", "shapes": None},
        ],
        "shapes": ["8x8"],
        "rotate": ["x", "scale"],
        "cases": [],
    }
    ws, spec = problem_target(tmp_path / "ws", DEEP_PROBLEM, spec_keys)
    outcome = run(ws, spec, None, judge)
    assert outcome.status == "ok", outcome.reason
    wrong_scale = "import torch\n\n\ndef kernel(x, scale, state):\n    return torch.zeros(8, 8) + scale\n"
    outcome = run(ws, spec, wrong_scale, judge)
    assert outcome.status == "incorrect", outcome.reason


COUNTS_ITS_BUILDS = """import os

import torch
import torch.nn as nn

LOG = LOG_PATH


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        if os.environ.get("HK_PROTOCOL_FD"):  # a worker of a run (not the judge): one line a build
            with open(LOG, "a") as out:
                out.write(f"{torch.empty(0).device}\\n")
        self.lin = nn.Linear(features, features)

    def forward(self, x):
        return self.lin(x)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return [8]
"""


def test_a_refill_builds_the_model_once_a_sample_not_once_a_set(tmp_path: Path, judge: SharedJudge) -> None:
    """Before each sample every set is refilled, but the Model's state is shared by the sets: building the Model
    for each of K sets made a resnet18 run 12 s for 0.15 s of kernel time (64 sets, H100). Set 0 carries the
    shared inputs; the others make their rotated inputs only, with the same values as before."""
    log = tmp_path / "builds.txt"
    spec_keys = {
        "inputs": [{"name": "x", "shapes": [[4, 8]]}, {"name": "state", "shapes": None}],
        "shapes": ["4x8"],
        "rotate": ["x"],
        "cases": [],
    }
    ws, spec = problem_target(tmp_path / "ws", COUNTS_ITS_BUILDS.replace("LOG_PATH", repr(str(log))), spec_keys)
    outcome = run(ws, spec, None, judge)
    assert outcome.status == "ok", outcome.reason
    shape = outcome.run["per_shape"][0]
    devices = log.read_text().splitlines()
    builds = devices.count("cpu")
    assert shape["rotation"] >= 4, shape["rotation"]
    # one build for the sets, then one a sample (the refill's set 0): 1 + SAMPLES, where it was K (1 + SAMPLES);
    # besides, the worker reads the state's layout from one Model on the meta device (no memory, no init)
    assert builds == 1 + len(shape["samples_ms"]), (devices, shape["rotation"])
    assert devices.count("meta") == 1, devices


PLAIN_ATTRIBUTES = Path(__file__).resolve().parents[1] / "fixtures" / "kernelbench_suite" / "level2"
PLAIN_FUNCTIONAL = """import sys

import torch
from torch.func import functional_call

sys.path.insert(0, "problems")
from task import Model  # noqa: E402

with torch.device("meta"):
    MODEL = Model(12, 10)  # its plain attributes stay plain here: functional_call swaps them in all the same


def kernel(x, initial_hidden, state):
    return functional_call(MODEL, state, (x, initial_hidden))
"""
PLAIN_HANDWRITTEN = """import torch


def kernel(x, initial_hidden, state):
    {update}
    xh = torch.cat((x, initial_hidden), dim=1)
    return torch.tanh(xh @ state["cell.weight"].T + state["cell.bias"])
"""


def test_tensors_kept_as_plain_attributes_are_buffers_of_the_state(tmp_path: Path, judge: SharedJudge) -> None:
    """The Model's plain tensor attributes (``self.hidden``, ``self.h0``) are buffers of ``state``: the one the
    forward copies into is judged after the call like BatchNorm's statistics, the one it reassigns is not kept."""
    spec_keys = {
        "inputs": [
            {"name": "x", "shapes": [[4, 12]]},
            {"name": "initial_hidden", "shapes": [[4, 10]]},
            {"name": "state", "shapes": None},
        ],
        "shapes": ["4x12"],
        "rotate": ["x", "initial_hidden"],
        "cases": [],
    }
    source = (PLAIN_ATTRIBUTES / "6_Plain_Attribute_RNN.py").read_text()
    ws, spec = problem_target(tmp_path / "ws", source, spec_keys)
    outcomes = [
        run(ws, spec, None, judge),
        run(ws, spec, PLAIN_FUNCTIONAL, judge),
        run(ws, spec, PLAIN_HANDWRITTEN.format(update='state["hidden"].copy_(initial_hidden)'), judge),
    ]
    assert [o.status for o in outcomes] == ["ok", "ok", "ok"], [o.reason for o in outcomes]
    skipped = run(ws, spec, PLAIN_HANDWRITTEN.format(update="pass"), judge)
    assert skipped.status == "incorrect", skipped.reason
    assert skipped.reason.startswith("outputs_match_reference"), skipped.reason


def test_dropout_in_training_mode_is_named_not_judged(tmp_path: Path, judge: SharedJudge) -> None:
    spec_keys = {
        "inputs": [{"name": "x", "shapes": [[64, 64]]}, {"name": "state", "shapes": None}],
        "shapes": ["64x64"],
        "rotate": ["x"],
        "cases": [],
    }
    ws, spec = problem_target(tmp_path / "ws", DROPOUT_PROBLEM, spec_keys)
    outcome = run(ws, spec, None, judge)
    assert outcome.status == "invalid", outcome.reason
    assert outcome.reason.startswith("reference_deterministic: the Model draws random numbers (drop: Dropout(p=0.2))")


BUFFER_ADAPTER = """import torch


def custom_kernel(data):
    x, out = data
    {body}
    return out


def kernel(*data): return custom_kernel(data)
"""


ONCE = """global DONE
    if "DONE" not in globals():
        out.copy_(torch.relu(x) * 2)
        DONE = True"""


def test_gpumode_output_buffer(tmp_path: Path, judge: SharedJudge) -> None:
    spec_keys = {
        "inputs": [{"name": "x0", "shapes": [[4096]]}, {"name": "x1", "shapes": [[4096]]}],
        "shapes": ["4096"],
        "rotate": ["x0", "x1"],
        "outputs": ["x1"],
        "cases": [{"size": 4096}],
    }
    ws, spec = problem_target(tmp_path / "ws", BUFFER_TASK, spec_keys)
    assert run(ws, spec, None, judge).status == "ok"
    honest = run(ws, spec, BUFFER_ADAPTER.format(body="torch.mul(torch.relu(x), 2, out=out)"), judge)
    assert honest.status == "ok", honest.reason
    untouched = run(ws, spec, BUFFER_ADAPTER.format(body="pass"), judge)
    assert untouched.status == "incorrect", untouched.reason
    assert untouched.reason.split(":", 1)[0] in ("output_not_nan", "outputs_match_reference"), untouched.reason
    once = BUFFER_ADAPTER.format(body=ONCE)
    stale = run(ws, spec, once, judge)
    assert stale.status == "incorrect", stale.reason
    low = run(ws, spec, BUFFER_ADAPTER.format(body="out.copy_(torch.relu(x.bfloat16()).float() * 2)"), judge)
    assert low.status == "incorrect", low.reason


def test_gpumode_output_buffers_inside_a_list_of_tuples(tmp_path: Path, judge: SharedJudge) -> None:
    """outputs names each group's c by its path: the baseline writing into them passes the inputs-unchanged
    check, an honest kernel passes, one that leaves them untouched or writes an input is incorrect."""
    spec_keys = {
        "inputs": [{"name": "x0", "shapes": None}, {"name": "x1", "shapes": None}],
        "shapes": ["64x32"],
        "rotate": ["x0", "x1"],
        "outputs": ["x0[0][2]", "x0[1][2]"],
        "cases": [{"m": 64, "n": 48, "k": 32}],
    }
    ws, spec = problem_target(tmp_path / "ws", GROUPED_TASK, spec_keys)
    baseline = run(ws, spec, None, judge)
    assert baseline.status == "ok", baseline.reason
    doc = " ".join((ws.target_dir(TARGET) / "candidate.py").read_text(encoding="utf-8").split())
    assert "and constants; inside it, [0][2], [1][2] are destination buffers: write the results into them" in doc
    honest = run(ws, spec, GROUPED_ADAPTER.format(body="c.copy_(a @ b)"), judge)
    assert honest.status == "ok", honest.reason
    untouched = run(ws, spec, GROUPED_ADAPTER.format(body="pass"), judge)
    assert untouched.status == "incorrect", untouched.reason
    assert untouched.reason.split(":", 1)[0] in ("output_not_nan", "outputs_match_reference"), untouched.reason
    tamper = run(ws, spec, GROUPED_ADAPTER.format(body="c.copy_(a @ b)\n        a.add_(0.0).mul_(1.0001)"), judge)
    assert tamper.status == "incorrect", tamper.reason
    assert tamper.reason.startswith("inputs_unchanged"), tamper.reason
    whole = {**spec_keys, "outputs": []}  # without them the baseline itself writes its inputs
    ws, spec = problem_target(tmp_path / "ws2", GROUPED_TASK, whole)
    refused = run(ws, spec, None, judge)
    assert refused.status != "ok" and "inputs_unchanged" in (refused.reason or ""), refused.reason


def test_gpumode_dict_input_with_a_scalar_and_a_0d_tensor(tmp_path: Path, judge: SharedJudge) -> None:
    spec_keys = {
        "inputs": [{"name": "data", "shapes": None}],
        "shapes": ["64x16"],
        "rotate": ["data"],
        "cases": [{"rows": 64}],
    }
    ws, spec = problem_target(tmp_path / "ws", DICT_TASK, spec_keys)
    outcome = run(ws, spec, None, judge)
    assert outcome.status == "ok", outcome.reason
    assert outcome.run is not None
    wrong = 'def kernel(data):\n    return data["x"] * data["params"]["w"] * data["alpha"]\n'
    outcome = run(ws, spec, wrong, judge)
    assert outcome.status == "incorrect", outcome.reason


def test_gpumode_inputs_drawn_from_the_global_rng_are_the_same_in_worker_and_judge(
    tmp_path: Path, judge: SharedJudge
) -> None:
    # On an H100 (2026-12-06) trimul's own reference verified `invalid` (inputs_unchanged): its weights come from
    # torch's global RNG, which generate_input does not seed, so the judge's regenerated set was not the worker's
    spec_keys = {
        "inputs": [{"name": "x0", "shapes": [[64, 16]]}, {"name": "x1", "shapes": None}],
        "shapes": ["64x16"],
        "rotate": ["x0", "x1"],
        "cases": [{"rows": 64}],
    }
    ws, spec = problem_target(tmp_path / "ws", GLOBAL_RNG_TASK, spec_keys)
    for _ in range(2):  # the second run meets a judge whose global RNG earlier jobs have moved on
        outcome = run(ws, spec, None, judge)
        assert outcome.status == "ok", outcome.reason
    wrong = 'def kernel(x, weights):\n    return x * weights["w"] - weights["b"]\n'
    assert run(ws, spec, wrong, judge).status == "incorrect"


GM = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode_problems" / "problems" / "hkdemo"


IMPORT_FLAGS: dict[str, list[str]] = {}  # what each import of ``imported_task`` flagged, by target


def imported_task(root: Path, task: str) -> tuple[Workspace, str, dict[str, Any]]:
    """A GPU MODE task of the fixtures imported as a user would (``hotkernel import gpumode``), on the CPU."""
    from hotkernel.manifest import load_manifest, resolved_target
    from hotkernel.suites.importer import import_suite

    root.mkdir(parents=True)
    ws = Workspace(root)
    result = import_suite(ws, "gpumode", GM / task, device="cpu")
    assert len(result.imported) == 1, result.skipped
    name = result.imported[0].target
    IMPORT_FLAGS[name] = result.imported[0].flags
    resolved = resolved_target(load_manifest(ws.manifest), name)
    render_target(ws, name, resolved)
    return ws, name, resolved


def run_task(ws: Workspace, name: str, resolved: dict[str, Any], body: str | None, judge: SharedJudge) -> RunOutcome:
    if body is not None:
        (ws.target_dir(name) / "candidate.py").write_text(body)
    role = "baseline" if body is None else "candidate"
    shared = judge.judge_for(ws, name, resolved)
    return run_script(ws, f"targets/{name}/{role}.py", python=python(), judge=shared, resolved=resolved)


def test_a_task_whose_output_overflows_its_dtype_is_flagged_and_named_not_a_crash(
    tmp_path: Path, judge: SharedJudge
) -> None:
    """GPU MODE's helion/kda at its own sizes: its fp32 output is inf in places and its fp64 reference reaches
    1e222, whose square overflowed a Python float in the judge (``OverflowError``, the baseline `crashed`, seen on
    the H100). The import flags the task and its baseline fails with the named reason."""
    ws, name, resolved = imported_task(tmp_path / "ws", "overflow_py")
    assert "the reference output holds NaN or inf" in IMPORT_FLAGS[name]
    baseline = run_task(ws, name, resolved, None, judge)
    assert baseline.status == "incorrect", baseline.reason
    assert baseline.reason.startswith("output_not_nan: ") and "output contains NaN or inf" in baseline.reason


def test_an_output_whose_length_follows_the_data_is_judged_per_set(tmp_path: Path, judge: SharedJudge) -> None:
    """GPU MODE's compaction: each rotated input set keeps a different number of entries, so the shape the
    baseline returns on the first set is not every set's (the baseline itself was called wrong, seen on the
    H200). The baseline and an honest rewrite pass; a wrong length and a wrong order fail."""
    ws, name, resolved = imported_task(tmp_path / "ws", "compaction_py")
    baseline = run_task(ws, name, resolved, None, judge)
    assert baseline.status == "ok", baseline.reason
    # data is generate_input's 1-tuple, the one input (the rendered candidate's adapter: kernel = custom_kernel)
    honest = "import torch\n\n\ndef kernel(data):\n    (x,) = data\n    return torch.masked_select(x, x > 0)\n"
    rewrite = run_task(ws, name, resolved, honest, judge)
    assert rewrite.status == "ok", rewrite.reason
    short = run_task(ws, name, resolved, "def kernel(data):\n    return data[0][data[0] > 0.01]\n", judge)
    assert short.status == "incorrect" and short.reason.startswith("output_shape_dtype:"), short.reason
    flipped = run_task(ws, name, resolved, "def kernel(data):\n    return data[0][data[0] > 0].flip(0)\n", judge)
    assert flipped.status == "incorrect", flipped.reason


def test_a_sum_is_admitted_by_the_baselines_error_on_each_set(tmp_path: Path, judge: SharedJudge) -> None:
    """A sum of randn into a 0-d buffer: on a set whose sum is small the fp32 baseline's relative error is many
    times that of the first set, so the first set's allowance alone called the baseline itself wrong (a GPU
    MODE-format vectorsum's A/A, 2 of 5 verifies). Each set is judged again by the baseline's error on that set;
    a sum of bf16-rounded inputs still fails."""
    ws, name, resolved = imported_task(tmp_path / "ws", "scalar_out_py")
    for _ in range(3):  # fresh set seeds each run
        baseline = run_task(ws, name, resolved, None, judge)
        assert baseline.status == "ok", baseline.reason
    low = "def kernel(x, out):\n    out.copy_(x.bfloat16().sum().float())\n    return out\n"
    outcome = run_task(ws, name, resolved, low, judge)
    assert outcome.status == "incorrect", outcome.reason


CENTRED_BN_PROBLEM = """import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"ShuffleNet's unit in small: a BatchNorm in training mode after a channel-centred input, so the running
    mean it updates is rounding noise near zero (KernelBench level 3's 25_ShuffleNetUnit on the H200).\"\"\"

    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y - y.mean(dim=(0, 2, 3), keepdim=True))


def get_inputs():
    return [torch.randn(8, 16, 12, 12)]


def get_init_inputs():
    return [16]
"""


def test_a_running_mean_near_zero_admits_the_baselines_own_error(tmp_path: Path, judge: SharedJudge) -> None:
    """A Model buffer judged after the call (BatchNorm's running mean, here noise near zero) is held to the
    baseline's own error on it, like any output: the baseline passes, a running mean left unchanged fails."""
    spec_keys = {
        "inputs": [{"name": "x", "shapes": [[8, 16, 12, 12]]}, {"name": "state", "shapes": None}],
        "shapes": ["8x16x12x12"],
        "rotate": ["x"],
        "cases": [],
    }
    ws, spec = problem_target(tmp_path / "ws", CENTRED_BN_PROBLEM, spec_keys)
    stale = """import torch


def kernel(x, state):
    y = torch.nn.functional.conv2d(x, state["conv.weight"])
    y = y - y.mean(dim=(0, 2, 3), keepdim=True)
    mean, var = y.mean(dim=(0, 2, 3)), y.var(dim=(0, 2, 3), unbiased=False)
    n = y.numel() // y.shape[1]
    state["bn.running_var"].mul_(0.9).add_(0.1 * var * n / (n - 1))
    state["bn.num_batches_tracked"].add_(1)
    shape = (1, -1, 1, 1)
    out = (y - mean.view(shape)) / torch.sqrt(var.view(shape) + 1e-5)
    return out * state["bn.weight"].view(shape) + state["bn.bias"].view(shape)
"""
    for _ in range(2):
        outcome = run(ws, spec, None, judge)
        assert outcome.status == "ok", outcome.reason
    outcome = run(ws, spec, stale.replace("running_var", "running_mean"), judge)
    assert outcome.status == "incorrect", outcome.reason


CANCELLING_SOURCE = """import torch


def shifted(x, y):
    # fp32 loses up to ~5e-4 of y adding and removing 1e3 * x: the baseline's own elementwise error is over
    # atol, like a deep fp32 network's (KernelBench level 3's 10_ResNet101 on the H200), yet 30x under bf16's
    return (x * 1e3 + y) - x * 1e3
"""


def test_an_elementwise_error_the_baseline_has_itself_is_admitted(tmp_path: Path, judge: SharedJudge) -> None:
    """An fp32 baseline whose own elementwise error against the fp64 reference exceeds atol passes its A/A; a
    candidate exact to fp32 passes; one off by 0.1 or computed in bf16 fails."""
    ws, _ = make_workspace(tmp_path / "ws")
    (ws.root / "kernels" / "ops.py").write_text(CANCELLING_SOURCE)
    spec = default_resolved(
        **{
            "from": "./kernels/ops.py:shifted",
            "inputs": [{"name": "x", "shapes": [[256, 256]]}, {"name": "y", "shapes": [[256, 256]]}],
            "shapes": ["256x256"],
            "kwargs": {},
            "rotate": ["x", "y"],
        }
    )
    render_target(ws, TARGET, spec)
    outcome = run(ws, spec, None, judge)
    assert outcome.status == "ok", outcome.reason
    assert run(ws, spec, "def kernel(x, y):\n    return y.clone()\n", judge).status == "ok"
    off = run(ws, spec, "def kernel(x, y):\n    return y + 0.1\n", judge)
    assert off.status == "incorrect" and off.reason.startswith("outputs_match_reference"), off.reason
    low = run(ws, spec, "def kernel(x, y):\n    return y.bfloat16().float()\n", judge)
    assert low.status == "incorrect", low.reason
