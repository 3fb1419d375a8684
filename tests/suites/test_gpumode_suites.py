"""A whole GPU MODE ``problems/`` folder at once, as reference-kernels ships it: several suites, each with a
``utils.py`` of its own and a ``task.py`` per task. One probe run imports every task; in one process (the probe,
a sync's judge) each reference sees its own suite's ``utils`` and its own ``task``; a task that kills the probe
is skipped with its reason and the rest go on (tasks written for these tests in GPU MODE's layout)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.run import targets as run_targets
from hotkernel.run.runner import JudgeProcess, run_script
from hotkernel.suites import gpumode, importer
from hotkernel.suites.importer import import_suite
from hotkernel.workspace.paths import Workspace

# Two suites whose utils.py differ as reference-kernels' do (pmpp's has no DeterministicContext, pmpp_v2's has).
UTILS = {
    "hkaa": """SUITE = "hkaa"


def make_match_reference(reference, **kwargs):
    return lambda data, output: (True, "")
""",
    "hkbb": """SUITE = "hkbb"


def make_match_reference(reference, **kwargs):
    return lambda data, output: (True, "")


class DeterministicContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
""",
}

REFERENCE = {
    "hkaa": """import torch
from task import SCALE
from utils import SUITE, make_match_reference


def generate_input(size: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(size, size, generator=gen)


def ref_kernel(data):
    return SCALE * data


check_implementation = make_match_reference(ref_kernel, rtol=1e-5, atol=1e-6)
""",
    "hkbb": """import torch
from task import SCALE
from utils import SUITE, DeterministicContext, make_match_reference


def generate_input(size: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(size, size, generator=gen)


def ref_kernel(data):
    with DeterministicContext():
        return SCALE * data


check_implementation = make_match_reference(ref_kernel, rtol=1e-5, atol=1e-6)
""",
}

TASKS = (("hkaa", "double_py", 2), ("hkbb", "triple_py", 3), ("hkaa", "quadruple_py", 4))
TARGETS = ["gm_hkaa_double_py", "gm_hkaa_quadruple_py", "gm_hkbb_triple_py"]


def write_task(problems: Path, suite: str, task: str, scale: int, reference: str | None = None) -> Path:
    folder = problems / suite / task
    folder.mkdir(parents=True)
    (problems / suite / "utils.py").write_text(UTILS[suite])
    (folder / "task.py").write_text(f"SCALE = {scale}\n")
    (folder / "reference.py").write_text(reference or REFERENCE[suite])
    (folder / "task.yml").write_text(
        'files:\n  - {"name": "reference.py", "source": "reference.py"}\nlang: "py"\n'
        'tests:\n  - {"size": 8, "seed": 1}\nbenchmarks:\n  - {"size": 16, "seed": 2}\n'
    )
    return folder


@pytest.fixture()
def problems(tmp_path: Path) -> Path:
    root = tmp_path / "reference-kernels" / "problems"
    for suite, task, scale in TASKS:
        write_task(root, suite, task, scale)
    return root


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.delenv("HOTKERNEL_WORKSPACE", raising=False)
    monkeypatch.chdir(root)
    return Workspace(root)


@pytest.fixture()
def probe_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many requests each run of the probe got."""
    runs: list[int] = []
    real = run_targets._probe_run

    def counted(ws: Workspace, requests: list[dict]) -> tuple[list[dict], str | None]:
        runs.append(len(requests))
        return real(ws, requests)

    monkeypatch.setattr(run_targets, "_probe_run", counted)
    return runs


def python() -> str:
    return os.environ.get("HOTKERNEL_PYTHON", sys.executable)


def test_each_reference_loads_with_its_own_suites_utils_and_its_own_task(problems: Path) -> None:
    """In one process, a pmpp_v2-like task after a pmpp-like one imports the DeterministicContext only its own
    suite's utils.py has, and each task's SCALE is its own task.py's, before and after the others load."""
    torch = pytest.importorskip("torch")
    from hotkernel.contract.problems import load_problem

    x = torch.ones(2, 2)
    loaded = {}
    for suite, task, scale in TASKS:
        problem = load_problem(str(problems / suite / task / "reference.py"), "/", [{"size": 4}])
        assert problem.module.SUITE == suite
        assert torch.equal(problem.reference(x), scale * x)
        loaded[task] = (problem, scale)
    for problem, scale in loaded.values():  # the first ones still see their own modules
        assert torch.equal(problem.reference(x), scale * x)


@pytest.mark.slow
def test_a_problems_folder_imports_every_task_of_every_suite_in_one_probe(
    problems: Path, ws: Workspace, probe_runs: list[int]
) -> None:
    result = import_suite(ws, "gpumode", problems, device="cpu")
    assert sorted(item.target for item in result.imported) == TARGETS, result.skipped
    assert result.skipped == []
    assert probe_runs == [3]
    for suite in ("hkaa", "hkbb"):
        copied = ws.root / "problems" / "gpumode" / suite / "utils.py"
        assert copied.read_text() == UTILS[suite]


@pytest.mark.slow
def test_a_suite_folder_imports_its_tasks_and_skips_what_is_taken(problems: Path, ws: Workspace) -> None:
    first = import_suite(ws, "gpumode", problems / "hkaa", device="cpu")
    assert [item.target for item in first.imported] == ["gm_hkaa_double_py", "gm_hkaa_quadruple_py"]
    again = import_suite(ws, "gpumode", problems, device="cpu")
    assert [item.target for item in again.imported] == ["gm_hkbb_triple_py"]
    assert sorted(s.reason for s in again.skipped) == [
        "gm_hkaa_double_py is already a target",
        "gm_hkaa_quadruple_py is already a target",
    ]


@pytest.mark.slow
def test_a_task_that_kills_the_probe_is_skipped_and_the_others_go_on(
    problems: Path, ws: Workspace, probe_runs: list[int]
) -> None:
    exit_first = "    print('{\"ok\": true}')\n    import os\n    os._exit(7)\n"
    dying = REFERENCE["hkaa"].replace("    gen = torch.Generator()", exit_first + "    gen = torch.Generator()")
    folder = write_task(problems, "hkaa", "exits_py", 5, dying)
    result = import_suite(ws, "gpumode", problems, device="cpu")
    assert sorted(item.target for item in result.imported) == TARGETS
    [skip] = result.skipped
    assert skip.problem == str(folder)
    assert skip.reason.startswith(str(ws.root / "problems/gpumode/hkaa/exits_py/reference.py"))
    assert "the probe's python exited (7) while probing this file" in skip.reason
    # the dying task is the first of four (sorted: hkaa/double, hkaa/exits, ...): its probe answered one, the
    # print did not pass for a reply, and a second run probed the two after it
    assert probe_runs == [4, 2]


def test_a_task_that_cannot_be_read_is_skipped_when_a_suite_is_imported(
    problems: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    (problems / "hkbb" / "triple_py" / "task.yml").write_text("benchmarks: [\n")
    seen: list[list[str]] = []

    def probe(ws: Workspace, requests: list[dict]) -> list[dict]:
        seen.append([Path(r["path"]).name for r in requests])
        return [{"ok": False, "error": "not probed here"}] * len(requests)

    monkeypatch.setattr(importer, "probe_problems", probe)
    monkeypatch.setattr(importer, "_copy_task", lambda ws, task: task.folder.name)
    result = import_suite(ws, "gpumode", problems, device="cpu")
    assert seen == [["double_py", "quadruple_py"]]
    [skip] = [s for s in result.skipped if "triple_py" in s.problem]
    assert skip.reason == f"gpumode: {problems / 'hkbb/triple_py/task.yml'}:2: not valid YAML; fix the file"
    with pytest.raises(HotkernelError, match="not valid YAML"):  # one task named alone: its error, as before
        import_suite(ws, "gpumode", problems / "hkbb" / "triple_py", device="cpu")


def test_a_folder_without_tasks_is_one_line_naming_what_to_give(tmp_path: Path, ws: Workspace) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(HotkernelError) as err:
        import_suite(ws, "gpumode", tmp_path / "empty")
    assert str(err.value) == (
        f"gpumode: no task.yml in {tmp_path / 'empty'} or in the folders one or two levels below it; give a task "
        "folder (reference-kernels/problems/pmpp/vectoradd_py), a suite folder (problems/pmpp) or problems/"
    )


@pytest.fixture(scope="module")
def judge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JudgeProcess]:
    with JudgeProcess(Workspace(tmp_path_factory.mktemp("judge")), python=python()) as judge:
        yield judge


@pytest.mark.slow
def test_one_judge_judges_tasks_of_two_suites_each_with_its_own_utils(
    problems: Path, ws: Workspace, judge: JudgeProcess
) -> None:
    """What a sync lane does: one judge for every target. The hkbb task's reference needs its own suite's
    DeterministicContext after the judge loaded an hkaa task."""
    import_suite(ws, "gpumode", problems, device="cpu")
    for name in ("gm_hkaa_double_py", "gm_hkbb_triple_py", "gm_hkaa_quadruple_py"):
        outcome = run_script(ws, f"targets/{name}/candidate.py", python=python(), judge=judge, timeout_s=120)
        assert outcome.run is not None and outcome.run["status"] == "ok", (name, outcome.status, outcome.reason)


def test_a_probe_that_cannot_start_is_one_error_not_one_skip_per_task(
    problems: Path, ws: Workspace, monkeypatch: pytest.MonkeyPatch, probe_runs: list[int], tmp_path: Path
) -> None:
    """A python that dies before it reads any problem file (here: it cannot import torch's C extension) blames no
    task and is not started again for each."""
    broken = tmp_path / "python-broken"
    broken.write_text('#!/bin/sh\necho "ImportError: libtorch_cpu.so: cannot open shared object file" >&2\nexit 1\n')
    broken.chmod(0o755)
    monkeypatch.setattr(run_targets, "user_python", lambda ws, python=None, probe=True: str(broken))
    with pytest.raises(HotkernelError) as err:
        import_suite(ws, "gpumode", problems, device="cpu")
    assert str(err.value) == (
        f"the probe ({broken}) exited (1) before it imported a problem file: "
        "ImportError: libtorch_cpu.so: cannot open shared object file"
    )
    assert probe_runs == [3]


@pytest.mark.slow
def test_cases_tests_takes_the_smaller_sizes_task_yml_checks_correctness_at(problems: Path, ws: Workspace) -> None:
    from hotkernel.manifest import load_manifest

    result = import_suite(ws, "gpumode", problems / "hkbb", device="cpu", cases="tests")
    [item] = result.imported
    assert item.shapes == ["8x8"] and item.cases == [{"size": 8}]
    assert "shapes from task.yml's tests (the sizes its authors check correctness at), not its benchmarks" in item.flags
    assert load_manifest(ws.manifest).targets["gm_hkbb_triple_py"].cases == [{"size": 8}]


def test_cases_names_its_list_in_errors_and_applies_to_gpumode_alone(problems: Path, ws: Workspace) -> None:
    folder = problems / "hkaa" / "double_py"
    (folder / "task.yml").write_text(
        'tests:\n  - {"size": 8, "seed": 1}\n  - {"size": 8, "dtype": "fp16", "seed": 1}\n'
        'benchmarks:\n  - {"size": 16, "seed": 2}\n'
    )
    assert gpumode.read_task(folder).unfit == ""
    assert gpumode.read_task(folder, "tests").unfit.startswith("task.yml's test 2 gives dtype, which generate_input")
    with pytest.raises(HotkernelError, match=r"^--cases sizes: use one of benchmarks, tests$"):
        import_suite(ws, "gpumode", folder, cases="sizes")
    with pytest.raises(HotkernelError, match=r"^--cases applies to gpumode; shrink a KernelBench problem with --scale"):
        import_suite(ws, "kernelbench", folder, cases="tests")
    (folder / "task.yml").write_text('benchmarks:\n  - {"size": 16, "seed": 2}\n')
    with pytest.raises(HotkernelError, match=r"task.yml: no `tests:` list of shape mappings; add one$"):
        import_suite(ws, "gpumode", folder, cases="tests")
