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
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.manifest.keys import parse_kwarg

REPO = Path(__file__).resolve().parents[2]
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
    """The modeline points at the workspace's own schemas/ copy, never into the install location."""
    schema_copy = workspace / "schemas" / "hotkernel.schema.json"
    schema_copy.parent.mkdir()
    schema_copy.write_text((REPO / "schemas" / "hotkernel.schema.json").read_text(encoding="utf-8"), encoding="utf-8")
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
    assert first_line == "# yaml-language-server: $schema=schemas/hotkernel.schema.json"
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
    assert out["render"]["written"]
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
    done = new_subprocess("first", "--from", "./k.py:rms", "--shape", "4x16", "--extra", "w:16", cwd=workspace)
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
def test_bad_input_exits_1_with_one_line_and_changes_nothing(workspace: Path, args: list[str], expected: str) -> None:
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


def test_new_writes_no_modeline_into_the_install_location(workspace: Path) -> None:
    new("t", "--from", "k.py:rms", "--shape", "8", "--extra", "w:8", "--device", "cpu")
    text = (workspace / "hotkernel.yaml").read_text(encoding="utf-8")
    assert "$schema" not in text and ".." not in text
    assert text.startswith("version: 1\ntargets:\n  t:\n")


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("k.py:Model", "'Model' in ./k.py is not a function (a class or a value)"),
        ("k.py", "k.py is not a problem file: it defines no get_inputs, get_init_inputs"),  # docs/suites.md
    ],
)
def test_new_refuses_a_class_or_a_bare_file(workspace: Path, ref: str, words: str) -> None:
    (workspace / "k.py").write_text(KERNEL + "\n\nclass Model:\n    pass\n", encoding="utf-8")
    done = new_subprocess("t", "--from", ref, "--shape", "8", cwd=workspace)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: --from: ") and words in done.stderr, done.stderr
    assert not (workspace / "hotkernel.yaml").exists() and not (workspace / "targets").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["--from", "torch.nn.functional:no_such_function"],
            "cannot import torch.nn.functional:no_such_function in ",
        ),
        (
            ["--from", "no_such_module_hk:f"],
            "No module named 'no_such_module_hk'); fix the name, or set HOTKERNEL_PYTHON",
        ),
        (
            ["--from", "torch.nn.functional:layer_norm"],
            "torch.nn.functional:layer_norm cannot take 1 input(s): missing a required argument: 'normalized_shape'; "
            "give what it needs as an input (--extra NAME:SHAPE) or a constant (--kwarg NAME=VALUE)",
        ),
        (["--from", "k.py:rms", "--extra", "w:8", "--reference", "torch.nn.functional:nope"], "cannot import"),
    ],
)
def test_new_refuses_a_module_function_that_does_not_import_or_cannot_take_the_call(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], words: str
) -> None:
    """A ``module:function`` is looked up in the user's python when a target is added (the loader reads files only):
    a missing one, or one the contract's call does not fit, is one line with the fix and nothing is written."""
    pytest.importorskip("torch")
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    done = new_subprocess("t", *args, "--shape", "8x16", "--device", "cpu", cwd=workspace)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    key = "--reference" if "--reference" in args else "--from"
    assert done.stderr.startswith(f"error: {key}: ") and words in done.stderr, done.stderr
    assert not (workspace / "hotkernel.yaml").exists() and not (workspace / "targets").exists()


