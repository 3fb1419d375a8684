"""torch_trace: the profiler wrapper really runs in the user's interpreter (CPU here); bad input: one line."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.insight.torch_trace import rank_kernels, summary_lines, torch_trace

H200 = Path(__file__).parent.parent / "fixtures" / "h200"
needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")

TINY = """
import sys
import torch
x = torch.randn(64, 128)
w = torch.randn(128, 32)
for _ in range(3):
    y = torch.relu(x @ w)
print("args", sys.argv[1:])
"""


@needs_torch
@pytest.mark.slow
def test_trace_cpu_script_for_real(tmp_path):
    script = tmp_path / "tiny.py"
    script.write_text(TINY)
    result = torch_trace(script, script_args=["--flag", "v"], python=sys.executable, top=3, out_dir=tmp_path / "o")
    assert not result.cuda and result.kernels == [] and result.kernel_count == 0
    assert any("CPU ops only" in note for note in result.notes)
    names = [op.name for op in result.ops]
    assert "aten::mm" in names and len(result.ops) <= 3
    mm = result.ops[names.index("aten::mm")]
    assert mm.calls == 3 and mm.input_shapes == [[64, 128], [128, 32]] and mm.self_cpu_ms > 0
    assert Path(result.files["table"]).read_text().count("aten::mm") >= 1
    assert json.loads(Path(result.files["chrome_trace"]).read_text())["traceEvents"]
    assert "args ['--flag', 'v']" in Path(result.files["stdout"]).read_text()
    assert any("aten::mm" in line for line in summary_lines(result))


@needs_torch
@pytest.mark.slow
def test_script_that_raises_is_reported_not_a_traceback(tmp_path):
    script = tmp_path / "boom.py"
    script.write_text("import torch\ntorch.ones(3).sum()\nraise ValueError('bad shape 7')\n")
    result = torch_trace(script, python=sys.executable, out_dir=tmp_path / "o", chrome_trace=False)
    assert any("ValueError: bad shape 7" in note for note in result.notes)
    assert "ValueError" in Path(result.files["traceback"]).read_text()
    assert "chrome_trace" not in result.files


def test_missing_script_and_bad_top(tmp_path):
    with pytest.raises(HotkernelError, match="not found"):
        torch_trace(tmp_path / "nope.py", python=sys.executable)
    script = tmp_path / "s.py"
    script.write_text("")
    with pytest.raises(HotkernelError, match="top=0"):
        torch_trace(script, python=sys.executable, top=0)


def test_interpreter_without_torch(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    fake = tmp_path / "py"
    fake.write_text(
        f'#!/bin/sh\nexec {sys.executable} -c \'import sys; sys.modules["torch"] = None; '
        'import runpy; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name="__main__")\' "$@"\n'
    )
    fake.chmod(0o755)
    with pytest.raises(HotkernelError, match="failed before writing results.*torch") as info:
        torch_trace(script, python=str(fake), out_dir=tmp_path / "o")
    assert "\n" not in str(info.value)


def test_timeout_kills_the_script(tmp_path):
    script = tmp_path / "slow.py"
    script.write_text("import time\ntime.sleep(60)\n")
    fake = tmp_path / "py"  # no torch needed to hit the timeout: the wrapper is killed while importing/running
    fake.write_text("#!/bin/sh\nsleep 60\n")
    fake.chmod(0o755)
    with pytest.raises(HotkernelError, match="ran past 1 s"):
        torch_trace(script, python=str(fake), out_dir=tmp_path / "o", timeout_s=1)


def test_rank_kernels_shares():
    kernels = [
        {"name": "a", "calls": 2, "total_us": 30.0},
        {"name": "b", "calls": 1, "total_us": 10.0},
        {"name": "c", "calls": 4, "total_us": 60.0},
    ]
    ranked, total = rank_kernels(kernels, 2)
    assert total == 100.0 and [k.name for k in ranked] == ["c", "a"]
    assert ranked[0].share_pct == 60.0 and ranked[0].mean_us == 15.0 and ranked[1].mean_us == 15.0
