"""``hotkernel new``: creates the manifest (schema modeline), adds the entry (minimal diff), renders it."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hotkernel.cli.app import app
from hotkernel.cli.commands.new import parse_kwarg
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest, resolved_target

KERNEL = (
    "import torch\n\n\ndef rms(x, w, *, eps=1e-6):\n"
    "    return torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)\n"
)
EXISTING = """\
# yaml-language-server: $schema=schemas/hotkernel.schema.json
version: 1
defaults:
  device: cpu   # this box has no GPU

targets:
  # keep me
  first:
    from: ./k.py:rms
    shapes: [8x16]
    extra: [w:16]
"""


def render_available() -> bool:
    try:
        import hotkernel.run.render  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("HOTKERNEL_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(KERNEL, encoding="utf-8")
    return tmp_path


def new(*args: str) -> dict:
    result = CliRunner().invoke(app, ["new", *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def new_subprocess(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HOTKERNEL_WORKSPACE"}
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", "new", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_new_creates_a_manifest_with_the_schema_modeline(workspace: Path) -> None:
    out = new(
        "rmsnorm",
        "--from",
        "k.py:rms",
        "--shape",
        "64x128",
        "--shape",
        "8x128",
        "--extra",
        "w:128",
        "--dtype",
        "float32",
        "--kwarg",
        "eps=1e-6",
        "--device",
        "cpu",
    )
    assert out["created_manifest"] is True and out["replaced"] is False
    text = (workspace / "hotkernel.yaml").read_text(encoding="utf-8")
    first_line, _, rest = text.partition("\n")
    prefix = "# yaml-language-server: $schema="
    assert first_line.startswith(prefix)
    schema = workspace / first_line[len(prefix) :]
    assert (
        schema.resolve().is_file()
        and json.loads(schema.read_text(encoding="utf-8"))["title"] == "hotkernel.yaml"
    )
    assert rest == (
        "version: 1\ntargets:\n  rmsnorm:\n    from: ./k.py:rms\n    shapes: [64x128, 8x128]\n"
        "    extra: [w:128]\n"
        "    dtype: float32\n    kwargs: {eps: 1e-06}\n    device: cpu\n"
    )
    resolved = resolved_target(load_manifest(workspace / "hotkernel.yaml"), "rmsnorm")
    assert out["resolved"] == resolved
    assert resolved["dtype"] == "fp32" and resolved["kwargs"] == {"eps": 1e-6} and resolved["device"] == "cpu"


def test_new_adds_to_an_existing_manifest_with_a_minimal_diff(workspace: Path) -> None:
    (workspace / "hotkernel.yaml").write_text(EXISTING, encoding="utf-8")
    out = new("softmax", "--from", "torch:softmax", "--shape", "32x64", "--kwarg", "dim=-1")
    assert out["created_manifest"] is False
    after = (workspace / "hotkernel.yaml").read_text(encoding="utf-8")
    assert after.startswith(EXISTING)
    added = [line for line in difflib.ndiff(EXISTING.splitlines(), after.splitlines()) if line[:1] in "+-"]
    assert added == [
        "+   softmax:",
        "+     from: torch:softmax",
        "+     shapes: [32x64]",
        "+     kwargs: {dim: -1}",
    ]


@pytest.mark.skipif(not render_available(), reason="hotkernel.run.render is being written by another helper")
def test_new_renders_and_force_keeps_the_candidate(workspace: Path) -> None:
    out = new(
        "rmsnorm",
        "--from",
        "./k.py:rms",
        "--shape",
        "64x128",
        "--extra",
        "w:128",
        "--dtype",
        "fp32",
        "--kwarg",
        "eps=1e-6",
        "--device",
        "cpu",
    )
    assert out["rendered"] is True
    baseline = workspace / "targets" / "rmsnorm" / "baseline.py"
    candidate = workspace / "targets" / "rmsnorm" / "candidate.py"
    assert baseline.is_file() and candidate.is_file()
    candidate.write_text(candidate.read_text(encoding="utf-8") + "# my edit\n", encoding="utf-8")
    out = new(
        "rmsnorm",
        "--from",
        "./k.py:rms",
        "--shape",
        "32x128",
        "--extra",
        "w:128",
        "--dtype",
        "fp32",
        "--device",
        "cpu",
        "--force",
    )
    assert out["replaced"] is True
    assert candidate.read_text(encoding="utf-8").endswith("# my edit\n")
    assert "32" in baseline.read_text(encoding="utf-8")


def test_existing_name_needs_force(workspace: Path) -> None:
    (workspace / "hotkernel.yaml").write_text(EXISTING, encoding="utf-8")
    done = new_subprocess(
        "first", "--from", "./k.py:rms", "--shape", "4x16", "--extra", "w:16", cwd=workspace
    )
    assert done.returncode == 1
    assert done.stderr.strip().count("\n") == 0 and "add --force" in done.stderr
    assert (workspace / "hotkernel.yaml").read_text(encoding="utf-8") == EXISTING


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["t", "--from", "./k.py:rms", "--shape", "4096xx"], "--shape: '4096xx' is not a shape"),
        (
            ["t", "--from", "./k.py:rms", "--shape", "8", "--dtype", "bf17"],
            "--dtype: 'bf17' is not allowed; use one of bf16, fp16, fp32, fp8_e4m3, fp8_e5m2",
        ),
        (["t", "--from", "./missing.py:rms", "--shape", "8"], "--from: file './missing.py' not found"),
        (
            ["t", "--from", "./k.py:rsm", "--shape", "8"],
            "--from: ./k.py defines no function 'rsm'; did you mean 'rms'",
        ),
        (["t", "--from", "../k.py:rms", "--shape", "8"], "outside the workspace"),
        (["a/b", "--from", "./k.py:rms", "--shape", "8"], "target name 'a/b' is not allowed"),
        (["..", "--from", "./k.py:rms", "--shape", "8"], "target name '..' is not allowed"),
        (["t", "--from", "./k.py:rms", "--shape", "8", "--rotate", "q"], "--rotate: 'q' is not an input"),
        (["t", "--from", "./k.py:rms", "--shape", "8", "--kwarg", "eps"], "--kwarg 'eps': write NAME=VALUE"),
    ],
)
def test_bad_input_exits_1_with_one_line_and_changes_nothing(
    workspace: Path, args: list[str], expected: str
) -> None:
    (workspace / "hotkernel.yaml").write_text(EXISTING, encoding="utf-8")
    done = new_subprocess(*args, cwd=workspace)
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1, done.stderr
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert (workspace / "hotkernel.yaml").read_text(encoding="utf-8") == EXISTING
    assert not (workspace / "targets").exists()


def test_failed_new_in_an_empty_directory_leaves_no_manifest(workspace: Path) -> None:
    done = new_subprocess("t", "--from", "./k.py:rms", "--shape", "8", "--dtype", "bf17", cwd=workspace)
    assert done.returncode == 1
    assert not (workspace / "hotkernel.yaml").exists()


def test_from_a_subdirectory_paths_are_rewritten_relative_to_the_root(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workspace / "hotkernel.yaml").write_text(EXISTING, encoding="utf-8")
    sub = workspace / "kernels"
    sub.mkdir()
    (sub / "soft.py").write_text("import torch\n\n\ndef softmax(x, *, dim):\n    return x.softmax(dim)\n")
    monkeypatch.chdir(sub)
    new("soft", "--from", "soft.py:softmax", "--shape", "8x8", "--kwarg", "dim=-1")
    assert load_manifest(workspace / "hotkernel.yaml").targets["soft"].from_ == "./kernels/soft.py:softmax"


def test_parse_kwarg_reads_yaml_scalars() -> None:
    assert parse_kwarg("eps=1e-6") == ("eps", 1e-6)
    assert parse_kwarg("dim=-1") == ("dim", -1)
    assert parse_kwarg("causal=true") == ("causal", True)
    assert parse_kwarg("mode=fast") == ("mode", "fast")
    assert parse_kwarg("dims=[0, 1]") == ("dims", [0, 1])
    with pytest.raises(HotkernelError):
        parse_kwarg("1x=2")
