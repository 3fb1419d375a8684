"""profile: argument building, and every known failure diagnosed. Stand-in ncu/nsys scripts on PATH replay
output captured on the lent H200 (nsys's qdstrm failure, ncu's 'No kernels were profiled'), so the real
run -> diagnose -> clean-up path is exercised on a machine without Nsight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.insight import profile as prof
from hotkernel.insight.base import InsightContext

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

H200 = Path(__file__).parent.parent / "fixtures" / "h200"


def _tool(directory: Path, name: str, body: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"#!{sys.executable}\nimport os, sys, time\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def bare_path(tmp_path, monkeypatch):
    """PATH with nothing but a bin dir for stand-ins; no /opt/nvidia, no CUDA_HOME."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(prof.glob, "glob", lambda pattern: [])
    monkeypatch.setattr("hotkernel.insight.ncu_report.glob.glob", lambda pattern: [])
    monkeypatch.setattr(
        "hotkernel.insight.ncu_report.find_executable",
        lambda name, **kw: (bindir / name) if (bindir / name).is_file() else None,
    )
    monkeypatch.setattr(
        prof, "find_executable", lambda name, **kw: (bindir / name) if (bindir / name).is_file() else None
    )
    return bindir


def test_ncu_argv_defaults_and_options(tmp_path):
    argv = prof.ncu_argv(
        "ncu",
        ["python", "x.py", "--n", "3"],
        tmp_path / "report",
        kernel_regex="rms",
        launch_count=2,
        launch_skip=5,
        cache_control="none",
        clock_control="none",
        section_set=None,
    )
    assert argv[:3] == ["ncu", "--clock-control", "none"]
    assert ["--cache-control", "none"] == argv[3:5]
    assert argv[argv.index("--kernel-name") + 1] == "regex:rms"
    assert argv[argv.index("--launch-count") + 1] == "2" and argv[argv.index("--launch-skip") + 1] == "5"
    assert argv[-4:] == ["python", "x.py", "--n", "3"]
    assert "--set" not in argv
    again = prof.ncu_argv(
        "ncu",
        ["a"],
        tmp_path / "r",
        kernel_regex="regex:^k$",
        launch_count=None,
        launch_skip=None,
        cache_control="all",
        clock_control="base",
        section_set="full",
    )
    assert again[again.index("--kernel-name") + 1] == "regex:^k$" and "--set" in again


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"command": []}, "no command"),
        ({"command": ["x"], "tool": "vtune"}, "unknown"),
        ({"command": ["x"], "cache_control": "some"}, "cache_control"),
        ({"command": ["x"], "clock_control": "fast"}, "clock_control"),
        ({"command": ["x"], "launch_count": -1}, "launch_count"),
        ({"command": ["x"], "timeout_s": 0}, "timeout"),
    ],
)
def test_bad_arguments_raise_one_line(kwargs, match):
    command = kwargs.pop("command")
    with pytest.raises(HotkernelError, match=match):
        prof.profile(command, **kwargs)


@pytest.mark.parametrize("tool", ["ncu", "nsys"])
def test_not_installed(bare_path, tool):
    result = prof.profile(["python", "-c", "1"], tool=tool)
    assert not result.ok and result.diagnosis.code == "not_installed"
    assert "hotkernel trace" in result.diagnosis.fallback


def test_diagnose_nsys_output_captured_on_h200():
    output = (H200 / "nsys_profile.out").read_text() + (H200 / "nsys_profile.err").read_text()
    diagnosis = prof.diagnose("nsys", output, returncode=0)  # nsys exits 0 there
    assert diagnosis.code == "nsys_import_failed"
    assert "ncu" in diagnosis.fallback and "hotkernel trace" in diagnosis.fallback


def test_diagnose_ncu_no_kernels_captured_on_h200():
    diagnosis = prof.diagnose("ncu", (H200 / "ncu_bad_binary.out").read_text(), returncode=0)
    assert diagnosis.code == "no_kernels" and "--kernel-regex" in diagnosis.fix


def test_diagnose_counter_permission_and_plain_failure():
    # the ERR_NVGPUCTRPERM code is ncu's documented error name (not reproducible on the lent H200)
    text = "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access GPU Performance Counters"
    assert prof.diagnose("ncu", text, returncode=1).code == "counters_not_permitted"
    failed = prof.diagnose("ncu", "==ERROR== something\nTraceback...\nValueError: x", returncode=1)
    assert failed.code == "command_failed" and "ValueError: x" in failed.message
    assert prof.diagnose("ncu", "all fine", returncode=0) is None


