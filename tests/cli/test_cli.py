"""The command line: insight verbs generated from the registry keep their flags; usage errors exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel.insight.registry import REGISTRY

# Every flag the hand-written insight commands had: users and the kernel-speedrun skill type these.
FLAGS = {
    "gpu": ["--json"],
    "roofline": ["--flops", "--bytes", "--gpu", "--dtype", "--measured-gbps", "--list", "--json"],
    "calibrate": ["--python", "--mib", "--device", "--timeout", "--json"],
    "trace": ["-n", "--top", "--python", "--out", "--timeout", "--no-chrome-trace", "--json"],
    "profile": [
        "--tool",
        "--kernel-regex",
        "-k",
        "--launch-count",
        "-c",
        "--launch-skip",
        "-s",
        "--cache-control",
        "--clock-control",
        "--set",
        "--timeout",
        "--out",
        "-n",
        "--top",
        "--json",
    ],
    "profile diff": [
        "--command",
        "--target",
        "-t",
        "--kernel-regex",
        "-k",
        "--launch-count",
        "-c",
        "--launch-skip",
        "-s",
        "--timeout",
        "--out",
        "-n",
        "--top",
        "--json",
    ],
    "top": ["-n", "--json"],
    "disasm": ["--kernel", "-k", "--ptx", "--max-lines", "--out", "--json"],
}


def hotkernel(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOTKERNEL_PYTHON": sys.executable, "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def test_every_registry_tool_is_a_command_with_its_flags() -> None:
    """Each verb's help, from the app in this process (the entry point itself is the other tests' subject)."""
    from typer.testing import CliRunner

    from hotkernel.cli.app import app

    assert {tool.CLI_NAME for tool in REGISTRY.values()} == set(FLAGS)
    for verb, flags in FLAGS.items():
        done = CliRunner().invoke(app, [*verb.split(), "--help"], env={"COLUMNS": "200"})
        assert done.exit_code == 0, done.output
        for flag in flags:
            assert f" {flag}" in done.stdout, f"hotkernel {verb} lost {flag}"


def test_help_prose_is_reflowed_not_broken_at_the_docstrings_lines() -> None:
    from hotkernel.cli.app import reflowed

    assert reflowed("One.\n\n    Two and\n    three.\n    - a list item\n      stays\n") == (
        "One.\n\nTwo and three.\n- a list item\n  stays"
    )
    done = hotkernel("sync", "--help")  # COLUMNS=200: a line ends only at a paragraph's end or the width
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "A faster result that would be a new best is verified a second time" in text
    assert all(len(line) > 120 for line in done.stdout.splitlines() if "A faster result" in line)


def test_unknown_option_is_a_usage_error(tmp_path: Path) -> None:
    done = hotkernel("top", "x.csv", "--tool", "ncu", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "No such option: --tool" in done.stderr
    assert "internal error" not in done.stderr


def test_bad_value_names_the_flag_and_exits_2(tmp_path: Path) -> None:
    done = hotkernel("roofline", "--bytes", "5", "--gpu", "H200", "--dtype", "fp7", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: roofline: --dtype:") and "'fp7'" in done.stderr
    missing = hotkernel("roofline", "--flops", "1", "--gpu", "H200", cwd=tmp_path)
    assert missing.returncode == 2 and "--bytes" in missing.stderr


def test_roofline_json_and_list(tmp_path: Path) -> None:
    done = hotkernel("roofline", "--flops", "1e9", "--bytes", "1e8", "--gpu", "H200", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["bound"] == "memory" and result["attainable_ms"] == pytest.approx(1e8 / 4800e9 * 1e3)
    listing = hotkernel("roofline", "--list", cwd=tmp_path)
    assert listing.returncode == 0 and "H200" in listing.stdout


def test_top_reads_a_report_relative_to_the_current_directory(tmp_path: Path) -> None:
    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "h200" / "ncu_import_details_csv.out"
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "ncu.csv").write_bytes(fixture.read_bytes())
    done = hotkernel("top", "reports/ncu.csv", "-n", "2", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert 1 <= len(json.loads(done.stdout)["rows"]) <= 2


def test_trace_runs_the_script_from_the_current_directory(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "where.py").write_text(
        "import os, pathlib, sys\npathlib.Path(sys.argv[1]).write_text(os.getcwd())\n"
    )
    done = hotkernel("trace", "sub/where.py", "cwd.txt", "--no-chrome-trace", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "cwd.txt").read_text() == str(tmp_path)


def test_the_cli_imports_neither_the_mcp_sdk_nor_torch() -> None:
    code = (
        "import sys, hotkernel.cli.app; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'torch', 'triton'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_a_missing_command_module_is_an_error_not_skipped() -> None:
    """A command module that fails to import stops the CLI (no silent fallback hides a broken verb)."""
    code = (
        "import importlib, sys\n"
        "real = importlib.import_module\n"
        "def fake(name, *a, **k):\n"
        "    if name == 'hotkernel.cli.commands.plan':\n"
        "        raise ModuleNotFoundError(name, name=name)\n"
        "    return real(name, *a, **k)\n"
        "importlib.import_module = fake\n"
        "try:\n"
        "    import hotkernel.cli.app\n"
        "except ModuleNotFoundError as err:\n"
        "    print('raised', err.name)\n"
        "else:\n"
        "    print('swallowed')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "raised hotkernel.cli.commands.plan"
