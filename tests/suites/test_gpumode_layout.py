"""GPU MODE tasks whose files do not fit together as the layout says, read from the source before anything runs:
a task.yml newer or older than its reference.py, a reference.py in another layout, and a check_implementation
that compares each output at its own tolerance (tasks written for these tests in GPU MODE's layout)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hotkernel.suites import gpumode
from hotkernel.suites.importer import import_suite
from hotkernel.workspace.paths import Workspace

UTILS = """import torch


def make_match_reference(reference, **kwargs):
    def wrapped(data, output):
        return torch.allclose(output, reference(data), **kwargs), ""
    return wrapped
"""

TASK_PY = """from typing import TypeVar

input_t = TypeVar("input_t")
output_t = TypeVar("output_t")
"""

SCALE_REFERENCE = """import torch
from task import input_t, output_t
from utils import make_match_reference


def generate_input(rows: int, cols: int, seed: int) -> input_t:
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(rows, cols, generator=gen), torch.empty(rows, cols)


def ref_kernel(data: input_t) -> output_t:
    x, out = data
    out[...] = 3 * x
    return out


check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-5)
"""

TWO_OUTPUT_REFERENCE = """import torch
from task import input_t, output_t


def close(a, b, rtol, atol):
    return torch.allclose(a, b, rtol=rtol, atol=atol)


def generate_input(rows: int, cols: int, seed: int) -> input_t:
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(rows, cols, generator=gen),)


def ref_kernel(data: input_t) -> output_t:
    (x,) = data
    peak = x.abs().amax(dim=-1)
    return torch.round(x / peak[:, None] * 100), peak


def check_implementation(data, output):
    levels, peak = ref_kernel(data)
    ok = close(output[1], peak, rtol=1e-5, atol=1e-7) and close(output[0], levels, rtol=0, atol=1.0)
    return ok, ""
"""

OTHER_LAYOUT_REFERENCE = """import torch


def reference_sum(x):
    return x.sum(dim=-1)


def reference_max(x):
    return x.amax(dim=-1)


def generate_inputs(batch, width, seed=0):
    torch.manual_seed(seed)
    return torch.rand(batch, width)
"""


def write_task(root: Path, name: str, reference: str, benchmarks: list[str]) -> Path:
    """A task folder ``root/problems/hklayout/<name>`` in GPU MODE's layout, the suite's utils.py beside it."""
    suite = root / "problems" / "hklayout"
    folder = suite / name
    folder.mkdir(parents=True)
    (suite / "utils.py").write_text(UTILS)
    (folder / "task.py").write_text(TASK_PY)
    (folder / "reference.py").write_text(reference)
    lines = "\n".join(f"  - {case}" for case in benchmarks)
    (folder / "task.yml").write_text(
        'files:\n  - {"name": "reference.py", "source": "reference.py"}\nlang: "py"\n'
        f"tests:\n  - {benchmarks[0]}\nbenchmarks:\n{lines}\n"
    )
    return folder


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.chdir(root)
    return Workspace(root)


def test_a_task_yml_key_the_generator_does_not_take_is_a_version_skew(tmp_path: Path, ws: Workspace) -> None:
    folder = write_task(
        tmp_path,
        "scale_py",
        SCALE_REFERENCE,
        ['{"rows": 8, "cols": 16, "seed": 1}', '{"rows": 8, "cols": 32, "with_bias": true, "seed": 2}'],
    )
    task = gpumode.read_task(folder)
    assert task.unfit == (
        f"task.yml's benchmark 2 gives with_bias, which generate_input(rows, cols, seed) at "
        f"{folder / 'reference.py'}:6 does not take: task.yml and reference.py are from different versions of "
        "the task; take both from one commit"
    )
    result = import_suite(ws, "gpumode", folder, device="cpu")
    assert result.imported == []
    assert [s.reason for s in result.skipped] == [task.unfit]
    assert not ws.manifest.exists()


def test_a_parameter_no_case_gives_is_named(tmp_path: Path) -> None:
    folder = write_task(tmp_path, "scale_py", SCALE_REFERENCE, ['{"rows": 8, "seed": 1}'])
    assert gpumode.read_task(folder).unfit.startswith(
        f"task.yml's benchmark 1 does not give cols, which generate_input(rows, cols, seed) at "
        f"{folder / 'reference.py'}:6 needs"
    )


def test_a_reference_in_another_layout_is_skipped_with_what_it_defines(tmp_path: Path, ws: Workspace) -> None:
    folder = write_task(tmp_path, "reduce_py", OTHER_LAYOUT_REFERENCE, ['{"width": 4096}'])
    reason = (
        f"{folder / 'reference.py'}: no generate_input (it defines reference_sum, reference_max, "
        "generate_inputs): not GPU MODE's generate_input(**case, seed) / ref_kernel(data) layout, which is what "
        "hotkernel imports; this task's own eval.py drives it"
    )
    assert gpumode.read_task(folder).unfit == reason
    result = import_suite(ws, "gpumode", folder, device="cpu")
    assert (result.imported, [s.reason for s in result.skipped]) == ([], [reason])


def test_one_tolerance_pair_is_taken_as_stated(tmp_path: Path) -> None:
    task = gpumode.read_task(write_task(tmp_path, "scale_py", SCALE_REFERENCE, ['{"rows": 8, "cols": 16}']))
    assert (task.atol, task.rtol, task.tolerance_note, task.unfit) == (1e-5, 1e-4, "", "")


def test_a_tolerance_per_output_keeps_the_tightest_and_says_so(tmp_path: Path) -> None:
    task = gpumode.read_task(write_task(tmp_path, "levels_py", TWO_OUTPUT_REFERENCE, ['{"rows": 8, "cols": 16}']))
    assert (task.atol, task.rtol) == (1e-7, 0.0)
    assert task.tolerance_note == (
        "several tolerances in reference.py, one per output (line 22: atol=1e-07, rtol=1e-05; line 22: atol=1, "
        "rtol=0): the target keeps the tightest (atol=1e-07, rtol=0); loosen it with `hotkernel edit` where an "
        "output's own tolerance is wider"
    )


MASKED_REFERENCE = """import torch
from task import input_t, output_t
from utils import make_match_reference


