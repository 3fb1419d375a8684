"""record: atomic, never overwrites, says whether it beats the best; invalidate keeps the raw log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from record_factory import make_workspace, provenance, synthetic_result

from hotkernel.errors import HotkernelError
from hotkernel.store import record as record_module
from hotkernel.store.leaderboard import load_records
from hotkernel.store.record import history, invalidate_record, record, write_new_json

TESTS = Path(__file__).resolve().parent


def test_killed_between_temp_write_and_rename_leaves_no_record(tmp_path: Path) -> None:
    """SIGKILL a real process after the temp file is written and before it gets its name."""
    ws = make_workspace(tmp_path)
    script = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(TESTS)!r})
        from record_factory import provenance, synthetic_result
        from hotkernel.store.record import record
        from hotkernel.workspace.paths import Workspace
        from hotkernel.manifest import load_manifest
        load_manifest(Path({str(ws.root)!r}) / "hotkernel.yaml")  # warm the manifest cache (it writes atomically)
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        os.link = die
        os.replace = die
        record(Workspace(Path({str(ws.root)!r})), "rmsnorm", synthetic_result("rmsnorm", "faster", 1.2),
               note="n", who="w", provenance=provenance())
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    directory = ws.results_dir / "rmsnorm"
    assert list(directory.glob("*.json")) == []  # no partial record under a record name
    leftovers = [p.name for p in directory.iterdir()]
    assert leftovers and all(name.startswith(".") and name.endswith(".tmp") for name in leftovers)
    assert load_records(ws.results_dir) == []  # and the temp file is never read as a record
    assert not ws.leaderboard.exists()


def test_failure_during_rename_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_workspace(tmp_path)

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(record_module.os, "link", broken)
    with pytest.raises(OSError):
        record(ws, "rmsnorm", synthetic_result("rmsnorm", "faster", 1.2), note="n", who="w",
               provenance=provenance())
    assert list((ws.results_dir / "rmsnorm").iterdir()) == []


def test_never_overwrites_a_record(tmp_path: Path) -> None:
    directory = tmp_path / "results" / "t"
    directory.mkdir(parents=True)
    first = write_new_json(directory, "20260101T000000Z", {"a": 1})
    second = write_new_json(directory, "20260101T000000Z", {"a": 2})
    third = write_new_json(directory, "20260101T000000Z", {"a": 3})
    assert [p.name for p in (first, second, third)] == [
        "20260101T000000Z.json", "20260101T000000Z_001.json", "20260101T000000Z_002.json"]
    assert sorted(p.name for p in directory.iterdir()) == [p.name for p in (first, second, third)]
    assert json.loads(first.read_text()) == {"a": 1}


def test_beats_best_only_when_faster_than_every_counted_record(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    prov = provenance()

    def rec(verdict: str, speedup: float | None) -> object:
        return record(ws, "softmax", synthetic_result("softmax", verdict, speedup), note="x", who="agent",
                      provenance=prov)

    assert not rec("inconclusive", None).beats_best
    first = rec("faster", 1.2)
    assert first.beats_best and first.previous_best is None
    assert not rec("faster", 1.1).beats_best
    assert not rec("slower", 0.9).beats_best
    assert not rec("incorrect", None).beats_best
    better = rec("faster", 1.3)
    assert better.beats_best and better.previous_best == 1.2 and better.previous_best_path == first.path
    other_device = record(ws, "softmax", synthetic_result("softmax", "faster", 1.01, device="Other"),
                          note="x", who="agent", provenance=provenance("Other"))
    assert other_device.beats_best  # best-so-far is per device


def test_record_content_and_history(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = record(ws, "gemv", synthetic_result("gemv", "faster", 1.5), note="vectorised loads",
                 who="Claude (agent)", provenance=provenance())
    data = json.loads((ws.root / out.path).read_text())
    assert data["kind"] == "record" and data["who"] == "Claude (agent)" and data["contract"] == 1
    assert data["result"]["verdict"] == "faster" and data["provenance"]["device"] == provenance().device
    assert out.path.startswith("results/gemv/") and out.path.endswith("Z.json")
    assert ws.leaderboard.read_text().startswith("<!-- Code generated")
    invalidate_record(ws, out.path, "found a bug in the check")
    (entry,) = history(ws, "gemv")
    assert not entry.counted and entry.not_counted_reason == "invalidated: found a bug in the check"
    assert (ws.root / out.path).is_file()  # the raw log is kept


@pytest.mark.parametrize(("who", "note"), [("", "n"), ("   ", "n"), ("w", "two\nlines")])
def test_who_and_note_are_required_one_liners(tmp_path: Path, who: str, note: str) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(HotkernelError):
        record(ws, "gemv", synthetic_result("gemv", "faster", 1.5), note=note, who=who,
               provenance=provenance())
    assert not ws.results_dir.exists()


def test_record_refuses_a_result_of_another_target_and_bad_names(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(HotkernelError, match="not 'gemv'"):
        record(ws, "gemv", synthetic_result("softmax", "faster", 1.5), note="n", who="w",
               provenance=provenance())
    with pytest.raises(HotkernelError):
        record(ws, "../evil", synthetic_result("softmax", "faster", 1.5), note="n", who="w",
               provenance=provenance())
    with pytest.raises(HotkernelError):
        invalidate_record(ws, "../outside.json", "r")
    assert not ws.results_dir.exists()


def test_cli_record_from_stdin(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    result = synthetic_result("gemv", "slower", 0.8)
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(ws.root)}
    cmd = [sys.executable, "-m", "hotkernel", "record", "gemv", "-",
           "--who", "me", "--note", "tried", "--json"]
    out = subprocess.run(cmd, input=result.model_dump_json(), capture_output=True, text=True, env=env,
                         cwd=ws.root, timeout=120)
    assert out.returncode == 0, out.stderr
    reply = json.loads(out.stdout)
    assert reply["verdict"] == "slower" and reply["beats_best"] is False
    assert (ws.root / reply["path"]).is_file()
    bad = subprocess.run(cmd, input="{not json", capture_output=True, text=True, env=env, cwd=ws.root,
                         timeout=120)
    assert bad.returncode == 1 and "not a verify result" in bad.stderr and "Traceback" not in bad.stderr


def test_record_refuses_what_does_not_describe_the_target(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(HotkernelError, match="no target named 'attention'"):
        record(ws, "attention", synthetic_result("attention", "faster", 2.0), note="n", who="w",
               provenance=provenance())
    swapped = synthetic_result("gemv", "faster", 100.0)
    swapped.baseline.script = "targets/gemv/slow_copy.py"  # a slowed-down "baseline" makes any candidate win
    with pytest.raises(HotkernelError, match="not targets/gemv/baseline.py"):
        record(ws, "gemv", swapped, note="n", who="w", provenance=provenance())
    stale = synthetic_result("gemv", "faster", 1.5)
    stale.baseline.sha256 = "0" * 64  # the baseline as an older manifest entry rendered it
    with pytest.raises(HotkernelError, match="before hotkernel.yaml changed"):
        record(ws, "gemv", stale, note="n", who="w", provenance=provenance())
    assert not ws.results_dir.exists() or not list(ws.results_dir.rglob("*.json"))
