"""The CPU-runnable parts of lab/benchmarks/device/gpumode_real.sh: its shell syntax, its arguments, and the
submission candidate gpumode_check.py writes from a rendered candidate."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "lab" / "benchmarks" / "device" / "gpumode_real.sh"
CHECK = REPO / "lab" / "benchmarks" / "device" / "gpumode_check.py"

RENDERED = '''"""Candidate."""

import hk_contract  # noqa: E402  (the vendored contract)

_baseline_kernel = hk_contract.load_function("./problems/gpumode/s/t/reference.py", ".")


# Start here: replace the line below with your kernel, with this signature:
#
#     def kernel(data):
#         return _baseline_kernel(data)
kernel = _baseline_kernel


# GPU MODE's form: with a submission's custom_kernel(data) pasted above, this one line makes it the
# kernel (data is the one input):
# kernel = custom_kernel


if __name__ == "__main__":
    hk_contract.main(__file__)
# hotkernel: untouched generated candidate 0123
'''

SUBMISSION = """from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    x, out = data
    out[...] = 2 * x
    return out
"""


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=60, check=False
    )


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_script_parses() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, check=False).returncode == 0


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "usage: gpumode_real.sh OUT_DIR GM_DIR BUDGET_S"),
        (("out", "gm"), "usage: gpumode_real.sh OUT_DIR GM_DIR BUDGET_S"),
        (("out", "gm", "10m"), "BUDGET_S must be whole seconds, got '10m'"),
        (("out", "/nonexistent-gm", "600"), "no /nonexistent-gm/problems folder"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(args: tuple[str, ...], says: str) -> None:
    proc = run(*args)
    assert proc.returncode == 2 and says in proc.stderr, proc.stderr


def test_an_unknown_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "problems").mkdir()
    env = {"PATH": "/usr/bin:/bin", "HK_GM_DEVICE": "rocm"}
    proc = run(str(tmp_path / "out"), str(tmp_path), "60", env=env)
    assert proc.returncode == 2 and "HK_GM_DEVICE must be cuda or cpu, got 'rocm'" in proc.stderr


def test_a_submission_is_pasted_above_the_adapter_with_it_on() -> None:
    spec = importlib.util.spec_from_file_location("gpumode_check_script", CHECK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = module.submission_candidate(RENDERED, SUBMISSION)
    assert text.index("_baseline_kernel = hk_contract.load_function") < text.index("from task import input_t")
    assert text.index("def custom_kernel") < text.index("\nkernel = custom_kernel\n")
    assert text.index("\nkernel = _baseline_kernel\n") < text.index("\nkernel = custom_kernel\n")  # the adapter wins
    assert "# kernel = custom_kernel" not in text and "untouched generated candidate" not in text
    compile(text, "candidate.py", "exec")
    several = RENDERED.replace(
        "# kernel = custom_kernel", "# kernel = lambda *data: custom_kernel(tuple(data))  # noqa: E731"
    )
    text = module.submission_candidate(several, SUBMISSION)
    assert "\nkernel = lambda *data: custom_kernel(tuple(data))  # noqa: E731\n" in text
    with pytest.raises(ValueError, match="documents no `kernel = ...custom_kernel...` adapter"):
        module.submission_candidate("def kernel(x):\n    return x\n", SUBMISSION)