def generate_input(n: int, masked: bool, seed: int) -> input_t:
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n, n, generator=gen)
    mask = torch.randint(0, 2, (n, n), generator=gen) if masked else torch.ones(n, n)
    return x, mask


def ref_kernel(data: input_t) -> output_t:
    x, mask = data
    return x * mask


check_implementation = make_match_reference(ref_kernel, rtol=1e-5, atol=1e-6)
"""


def test_a_task_py_the_reference_imports_and_the_folder_lacks_is_named(tmp_path: Path) -> None:
    folder = write_task(tmp_path, "scale_py", SCALE_REFERENCE, ['{"rows": 8, "cols": 16}'])
    (folder / "task.py").unlink()
    yml = folder / "task.yml"
    yml.write_text(yml.read_text().replace("files:\n", 'files:\n  - {"name": "task.py", "source": "task.py"}\n'))
    assert gpumode.read_task(folder).unfit == (
        f"{yml}: files: lists task.py (source task.py), which reference.py imports and which is not there; "
        "fetch it with the task"
    )


@pytest.mark.slow
def test_benchmarks_alike_in_shapes_are_one_case_and_flagged(tmp_path: Path, ws: Workspace) -> None:
    folder = write_task(
        tmp_path,
        "masked_py",
        MASKED_REFERENCE,
        ['{"n": 64, "masked": false}', '{"n": 64, "masked": true}', '{"n": 128, "masked": true}'],
    )
    result = import_suite(ws, "gpumode", folder, device="cpu")
    assert [i.target for i in result.imported] == ["gm_hklayout_masked_py"], result.skipped
    (item,) = result.imported
    assert item.shapes == ["64x64", "128x128"]
    assert item.flags == [
        "benchmarks with the tensor shapes of an earlier one (a manifest keys a case by its shapes) are left out: "
        "2 as 1 (they differ only in dtypes or other values, e.g. a mask's)"
    ]


REBINDING_REFERENCE = """import torch
from task import input_t, output_t
from utils import make_match_reference


def generate_input(size: int, seed: int) -> input_t:
    gen = torch.Generator().manual_seed(seed)
    a = torch.empty(size, size)
    a.uniform_(0, 1, generator=gen)
    b = torch.randn(size, size, generator=gen).contiguous()
    c = torch.empty(size, size).contiguous()
    return a, b, c


def ref_kernel(data: input_t) -> output_t:
    a, b, c = data
    c = a + b
    return c


check_implementation = make_match_reference(ref_kernel, rtol=1e-5, atol=1e-6)
"""


def test_an_uninitialized_buffer_the_reference_never_writes_is_an_output_buffer(tmp_path: Path, ws: Workspace) -> None:
    """GPU MODE's own vectoradd: ``C = torch.empty(...)`` in ``data``, and a reference that returns a new tensor
    rather than writing into C. C's content follows no seed, so it cannot be checked as an input; a, made by
    torch.empty and then filled in place, is an input like any other."""
    folder = write_task(tmp_path, "vectoradd_py", REBINDING_REFERENCE, ['{"size": 64, "seed": 1}'])
    assert gpumode.read_task(folder).empty_buffers == ("x2",)
    result = import_suite(ws, "gpumode", folder, device="cpu")
    assert [i.target for i in result.imported] == ["gm_hklayout_vectoradd_py"], result.skipped
    assert any(flag.startswith("x2: made by torch.empty in generate_input") for flag in result.imported[0].flags)
    assert "    outputs: [x2]\n" in ws.manifest.read_text()


def test_a_buffer_written_in_place_or_passed_on_is_not_an_output_buffer() -> None:
    source = """import torch
def generate_input(n, seed):
    a = torch.empty(n)
    a[0] = 1
    b = torch.empty(n)
    fill(b)
    c = torch.empty(n).random_(0, 2)
    d = torch.empty(n)
    d = d.to("cpu")
    return a, b, c, d, torch.empty_like(a)
"""
    assert gpumode.empty_buffers(ast.parse(source)) == ("x4",)


UNPACKS_TWO_OF_THREE = REBINDING_REFERENCE.replace(
    "    a, b, c = data\n    c = a + b\n    return c", "    a, b = data\n    return a @ b"
)


def test_a_value_error_of_the_reference_itself_names_the_file_line_and_step(tmp_path: Path, ws: Workspace) -> None:
    """GPU MODE's pmpp_v2/matmul_py as stored: generate_input returns (a, b, c), ref_kernel unpacks two."""
    assert "a, b = data" in UNPACKS_TWO_OF_THREE
    folder = write_task(tmp_path, "matmul_py", UNPACKS_TWO_OF_THREE, ['{"size": 16, "seed": 1}'])
    result = import_suite(ws, "gpumode", folder, device="cpu")
    assert result.imported == []
    (skipped,) = result.skipped
    assert "/matmul_py/reference.py:" in skipped.reason, skipped.reason
    assert "the reference on {'size': 16} (a real run on cpu) raised ValueError: too many values to unpack" in (
        skipped.reason
    )