def test_nsys_qdstrm_failure_end_to_end(bare_path, tmp_path):
    """A stand-in nsys prints exactly what the H200's nsys printed and leaves a .qdstrm behind."""
    out_text = (H200 / "nsys_profile.out").read_text()
    err_text = (H200 / "nsys_profile.err").read_text()
    _tool(
        bare_path,
        "nsys",
        (
            "out = sys.argv[sys.argv.index('-o') + 1]\n"
            "open(out + '.qdstrm', 'wb').write(b'\\0' * 4096)\n"
            f"sys.stdout.write({out_text!r}); sys.stderr.write({err_text!r})\n"
        ),
    )
    result = prof.profile(["python", "-c", "1"], tool="nsys", out_dir=tmp_path / "p")
    assert not result.ok and result.diagnosis.code == "nsys_import_failed"
    assert result.report is None
    assert not list((tmp_path / "p").glob("*.qdstrm")) and any("removed" in n for n in result.notes)
    kept = prof.profile(["python", "-c", "1"], tool="nsys", out_dir=tmp_path / "k", keep_qdstrm=True)
    assert list((tmp_path / "k").glob("*.qdstrm")) and kept.diagnosis.code == "nsys_import_failed"


def test_ncu_no_kernels_end_to_end(bare_path, tmp_path):
    _tool(bare_path, "ncu", f"sys.stdout.write({(H200 / 'ncu_bad_binary.out').read_text()!r})")
    result = prof.profile(["true"], out_dir=tmp_path / "p", kernel_regex="nomatch")
    assert not result.ok and result.diagnosis.code == "no_kernels"
    assert "--kernel-name" in result.command and "regex:nomatch" in result.command
    assert Path(result.logs["stdout"]).read_text().startswith("==WARNING== No kernels")


def test_ncu_report_is_summarised(bare_path, tmp_path):
    """A stand-in ncu writes a report file; `ncu --import` replays the H200's details CSV of that report."""
    details = (H200 / "ncu_import_details_csv.out").read_text()
    _tool(
        bare_path,
        "ncu",
        (
            "if '--import' in sys.argv:\n"
            f"    sys.stdout.write({details!r}); sys.exit(0)\n"
            "out = sys.argv[sys.argv.index('-o') + 1]\n"
            "open(out + '.ncu-rep', 'wb').write(b'rep')\n"
        ),
    )
    import hotkernel.insight.ncu_report as tk  # the one .ncu-rep reader (top and profile diff call it)

    original = tk.load_ncu_report_module
    tk.load_ncu_report_module = lambda: None
    try:
        result = prof.profile(["python", "w.py"], out_dir=tmp_path / "p", top=3)
    finally:
        tk.load_ncu_report_module = original
    assert result.ok and result.report.endswith("report.ncu-rep")
    assert result.summary.kernel_count == 5 and len(result.summary.rows) == 3
    assert result.summary.rows[0].short_name == "cunn_SoftMaxForwardReg"
    assert any("cunn_SoftMaxForwardReg" in line for line in prof.summary_lines(result))


def test_timeout_kills_the_profiler_group(bare_path, tmp_path):
    _tool(
        bare_path,
        "ncu",
        (
            "import subprocess\n"
            "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "print(child.pid, flush=True)\n"
            "time.sleep(60)\n"
        ),
    )
    result = prof.profile(["python", "x.py"], out_dir=tmp_path / "p", timeout_s=1.5)
    assert not result.ok and result.diagnosis.code == "timeout" and "--launch-count 1" in result.diagnosis.fix
    child = int(Path(result.logs["stdout"]).read_text().split()[0])
    time.sleep(0.3)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_cancel_kills_the_profiler(bare_path, tmp_path):
    _tool(bare_path, "ncu", "time.sleep(60)")
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    result = prof.profile(["python", "x.py"], out_dir=tmp_path / "p", cancel=cancel)
    assert result.diagnosis.code == "cancelled"


def test_cli_exits_1_with_diagnosis(bare_path, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from hotkernel.cli.app import app

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["profile", "--tool", "ncu", "-k", "rms", "--", "python", "-c", "1"])
    assert result.exit_code == 1
    assert "not found" in result.output and "hotkernel trace" in result.output
    assert os.environ["PATH"] == str(bare_path)


def test_a_targets_script_is_profiled_through_the_workspace_contract(tmp_path, monkeypatch):
    """A kept candidate file need not end in `hk_contract.main(__file__)`: profile runs it through the contract."""
    ws, _ = make_workspace(tmp_path / "ws")
    candidate = ws.target_dir(TARGET) / "candidate.py"
    candidate.write_text(
        "import torch\n\n\ndef kernel(x, w, *, eps):\n"
        "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w\n"
    )
    monkeypatch.setenv("HOTKERNEL_PYTHON", python())
    ctx = InsightContext.at(ws.root, confined=False)
    command = prof.command_of(prof.Params(target=TARGET, role="candidate"), ctx)
    assert command[1:] == [str(ws.contract_file), "run", str(candidate)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ws.root)
    run = json.loads(proc.stdout.strip().splitlines()[-1])
    assert run["status"] == "ok" and run["role"] == "candidate", run.get("reason")
