"""Output buffers GPU MODE's ``generate_input`` leaves uninitialized, found by the probe while it runs
(``contract/uninit.py``) wherever the source makes them: in a helper, by ``empty_like`` of an input, by
``new_empty``, inside a dict; a buffer made empty and then filled is an input like any other (tasks written for
these tests in GPU MODE's layout)."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hotkernel.contract import probe  # noqa: E402
from hotkernel.contract.uninit import uninit_paths, uninit_tracker  # noqa: E402
from hotkernel.manifest import load_manifest  # noqa: E402
from hotkernel.suites import gpumode  # noqa: E402
from hotkernel.suites.importer import import_suite  # noqa: E402
from hotkernel.workspace.paths import Workspace  # noqa: E402

GM = Path(__file__).resolve().parents[1] / "fixtures" / "gpumode_problems" / "problems" / "hkdemo"


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.chdir(tmp_path)
    return Workspace(tmp_path)


def uninitialized(task: str) -> list[str]:
    reply = probe.probe_problem(torch, str(GM / task / "reference.py"), None, [{"size": 8}], "cpu")
    return reply["uninitialized"]


@pytest.mark.parametrize(
    ("task", "expected"),
    [
        ("helper_buffer_py", ["x1"]),
        ("empty_like_py", ["x1"]),
        ("filled_buffer_py", []),
        ("dict_buffer_py", ["x1", "x2['scratch']"]),  # every tensor of x1; one beside a weight in x2
        ("out_buffer_py", ["x2"]),
    ],
)
def test_the_probe_reports_what_generate_input_leaves_uninitialized(task: str, expected: list[str]) -> None:
    assert uninitialized(task) == expected


def generated(fn, *, fake: bool) -> list[str]:
    tracker = uninit_tracker(torch)
    with probe._fake(torch) if fake else torch.device("cpu"), tracker:
        data = fn()
    return uninit_paths(torch, tracker, [(f"x{i}", v) for i, v in enumerate(data)], probe.leaves)


def writes_and_copies() -> tuple:
    x = torch.rand(4, 4)
    view = torch.empty(16).view(4, 4)  # a view is its tensor
    item = torch.empty(4)
    item[0] = 1.0  # any write makes a buffer an input
    out = torch.empty(4)
    torch.add(x[0], 1.0, out=out)
    half = torch.empty(4).to(torch.float16)  # a copy of uninitialized memory is uninitialized
    read = torch.empty(4)
    return x, view, item, out, half, read, x + read  # reading one writes nothing


@pytest.mark.parametrize("fake", [True, False])
def test_writes_views_and_copies_under_fake_tensors_and_for_real(fake: bool) -> None:
    assert generated(writes_and_copies, fake=fake) == ["x1", "x4", "x5"]


@pytest.mark.slow
def test_a_buffer_made_in_a_helper_becomes_an_output_with_its_reason(ws: Workspace) -> None:
    assert [gpumode.read_task(GM / task).empty_buffers for task in ("helper_buffer_py", "empty_like_py")] == [(), ()]
    result = import_suite(ws, "gpumode", GM / "helper_buffer_py", device="cpu")
    assert [i.target for i in result.imported] == ["gm_hkdemo_helper_buffer_py"], result.skipped
    assert load_manifest(ws.manifest).targets["gm_hkdemo_helper_buffer_py"].outputs == ["x1"]
    assert result.imported[0].flags == [
        "x1: uninitialized memory (torch.empty, empty_like, new_empty...) that generate_input never writes, seen "
        "while it ran, so an output buffer (filled before every call, judged through what the kernel returns, not "
        "checked as an input)"
    ]


@pytest.mark.slow
def test_buffers_in_dict_inputs_and_filled_ones(ws: Workspace) -> None:
    result = import_suite(ws, "gpumode", GM / "dict_buffer_py", device="cpu")
    result2 = import_suite(ws, "gpumode", GM / "filled_buffer_py", device="cpu")
    assert [i.target for i in result.imported + result2.imported] == [
        "gm_hkdemo_dict_buffer_py",
        "gm_hkdemo_filled_buffer_py",
    ], result.skipped + result2.skipped
    targets = load_manifest(ws.manifest).targets
    assert targets["gm_hkdemo_dict_buffer_py"].outputs == ["x1", "x2['scratch']"]
    assert targets["gm_hkdemo_filled_buffer_py"].outputs == [] and result2.imported[0].flags == []
    assert result.imported[0].flags[1] == (
        "x2['scratch']: uninitialized memory that generate_input never writes, inside a structured input, so an "
        "output buffer (filled before every call, judged through what the kernel returns, not checked as an input)"
    )
