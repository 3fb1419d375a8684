"""Runner: hash checks before a run, clean errors, device-idle check without a GPU, a real run end to end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from adversarial.workspace import TARGET, make_workspace, python

from hotkernel.errors import HotkernelError
from hotkernel.run.render import render_target
from hotkernel.run.runner import (
    JudgeProcess,
    RunOutcome,
    check_workspace_integrity,
    device_idle_problem,
    run_script,
)


def test_integrity_ok_then_edited_baseline_then_edited_contract(tmp_path: Path) -> None:
    ws, resolved = make_workspace(tmp_path)
    assert check_workspace_integrity(ws, TARGET, resolved) is None
    assert check_workspace_integrity(ws, TARGET) is None  # resolved from hotkernel.yaml (or the file's SPEC)
    baseline = ws.target_dir(TARGET) / "baseline.py"
    baseline.write_text(baseline.read_text().replace("DO NOT EDIT", "edited"))
    edited = check_workspace_integrity(ws, TARGET, resolved)
    assert edited.startswith("baseline_unchanged:") and "delete it and run `hotkernel sync`" in edited, edited
    outcome = run_script(ws, f"targets/{TARGET}/candidate.py", python=python(), resolved=resolved)
    assert outcome.status == "invalid" and outcome.reason.startswith("baseline_unchanged:")
    assert outcome.run is None and outcome.ms is None  # refused before anything was started
    ws2, resolved2 = make_workspace(tmp_path / "two")
    ws2.contract_file.write_text(ws2.contract_file.read_text() + "\n# tweak\n")
    reason = check_workspace_integrity(ws2, TARGET, resolved2)
    # sync leaves a copy that no record used alone (an edit must show), so the fix is to delete it first
    assert reason.startswith("contract_unchanged:") and "delete it and run `hotkernel sync`" in reason, reason
    ws2.contract_file.unlink()
    missing = check_workspace_integrity(ws2, TARGET, resolved2)
    assert missing == "contract_unchanged: targets/hk_contract.py is missing; run `hotkernel sync` to render it"
    render_target(ws2, TARGET, resolved2)  # what sync does for a missing file
    assert check_workspace_integrity(ws2, TARGET, resolved2) is None


def test_script_outside_targets_is_a_one_line_error(tmp_path: Path) -> None:
    ws, resolved = make_workspace(tmp_path)
    stray = ws.root / "kernels" / "ops.py"
    with pytest.raises(HotkernelError, match="not a rendered target script"):
        run_script(ws, stray, python=python(), resolved=resolved)
    with pytest.raises(HotkernelError):
        run_script(ws, "targets/rms/missing.py", python=python(), resolved=resolved)


def test_device_idle_check_skips_cleanly_without_a_gpu() -> None:
    assert device_idle_problem(set(), wait_s=0.0) is None or "device_idle:" in device_idle_problem(set(), 0.0)


def test_run_outcome_data_aliases_run() -> None:
    outcome = RunOutcome(status="ok", ms=1.0, run={"ms": 1.0}, wall_s=1.0, script="s", role="candidate")
    assert outcome.data == {"ms": 1.0}


def test_the_tool_process_does_not_import_torch() -> None:
    code = (
        "import sys, hotkernel.run.runner, hotkernel.run.render; hotkernel.run.render.contract_module(); "
        "assert 'torch' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.slow
def test_baseline_and_candidate_run_ok_with_one_judge(tmp_path: Path) -> None:
    ws, resolved = make_workspace(tmp_path)
    with JudgeProcess(ws, python=python()) as judge:
        runs = [
            run_script(ws, f"targets/{TARGET}/{name}.py", python=python(), judge=judge, resolved=resolved)
            for name in ("baseline", "candidate", "baseline")
        ]
        judge_pid = judge.client.proc.pid
    assert [r.status for r in runs] == ["ok", "ok", "ok"], [r.reason for r in runs]
    assert [r.role for r in runs] == ["baseline", "candidate", "baseline"]
    first, second = runs[0].run, runs[1].run
    for field in ("target", "shapes", "dtype", "rotation", "bytes", "contract_sha256", "device"):
        assert first[field] == second[field], field
    assert first["script_sha256"] != second["script_sha256"]
    status = Path(f"/proc/{judge_pid}/status")
    assert not status.exists() or "zombie" in status.read_text()  # the judge is gone after the block


@pytest.mark.slow
def test_a_verify_keeps_its_first_runs_rotation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner takes the number of input sets per shape from its caller (a verify's first run chose it; an
    output whose length follows the data, a stream compaction's, moved it by one between runs on the H200), and
    verify passes the first run's to every later run."""
    from hotkernel.run import verify as verify_module
    from hotkernel.run.bench import run_one

    ws, resolved = make_workspace(tmp_path)
    with JudgeProcess(ws, python=python()) as judge:
        free = run_script(ws, f"targets/{TARGET}/baseline.py", python=python(), judge=judge, resolved=resolved)
        kept = run_script(
            ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, resolved=resolved, rotation=[3]
        )
    assert free.status == kept.status == "ok", (free.reason, kept.reason)
    assert free.run["per_shape"][0]["rotation"] != 3 and kept.run["per_shape"][0]["rotation"] == 3
    asked = []

    def spy(*args, **kwargs):
        asked.append(kwargs["rotation"])
        return run_one(*args, **kwargs)

    monkeypatch.setattr(verify_module, "run_one", spy)
    # an A/A verify still open at n would go on to 2n rounds: capped at n, it runs its 6 runs, no more
    result = verify_module.verify(
        ws, f"targets/{TARGET}/baseline.py", f"targets/{TARGET}/candidate.py", n=3, max_rounds=3
    )
    assert all(run.status == "ok" for run in result.runs) and len(result.runs) == 6, result.reason
    first = result.runs[0].data["per_shape"][0]["rotation"]
    assert asked == [None] + [[first]] * (len(result.runs) - 1), asked


