"""A GPU MODE task whose check_implementation compares each output at its own tolerance: imported with
``output_tolerances`` where reference.py says which tolerance is whose, else with the tightest for every output
and a note (tasks written for these tests in GPU MODE's layout)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hotkernel.manifest import load_manifest, resolve_target
from hotkernel.suites import gpumode
from hotkernel.suites.importer import import_suite
from hotkernel.workspace.paths import Workspace

GM = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode_problems" / "problems" / "hkdemo"
LEVELS = {"atol": 1.0, "rtol": 0.0}
PEAK = {"atol": 1e-6, "rtol": 1e-5}


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.chdir(tmp_path)
    return Workspace(tmp_path)


def test_tolerances_unpacked_per_output_are_each_outputs() -> None:
    task = gpumode.read_task(GM / "two_tolerances_py")
    assert task.output_tolerances == (LEVELS, PEAK)
    assert (task.atol, task.rtol) == (1e-6, 0.0)  # outputs without an entry of their own get the tightest


def test_tolerances_compared_in_a_loop_are_nobodys() -> None:
    task = gpumode.read_task(GM / "loop_tolerances_py")
    assert task.output_tolerances == ()
    assert task.tolerance_note.startswith("several tolerances in reference.py, one per output")


CHECK_BY_INDEX = """import torch
def check_implementation(data, output):
    ok = torch.allclose(output[1], data[1], rtol=1e-5, atol=1e-7)
    return ok and torch.allclose(output[0], data[0], rtol=0, atol=1.0), ""
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (CHECK_BY_INDEX, ({"atol": 1.0, "rtol": 0.0}, {"atol": 1e-7, "rtol": 1e-5})),
        (CHECK_BY_INDEX.replace("output[0]", "output[2]"), ({}, {"atol": 1e-7, "rtol": 1e-5}, LEVELS)),
        (CHECK_BY_INDEX.replace("output[0]", "output[1]"), ()),  # two tolerances for one output
        (CHECK_BY_INDEX.replace("output[0], data[0]", "output[i], data[i]"), ()),  # an index only a run tells
        (CHECK_BY_INDEX + "check = make_match_reference(ref_kernel, rtol=1e-3, atol=1e-3)\n", ()),
    ],
)
def test_which_output_a_tolerance_is_read_from_its_subscript(source: str, expected: tuple) -> None:
    assert gpumode.per_output_tolerances(ast.parse(source)) == expected


@pytest.mark.slow
def test_an_import_writes_each_outputs_tolerance(ws: Workspace) -> None:
    result = import_suite(ws, "gpumode", GM / "two_tolerances_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_two_tolerances_py"], result.skipped
    assert result.imported[0].flags == [
        "reference.py compares each output at its own tolerance (output 0: atol=1, rtol=0; output 1: atol=1e-06, "
        "rtol=1e-05): written as output_tolerances"
    ]
    manifest = load_manifest(ws.manifest)
    assert manifest.targets["gm_hkdemo_two_tolerances_py"].output_tolerances == [LEVELS, PEAK]
    bounds = resolve_target(manifest, "gm_hkdemo_two_tolerances_py").bounds()
    assert [{k: entry[k] for k in ("atol", "rtol")} for entry in bounds["per_output"]] == [LEVELS, PEAK]


@pytest.mark.slow
def test_an_import_that_cannot_tell_whose_tolerance_keeps_the_tightest_and_says_so(ws: Workspace) -> None:
    result = import_suite(ws, "gpumode", GM / "loop_tolerances_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_loop_tolerances_py"], result.skipped
    spec = load_manifest(ws.manifest).targets["gm_hkdemo_loop_tolerances_py"]
    assert (spec.output_tolerances, spec.atol, spec.rtol) == ([], 1e-6, 0.0)
    assert any(flag.startswith("several tolerances in reference.py") for flag in result.imported[0].flags)
