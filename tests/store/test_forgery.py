"""Every forgery of a record: refused by ``record`` or listed unverified (never counted) by the board's scan, which
``leaderboard --check`` and ``sync --check`` read; a stored run edited after the run is refused by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from store.record_factory import make_workspace, provenance, synthetic_result

from hotkernel._util.fs import sha256_file
from hotkernel.errors import HotkernelError
from hotkernel.run.runstore import latest_verify, load_run, run_ids, save_run
from hotkernel.store.compact import decode, encode
from hotkernel.store.leaderboard import scan_results, store_problems
from hotkernel.store.models import Record
from hotkernel.store.record import record
from hotkernel.workspace.lockfile import read_lock, write_lock

REPO_RESULTS = Path(__file__).resolve().parents[2] / "results"


def _record(ws, result, target: str = "rmsnorm"):
    return record(ws, target, result, note="n", who="w", provenance=provenance())


@pytest.mark.parametrize(
    ("edit", "why"),
    [
        (lambda r: r.model_copy(update={"speedup": 50.0}), "speedup 50.0"),
        (lambda r: r.model_copy(update={"verdict": "faster", "speedup": 1.3, "interval": [1.2, 1.4]}), "not faster"),
        (lambda r: r.model_copy(update={"alpha": 0.5}), "looser"),
    ],
    ids=["edited_speedup", "edited_verdict", "loosened_alpha"],
)
def test_record_refuses_numbers_its_samples_do_not_give(tmp_path: Path, edit, why: str) -> None:
    ws = make_workspace(tmp_path)
    honest = (
        synthetic_result("rmsnorm", "inconclusive")
        if why == "not faster"
        else synthetic_result("rmsnorm", "faster", 1.3)
    )
    with pytest.raises(HotkernelError, match="not what its runs measured") as err:
        _record(ws, edit(honest))
    assert "\n" not in str(err.value)
    assert not ws.results_dir.exists() or not list(ws.results_dir.rglob("*.json"))


def test_edited_samples_with_the_summary_left_are_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    forged = synthetic_result("rmsnorm", "faster", 1.3)
    forged.runs[1].ms = forged.runs[1].ms / 2  # one candidate run's time, the stats left alone
    with pytest.raises(HotkernelError, match="candidate samples differ from the candidate runs"):
        _record(ws, forged)


def _vouch(ws, path: Path) -> None:
    lock = read_lock(ws)
    lock.records[path.relative_to(ws.root).as_posix()] = sha256_file(path) or ""
    write_lock(ws, lock)


def test_a_forged_file_with_its_lock_entry_is_unverified_by_name(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    honest = _record(ws, synthetic_result("rmsnorm", "faster", 1.3))
    data = json.loads((ws.root / honest.path).read_text())
    data["result"]["speedup"] = 50.0
    forged = ws.results_dir / "rmsnorm" / "20991231T000000Z.json"
    forged.write_text(json.dumps(data))
    _vouch(ws, forged)  # the forger also adds its sha256 to the lock
    scan = scan_results(ws)
    assert [p for p, _ in scan.records] == [honest.path]
    assert any(line.startswith("results/rmsnorm/20991231T000000Z.json: unverified") for line in store_problems(ws))


def test_a_copy_of_a_record_does_not_confirm_it(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    honest = _record(ws, synthetic_result("rmsnorm", "faster", 1.3))
    copy = ws.results_dir / "rmsnorm" / "20991231T000000Z.json"
    copy.write_text((ws.root / honest.path).read_text())
    _vouch(ws, copy)
    reasons = dict(scan_results(ws).unverified)
    assert reasons["results/rmsnorm/20991231T000000Z.json"].startswith(f"a copy of the run {honest.path}")


def test_a_record_moved_to_another_target_is_unverified(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    honest = _record(ws, synthetic_result("rmsnorm", "faster", 1.3))
    data = json.loads((ws.root / honest.path).read_text())
    data["target"] = "softmax"  # the runs still say rmsnorm
    moved = ws.results_dir / "softmax" / "20991231T000000Z.json"
    moved.parent.mkdir(parents=True, exist_ok=True)
    moved.write_text(json.dumps(data))
    _vouch(ws, moved)
    reasons = dict(scan_results(ws).unverified)
    assert "target 'rmsnorm'" in reasons["results/softmax/20991231T000000Z.json"]


def test_a_fingerprint_naming_other_files_is_unverified(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    honest = _record(ws, synthetic_result("rmsnorm", "faster", 1.3))
    data = json.loads((ws.root / honest.path).read_text())
    data["fingerprint"] = {"candidate_sha256": "f" * 64}  # the files the target has now, not the ones it ran
    path = ws.root / honest.path
    path.write_text(json.dumps(data))
    _vouch(ws, path)
    reasons = dict(scan_results(ws).unverified)
    assert "candidate_sha256 is not the candidate file its runs measured" in reasons[honest.path]


def test_a_stored_run_edited_after_the_run_is_refused(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    save_run(ws, synthetic_result("rmsnorm", "faster", 1.3))
    (run_id,) = run_ids(ws)
    assert load_run(ws, run_id).result.verdict == "faster" and latest_verify(ws, "rmsnorm").run_id == run_id
    path = ws.state_dir / "runs" / f"{run_id}.json"
    data = json.loads(path.read_text())
    data["result"]["speedup"] = 50.0
    path.write_text(json.dumps(data))
    with pytest.raises(HotkernelError, match="edited after the run"):
        load_run(ws, run_id)
    with pytest.raises(HotkernelError, match="is not one"):
        load_run(ws, "../../etc/passwd")


def test_a_repository_record_is_under_10_kb_compact_and_loads_back() -> None:
    # the largest int4_gemv record of the repository (all compact now), as its plain schema-1 JSON and back
    path = max(REPO_RESULTS.glob("int4_gemv/*.json"), key=lambda p: p.stat().st_size)
    record_ = Record.model_validate(decode(json.loads(path.read_text())))
    plain = json.dumps(record_.model_dump(mode="json"), indent=2)
    text = encode(record_.model_dump(mode="json"))
    assert len(text) < 10_000 < len(plain)
    back = Record.model_validate(decode(json.loads(text)))
    assert back.result.baseline.stats == record_.result.baseline.stats
    assert [r.ms for r in back.result.runs] == [r.ms for r in record_.result.runs]
    assert encode(back.model_dump(mode="json")) == text


def test_a_committed_forged_record_is_never_vouched_for_and_fails_the_check(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    honest = _record(ws, synthetic_result("rmsnorm", "faster", 1.3))
    data = json.loads((ws.root / honest.path).read_text())
    data["result"].update(speedup=50.0, interval=[45.0, 55.0])
    forged = ws.results_dir / "rmsnorm" / "20991231T000000Z.json"
    forged.write_text(json.dumps(data))
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "records"]):
        subprocess.run(["git", "-C", str(ws.root), *args], check=True, capture_output=True, env=env, timeout=60)
    cli = {**os.environ, "HOTKERNEL_WORKSPACE": str(ws.root)}
    run = [sys.executable, "-m", "hotkernel", "leaderboard"]
    vouch = subprocess.run([*run, "--vouch-committed"], capture_output=True, text=True, env=cli, timeout=120)
    assert vouch.returncode == 0, vouch.stderr
    assert "results/rmsnorm/20991231T000000Z.json" not in read_lock(ws).records
    check = subprocess.run([*run, "--check"], capture_output=True, text=True, env=cli, timeout=120)
    assert check.returncode != 0
    assert "results/rmsnorm/20991231T000000Z.json: unverified record (its numbers do not recompute" in check.stderr
