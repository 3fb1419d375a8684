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
