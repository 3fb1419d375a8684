"""The manifest's problem-file check: a GPU MODE reference under another name is a problem file where the probe
can tell its reference; a file without one is refused with the one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotkernel.manifest.problem import ManifestProblem
from hotkernel.manifest.problem_files import problem_layout

GENERATE = "def generate_input(n, seed):\n    return (n,)\n\n"


@pytest.mark.parametrize(
    "body",
    [
        "def ref_kernel(data):\n    return data\n",
        "def reference(data):\n    return data\n",
        "def softmax_reference(data):\n    return data\n\ncheck_implementation = make(softmax_reference)\n",
        "def the_one_function(data):\n    return data\n\ndef helper(a, b):\n    return a\n",
    ],
)
def test_a_gpumode_reference_under_another_name_is_a_problem_file(tmp_path: Path, body: str) -> None:
    (tmp_path / "reference.py").write_text(GENERATE + body, encoding="utf-8")
    assert problem_layout(tmp_path, "reference.py", ("targets", "t", "from")) == "gpumode"


def test_a_file_with_no_reference_is_not_a_problem_file(tmp_path: Path) -> None:
    body = "def first(data):\n    return data\n\ndef second(data):\n    return data\n"
    (tmp_path / "reference.py").write_text(GENERATE + body, encoding="utf-8")
    with pytest.raises(ManifestProblem, match="reference.py is not a problem file"):
        problem_layout(tmp_path, "reference.py", ("targets", "t", "from"))


KERNELS = """import functools


def two(x, y, alpha=2.0):
    return x * alpha + y


def keyword_only(x, *, eps):
    return x + eps


def star(*xs):
    return xs[0]


def pos_only(x, w, /):
    return x * w


def pack(x, w):
    return x, w


@functools.lru_cache
def decorated(x):
    return x
"""


def _check(root: Path, **fields) -> None:
    from hotkernel.manifest.load import check_target_fields

    check_target_fields("t", {"shapes": ["4x8"], **fields}, root)


@pytest.mark.parametrize(
    ("fields", "key", "message"),
    [
        # KernelBench-style scale_add(x, y, alpha=2.0) added with one --shape: the baseline would crash at sync
        (
            {"from": "./k.py:two"},
            "from",
            "./k.py:two needs y, which the target does not give: add an input "
            "(extra: [y:SHAPE], --extra y:SHAPE), a constant (kwargs: {y: VALUE}, --kwarg y=VALUE) or a default",
        ),
        (
            {"from": "./k.py:two", "extra": ["y:8", "z:8", "q:8"]},
            "from",
            "takes 3 positional parameter(s) (x, y, alpha) and the target gives 4 input(s)",
        ),
        ({"from": "./k.py:two", "extra": ["y:8"], "kwargs": {"beta": 1}}, "from", "has no parameter beta"),
        ({"from": "./k.py:keyword_only"}, "from", "./k.py:keyword_only needs eps"),
        ({"from": "./k.py:pos_only", "kwargs": {"w": 1.0}}, "from", "./k.py:pos_only needs w"),  # not by keyword
        (
            {"from": "./k.py:two", "reference": "./k.py:keyword_only", "extra": ["y:8"]},
            "reference",
            "./k.py:keyword_only takes 1 positional parameter(s) (x) and the target gives 2",
        ),
        # derive(*raw) gets the first input and extra; from gets what derive returns (inputs)
        ({"from": "./k.py:two", "derive": "./k.py:pack", "inputs": ["a", "b"]}, "derive", "./k.py:pack needs w"),
    ],
)
def test_a_function_the_target_cannot_call_is_refused_with_the_fix(
    tmp_path: Path, fields: dict, key: str, message: str
) -> None:
    (tmp_path / "k.py").write_text(KERNELS, encoding="utf-8")
    with pytest.raises(ManifestProblem) as caught:
        _check(tmp_path, **fields)
    assert caught.value.loc == ("targets", "t", key)
    assert message in caught.value.message and "\n" not in caught.value.message


@pytest.mark.parametrize(
    "fields",
    [
        {"from": "./k.py:two", "extra": ["y:8"]},
        {"from": "./k.py:two", "extra": ["y:8"], "kwargs": {"alpha": 3.0}},
        {"from": "./k.py:two", "kwargs": {"y": 1.0}},  # a constant by keyword
        {"from": "./k.py:keyword_only", "kwargs": {"eps": 1e-6}},
        {"from": "./k.py:star", "extra": ["y:8", "z:8", "q:8"]},
        {"from": "./k.py:pos_only", "extra": ["w:8"]},
        {"from": "./k.py:decorated", "extra": ["y:8"]},  # a decorator may change what it takes: not checked
        {"from": "./k.py:two", "derive": "./k.py:pack", "inputs": ["a", "b"], "extra": ["w:8"]},
    ],
)
def test_a_function_the_target_can_call_is_accepted(tmp_path: Path, fields: dict) -> None:
    (tmp_path / "k.py").write_text(KERNELS, encoding="utf-8")
    _check(tmp_path, **fields)


def test_structured_names_inputs_of_a_module_problem(tmp_path: Path) -> None:
    (tmp_path / "reference.py").write_text(GENERATE + "def ref_kernel(data):\n    return data\n", encoding="utf-8")
    (tmp_path / "k.py").write_text(KERNELS, encoding="utf-8")
    with pytest.raises(ManifestProblem, match="structured inputs go with a module problem"):
        _check(tmp_path, **{"from": "./k.py:two", "extra": ["y:4x8"], "structured": ["x"]})
    with pytest.raises(ManifestProblem, match="'other' is not an input of this target; inputs: data"):
        _check(tmp_path, **{"from": "./reference.py", "input": "data", "structured": ["other"]})
    _check(tmp_path, **{"from": "./reference.py", "input": "data", "structured": ["data"]})
