"""`hotkernel profile diff`: a subcommand of profile over two captured H200 reports; `profile -- CMD` unchanged."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

H200 = Path(__file__).parent.parent / "fixtures" / "h200"


def hotkernel(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", *args],
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_two_reports_relative_to_the_current_directory(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_bytes((H200 / "ncu_details_csv.out").read_bytes())
    (tmp_path / "b.csv").write_bytes((H200 / "ncu_kernel_regex_csv.out").read_bytes())
    done = hotkernel("profile", "diff", "a.csv", "b.csv", "-n", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "A a.csv (ncu-csv, 5 launches)" and "moved most:" in lines
    assert "  rmsnorm_kernel: time 35.14 -> 31.87 us (-9.3%); DRAM 77.38 -> 70.77 % (-6.6 pts)" in lines
    assert any(line.startswith("... 3 lighter kernels not shown") for line in lines)
    as_json = hotkernel("profile", "diff", "a.csv", "b.csv", "--json", cwd=tmp_path)
    result = json.loads(as_json.stdout)
    assert result["kernel_count"] == 5 and {k["match"] for k in result["kernels"]} == {"name", "only_a"}


def test_bad_input_is_one_line_without_traceback(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_bytes((H200 / "ncu_details_csv.out").read_bytes())
    for args, expected in (
        (("a.csv",), "error: profile diff: give two reports (A B)"),
        (("a.csv", "missing.csv"), "error: profile diff: report B (b) 'missing.csv' is not a file here"),
        (("--command", "python3 x.py"), "error: profile diff: --command given 1 time(s)"),
        (("a.csv", "a.csv", "-n", "0"), "error: profile diff: --top:"),
    ):
        done = hotkernel("profile", "diff", *args, cwd=tmp_path)
        assert done.returncode in (1, 2) and done.stderr.startswith(expected), (args, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_profile_after_double_dash_still_profiles_a_command_named_diff(tmp_path: Path) -> None:
    """`hotkernel profile -- diff a b` is a profile of the command `diff a b` (no ncu here: its diagnosis)."""
    done = hotkernel("profile", "--", "diff", "a", "b", cwd=tmp_path, env={"PATH": str(tmp_path), "CUDA_HOME": ""})
    if "ncu report" in done.stdout:
        pytest.skip("an Nsight Compute install outside PATH (/opt/nvidia) was found")
    assert done.returncode == 1 and done.stdout.startswith("ncu failed: ncu (Nsight Compute) not found"), done.stdout
    assert "profile diff" not in done.stdout + done.stderr
    help_text = hotkernel("profile", "--help", cwd=tmp_path).stdout
    assert "hotkernel profile diff" in help_text