WRITES_AT_IMPORT = '''"""Cheat: at import, writes {rel} (a run must leave the workspace as it found it)."""
import pathlib

import torch

_root = pathlib.Path(__file__).resolve().parents[2]
_path = _root / {rel!r}
_path.parent.mkdir(parents=True, exist_ok=True)
_path.write_text({text!r})


def kernel(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
'''


@pytest.mark.slow
@pytest.mark.parametrize(
    ("rel", "text"),
    [
        (".hotkernel/tmp/manifest-cache.json", '{"targets": {"rms": {"atol": 1000.0, "rtol": 1000.0}}}'),
        ("results/rms/20991231T000000Z.json", '{"kind": "record", "verdict": "faster", "speedup": 50}'),
        ("hotkernel.lock", '{"schema": 1, "targets": {}}'),
        ("targets/rms/notes.py", "# left behind"),
    ],
)
def test_a_run_that_writes_the_workspace_is_invalid_and_names_the_file(tmp_path: Path, rel: str, text: str) -> None:
    ws, resolved = make_workspace(tmp_path)
    (ws.target_dir(TARGET) / "candidate.py").write_text(WRITES_AT_IMPORT.format(rel=rel, text=text))
    outcome = run_script(ws, f"targets/{TARGET}/candidate.py", python=python(), resolved=resolved)
    assert outcome.status == "invalid", outcome.reason
    assert outcome.reason.startswith(f"workspace_unchanged: {rel}"), outcome.reason


def test_workspace_change_names_added_removed_and_changed_files() -> None:
    from hotkernel.run.runner import workspace_change

    assert workspace_change({"a": "1"}, {"a": "1"}) is None
    reason = workspace_change({"a": "1", "b": "2"}, {"a": "9", "c": "3"})
    assert reason.startswith("workspace_unchanged: a, b, c changed during the run")


def test_a_cancel_kills_the_run_in_flight_and_nothing_is_measured(tmp_path: Path) -> None:
    """A sync's budget or an MCP cancel stops the run in flight, not only the next one: the candidate's kernel
    marks that it has started, then sleeps for an hour; the event is set once the mark is there, and the run
    comes back cancelled (not timed out at its 300 s limit), nothing measured, the worker and the judge gone."""
    import threading
    import time

    from hotkernel.contract.orchestrator import LIVE

    ws, resolved = make_workspace(tmp_path)
    mark = tmp_path / "kernel_started"
    candidate = ws.target_dir(TARGET) / "candidate.py"
    candidate.write_text(
        "import pathlib\nimport time\n\n\n"
        f"def kernel(x, w, *, eps):\n    pathlib.Path({str(mark)!r}).touch()\n    time.sleep(3600)\n"
    )
    cancel = threading.Event()

    def set_when_started() -> None:
        while not mark.exists() and not cancel.is_set():
            time.sleep(0.05)
        cancel.set()

    with JudgeProcess(ws, python=python()) as judge:
        judge.start()
        pids = set(LIVE)
        watcher = threading.Thread(target=set_when_started, daemon=True)
        watcher.start()
        outcome = run_script(
            ws,
            f"targets/{TARGET}/candidate.py",
            python=python(),
            judge=judge,
            resolved=resolved,
            cancel=cancel,
            timeout_s=300,
        )
        cancel.set()
        watcher.join()
    assert mark.exists(), "the kernel was running when the cancel came"
    assert outcome.status == "invalid" and outcome.reason.startswith("cancelled:"), outcome.reason
    assert outcome.ms is None
    assert not pids & set(LIVE), "the judge and the worker of a cancelled run are closed"


REWRITES_KEEPING_STAT = '''"""Cheat: at import, rewrites {rel} with as many bytes and sets its mtime back."""
import os
import pathlib

import torch

_path = pathlib.Path(__file__).resolve().parents[2] / {rel!r}
_before = _path.stat()
_path.write_text({text!r})
os.utime(_path, ns=(_before.st_atime_ns, _before.st_mtime_ns))


def kernel(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
'''


@pytest.mark.slow
def test_a_rewrite_with_the_same_size_and_mtime_is_still_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's workspace hashes reuse a file's hash while its stat holds (``sha256_by_stat``); every hash is
    kept here (no racily-clean wait), so only the ctime, which the cheat cannot set back, shows the change."""
    import hotkernel._util.fs as fs

    monkeypatch.setattr(fs, "RACY_NS", 0)
    ws, resolved = make_workspace(tmp_path)
    rel = "results/rms/20200101T000000Z.json"
    (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (ws.root / rel).write_text('{"speedup": 1.0}')
    (ws.target_dir(TARGET) / "candidate.py").write_text(REWRITES_KEEPING_STAT.format(rel=rel, text='{"speedup": 9.0}'))
    outcome = run_script(ws, f"targets/{TARGET}/candidate.py", python=python(), resolved=resolved)
    assert outcome.status == "invalid", outcome.reason
    assert outcome.reason.startswith(f"workspace_unchanged: {rel}"), outcome.reason
