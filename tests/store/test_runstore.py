"""The run store: the id a saved verify or bench comes back with, what the digest covers, an unwritable
workspace."""

from __future__ import annotations

import json
from pathlib import Path

from store.record_factory import make_workspace, provenance, synthetic_result

from hotkernel.run.bench import sample_stats
from hotkernel.run.models import BenchResult
from hotkernel.run.runstore import RUN_ID, load_run, result_digest, run_ids, save_run
from hotkernel.store.record import record


def test_a_saved_verify_comes_back_with_the_id_it_is_stored_under(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    result = synthetic_result("rmsnorm", "faster", 1.3)
    assert result.run_id is None
    saved = save_run(ws, result)
    assert saved.run_id is not None and RUN_ID.match(saved.run_id) and run_ids(ws) == [saved.run_id]
    stored = load_run(ws, saved.run_id)
    assert stored.result.run_id == saved.run_id and stored.result == saved
    assert result_digest(saved) == result_digest(result) == stored.digest  # the id is not part of the digest
    body = json.loads((ws.state_dir / "runs" / f"{saved.run_id}.json").read_text())
    assert "run_id" not in body["result"] and body["id"] == saved.run_id


def test_a_bench_gets_its_id_too_and_a_read_only_workspace_none(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    bench = BenchResult(script="targets/rmsnorm/candidate.py", status="ok", n=3, warmup=0, stats=sample_stats([1.0]))
    saved = save_run(ws, bench)
    assert saved.run_id and load_run(ws, saved.run_id).kind == "bench"
    blocked = make_workspace(tmp_path / "ro")
    blocked.state_dir.mkdir(parents=True)
    (blocked.state_dir / "runs").write_text("a file where the folder would be")
    assert save_run(blocked, synthetic_result("rmsnorm", "slower", 0.8)).run_id is None


def test_a_record_names_its_run_once_not_in_its_result(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    saved = save_run(ws, synthetic_result("gemv", "slower", 0.8))
    out = record(ws, "gemv", saved, note="n", who="w", provenance=provenance(), run_id=saved.run_id)
    text = (ws.root / out.path).read_text()
    data = json.loads(text)
    assert data["run_id"] == saved.run_id and text.count(saved.run_id) == 1