def test_new_takes_a_module_function_the_call_fits(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same check lets through what fits: kwargs that fill a required parameter, and a builtin whose signature
    Python cannot read (torch.topk): nothing is said about it."""
    pytest.importorskip("torch")
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    new("ln", "--from", "torch.nn.functional:layer_norm", "--shape", "8x16", "--kwarg", "normalized_shape=[16]")
    new("tk", "--from", "torch:topk", "--shape", "8x16", "--kwarg", "k=4", "--device", "cpu")
    assert {"ln", "tk"} <= set(load_manifest(workspace / "hotkernel.yaml").targets)


def test_an_update_that_leaves_the_call_alone_does_not_look_the_function_up_again(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's python is started to check a module function when the target is added, and again only for an
    update of a key that changes the call (from, extra, kwargs...), not for one of atol (an agent's frequent edit)."""
    import hotkernel.run.targets as targets_module
    from hotkernel.run.targets import change_target
    from hotkernel.workspace.paths import Workspace

    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    checks: list[str] = []
    real = targets_module.run_user_python
    monkeypatch.setattr(targets_module, "run_user_python", lambda *a, **k: checks.append(a[3]) or real(*a, **k))
    ws = Workspace(workspace)
    fields = {"from": "operator:mul", "shapes": ["8"], "extra": ["y:8"], "device": "cpu", "dtype": "fp32"}
    change_target(ws, "m", fields)
    change_target(ws, "m", {"atol": 0.01}, mode="update")
    assert checks == ["check"]
    with pytest.raises(HotkernelError, match="operator:mul cannot take 1 input"):
        change_target(ws, "m", {"extra": None}, mode="update")
    assert checks == ["check", "check"]


def test_new_prints_the_bounds_the_contract_applies(workspace: Path) -> None:
    from hotkernel.contract.correctness import tolerances

    result = CliRunner().invoke(
        app,
        [
            "new",
            "t",
            "--from",
            "k.py:rms",
            "--shape",
            "8",
            "--extra",
            "w:8",
            "--dtype",
            "fp16",
            "--rtol",
            "0.01",
            "--device",
            "cpu",
        ],
    )
    assert result.exit_code == 0, result.output
    bounds = tolerances("fp16", {"rtol": 0.01})
    assert bounds["rtol"] == 0.01 and bounds["atol"] == 2.5e-3
    line = next(text for text in result.output.splitlines() if text.startswith("correctness"))
    assert line.startswith(
        f"correctness (fp16): |out - ref| <= {bounds['atol']:g} + {bounds['rtol']:g} * |ref| elementwise, "
        f"relative L2 error <= {bounds['rel_l2_max']:g}, correlation with the reference >= {bounds['min_corr']:g}"
    ), line


def test_ten_concurrent_news_all_land(workspace: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HOTKERNEL_WORKSPACE"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hotkernel",
                "new",
                f"t{i}",
                "--from",
                "torch:neg",
                "--shape",
                f"{i + 1}x8",
                "--device",
                "cpu",
            ],
            cwd=workspace,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(10)
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * 10, [err for _, err in outputs]
    manifest = load_manifest(workspace / "hotkernel.yaml")
    assert sorted(manifest.targets) == sorted(f"t{i}" for i in range(10))
    for i in range(10):
        assert resolved_target(manifest, f"t{i}")["shapes"] == [f"{i + 1}x8"]
        assert (workspace / "targets" / f"t{i}" / "baseline.py").is_file()


def test_new_waits_for_the_workspace_lock(workspace: Path) -> None:
    """An edit taken while another holds the workspace lock lands after it, on the text as it is then."""
    import threading

    from hotkernel.workspace.lockfile import workspace_lock
    from hotkernel.workspace.paths import Workspace

    new("a", "--from", "torch:neg", "--shape", "8", "--device", "cpu")
    ws = Workspace(workspace)
    released = threading.Event()
    with workspace_lock(ws, command="test"):
        child = subprocess.Popen(
            [sys.executable, "-m", "hotkernel", "new", "b", "--from", "torch:neg", "--shape", "8", "--device", "cpu"],
            cwd=workspace,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        text = (workspace / "hotkernel.yaml").read_text(encoding="utf-8")
        (workspace / "hotkernel.yaml").write_text(text + "  # held\n", encoding="utf-8")
        threading.Timer(1.5, released.set).start()
        released.wait()
        assert child.poll() is None  # still waiting
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    after = (workspace / "hotkernel.yaml").read_text(encoding="utf-8")
    assert "# held" in after and sorted(load_manifest(workspace / "hotkernel.yaml").targets) == ["a", "b"]


def test_concurrent_edits_from_threads_of_one_process_all_land(workspace: Path) -> None:
    """The workspace lock is re-entrant per process (an MCP server's tool threads share it): edits still queue.

    Without the process's own edit lock, 13 and 16 of 32 targets landed in two of three rounds."""
    from concurrent.futures import ThreadPoolExecutor

    from hotkernel.run.targets import change_target
    from hotkernel.workspace.paths import Workspace

    for round_ in range(3):
        root = workspace / f"round{round_}"
        root.mkdir()
        ws = Workspace(root)

        def add(index: int, ws: Workspace = ws) -> None:  # operator:neg: its module check does not import torch
            change_target(ws, f"t{index}", {"from": "operator:neg", "shapes": [f"{index + 1}x8"], "device": "cpu"})

        with ThreadPoolExecutor(max_workers=16) as pool:
            list(pool.map(add, range(32)))
        assert sorted(load_manifest(ws.manifest).targets) == sorted(f"t{i}" for i in range(32)), round_


def test_a_new_entry_checks_its_module_functions_before_it_takes_the_lock(workspace: Path) -> None:
    """The check runs the user's python (1.7 s here where it imports torch): done under the lock, 32 edits from
    an MCP client's threads queued behind 32 torch imports and the last ones gave up after EDIT_WAIT_S. It now
    runs while another holder has the lock; the write still waits for it."""
    import threading

    from hotkernel.run import targets
    from hotkernel.workspace.lockfile import workspace_lock
    from hotkernel.workspace.paths import Workspace

    ws = Workspace(workspace)
    checked, outcome = threading.Event(), []
    real = targets.check_module_calls

    def check(*args):
        real(*args)
        checked.set()

    def add() -> None:
        outcome.append(targets.change_target(ws, "t", {"from": "torch:neg", "shapes": ["8"], "device": "cpu"}))

    targets.check_module_calls = check
    try:
        with workspace_lock(ws, command="test"):
            thread = threading.Thread(target=add)
            thread.start()
            assert checked.wait(60), "the module check waited for the lock"
            assert not outcome and not ws.manifest.exists()  # the write waits for the lock
        thread.join(120)
    finally:
        targets.check_module_calls = real
    assert outcome and sorted(load_manifest(ws.manifest).targets) == ["t"]
    with pytest.raises(HotkernelError, match="cannot import torch:no_such_function"):  # and it still refuses
        targets.change_target(ws, "u", {"from": "torch:no_such_function", "shapes": ["8"], "device": "cpu"})
    assert sorted(load_manifest(ws.manifest).targets) == ["t"]
