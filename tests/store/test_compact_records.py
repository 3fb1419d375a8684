"""``hotkernel leaderboard --compact-records``: schema-1 records rewritten in schema 2 in place, the records index
following them, the board byte for byte the same, unvouched files left alone, a crash half-way recoverable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store.record_factory import FP32_TOLERANCES, leaderboard_cli, make_workspace, synthetic_result

from hotkernel._util.fs import sha256_file
from hotkernel.errors import HotkernelError
from hotkernel.run.models import VerifyResult
from hotkernel.store import compact
from hotkernel.store import compact_records as module
from hotkernel.store.compact_records import compact_records, compaction_loss, finish_interrupted
from hotkernel.store.headline import HEADLINE_END, HEADLINE_START
from hotkernel.store.leaderboard import load_record, scan_results, store_problems, write_leaderboard
from hotkernel.store.models import Provenance
from hotkernel.store.record import record, record_text
from hotkernel.store.scan import journal_path
from hotkernel.workspace.lockfile import read_lock, write_lock
from hotkernel.workspace.paths import Workspace

H200 = "NVIDIA H200"
TARGETS = ("rmsnorm", "softmax")
PROVENANCE = Provenance(device=H200, device_kind="cuda", cpu="test cpu", hotkernel="0.0.test")


def _as_measured(result: VerifyResult) -> VerifyResult:
    """A synthetic verify with the run data a real one carries: 17-digit floats, per-shape samples, phase times,
    the checks' prose, the judge's copy ceiling (so the H200 chart and headline show it)."""
    runs = []
    for run in result.runs:
        side = result.baseline if run.role == "baseline" else result.candidate
        shape = {
            "shape": "8x8",
            "ms": run.ms,
            "samples_ms": [run.ms * (1 + k * 1.234567891e-4) for k in range(5)],
            "floor_ms": 0.025998079776763917,
            "ok": True,
            "capture_error": None,
        }
        data = {
            "ceiling_gbps": 4130.081272231763 + run.index,
            "checks": [{"name": "outputs_match_reference", "ok": True, "detail": "every judged output within bounds"}],
            "contract_sha256": result.contract_sha256,
            "ms": run.ms,
            "per_shape": [shape],
            "phases_s": {"judge": 0.565, "worker": 1.889},
            "reason": None,
            "role": run.role,
            "script_sha256": side.sha256,
            "status": "ok",
            "target": result.target,
            "tolerances": FP32_TOLERANCES,
            "wall_s": 4.13,
        }
        runs.append(run.model_copy(update={"data": data, "wall_s": 4.351}))
    per_shape = {
        role: next(r.data["per_shape"] for r in reversed(runs) if r.role == role) for role in ("baseline", "candidate")
    }
    contract = {"flops": 1e8, "bytes": 1e8, "dtype": "bf16"}
    return result.model_copy(update={"device_kind": "cuda", "contract": contract, "runs": runs, "per_shape": per_shape})


def _to_schema_1(ws: Workspace, rel: str) -> None:
    """Rewrite a record as schema-1 files were written (every run in full, indented) and index those bytes."""
    path = ws.root / rel
    rec = load_record(path)
    assert rec is not None
    path.write_text(record_text(rec.model_copy(update={"schema_version": 1})), encoding="utf-8")
    lock = read_lock(ws)
    lock.records[rel] = sha256_file(path) or ""
    write_lock(ws, lock)


def _record(ws: Workspace, target: str, verdict: str, speedup: float, note: str = "n", confirms=None) -> Path:
    """A measured synthetic verify of ``target`` on the H200, recorded; its path."""
    result = _as_measured(synthetic_result(target, verdict, speedup, device=H200))
    return record(ws, target, result, note=note, who="w", provenance=PROVENANCE, confirms=confirms).path


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    """Five schema-1 records (a confirmed best of each target and a slower one) and one schema-2 record."""
    ws = make_workspace(tmp_path / "ws", TARGETS)
    (ws.root / "README.md").write_text(f"# ws\n\n{HEADLINE_START}\n{HEADLINE_END}\n", encoding="utf-8")
    for target, verdict, speedup in (("rmsnorm", "faster", 1.5), ("softmax", "faster", 2.5)):
        _record(ws, target, verdict, speedup, confirms=_record(ws, target, verdict, speedup))
    _record(ws, "rmsnorm", "slower", 0.8)
    for rel in sorted(read_lock(ws).records):
        _to_schema_1(ws, rel)
    _record(ws, "softmax", "slower", 0.9, note="new")
    write_leaderboard(ws)
    return ws


def _schema(ws: Workspace, rel: str) -> int:
    return json.loads((ws.root / rel).read_text(encoding="utf-8"))["schema_version"]


def _generated(ws: Workspace) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in [ws.leaderboard, ws.root / "README.md", *ws.root.glob("*.svg")]}


def _files(ws: Workspace) -> dict[str, bytes]:
    return {p.relative_to(ws.root).as_posix(): p.read_bytes() for p in sorted(ws.results_dir.rglob("*.json"))}


def test_rewrite_keeps_the_board_and_the_records_and_moves_the_index(ws: Workspace) -> None:
    old_paths = [p for p in read_lock(ws).records if _schema(ws, p) == 1]
    assert len(old_paths) == 5
    new_path = next(p for p in read_lock(ws).records if _schema(ws, p) == 2)
    before_records = dict(scan_results(ws).records)
    board = _generated(ws)
    assert "roofline_nvidia_h200.svg" in board and b"4.13 TB/s" in board["README.md"]  # the ceiling shows
    untouched = _files(ws)[new_path]

    done = compact_records(ws)

    assert sorted(r.path for r in done.rewritten) == sorted(old_paths)
    assert done.kept == [] and done.untouched == [] and not journal_path(ws).exists()
    assert done.bytes_after * 2 < done.bytes_before
    lock = read_lock(ws)
    after_records = dict(scan_results(ws).records)
    assert after_records.keys() == before_records.keys()  # every record still counts
    for item in done.rewritten:
        assert _schema(ws, item.path) == 2
        assert lock.records[item.path] == item.new_sha256 == sha256_file(ws.root / item.path)
        assert item.after == (ws.root / item.path).stat().st_size
        assert compaction_loss(before_records[item.path], after_records[item.path]) is None
        assert after_records[item.path].result.baseline.stats.samples_ms == (
            before_records[item.path].result.baseline.stats.samples_ms
        )
    assert _files(ws)[new_path] == untouched
    write_leaderboard(ws)
    assert _generated(ws) == board
    assert store_problems(ws) == []

    files, lock_bytes = _files(ws), ws.lock_file.read_bytes()  # idempotent
    again = compact_records(ws)
    assert again.rewritten == [] and again.kept == []
    assert _files(ws) == files and ws.lock_file.read_bytes() == lock_bytes


def test_the_cli_rewrites_and_check_passes_after(ws: Workspace) -> None:
    done = leaderboard_cli(ws.root, "--compact-records")
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert said.count("rewrote results/") == 5 and "rewrote 5 schema-1 records in schema 2" in said
    check = leaderboard_cli(ws.root, "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    both = leaderboard_cli(ws.root, "--check", "--compact-records")
    assert both.returncode == 1 and "--compact-records" in both.stdout + both.stderr


def test_files_the_index_does_not_vouch_for_are_left_alone_and_never_count(ws: Workspace) -> None:
    lock = read_lock(ws)
    victim = next(p for p in sorted(lock.records) if _schema(ws, p) == 1 and p.startswith("results/rmsnorm/"))
    forged = ws.root / victim
    forged.write_text(forged.read_text(encoding="utf-8").replace('"note": "n"', '"note": "edited"'), encoding="utf-8")
    stray = ws.results_dir / "rmsnorm" / "20990101T000000Z.json"  # a schema-1 record the index never saw
    data = json.loads(forged.read_text(encoding="utf-8"))
    data["result"]["speedup"] = 9.9  # and whose numbers do not follow from its samples
    stray.write_text(json.dumps(data, indent=2), encoding="utf-8")
    before = {victim: forged.read_bytes(), "stray": stray.read_bytes()}

    done = compact_records(ws)

    assert {p for p, _ in done.untouched} == {victim, "results/rmsnorm/20990101T000000Z.json"}
    assert victim not in {r.path for r in done.rewritten} and len(done.rewritten) == 4
    assert forged.read_bytes() == before[victim] and stray.read_bytes() == before["stray"]
    assert read_lock(ws).records[victim] == lock.records[victim]  # its entry still names the original bytes
    scan = scan_results(ws)
    counted = {p for p, _ in scan.records}
    assert victim not in counted and "results/rmsnorm/20990101T000000Z.json" not in counted
    assert {p for p, _ in scan.unverified} == {victim, "results/rmsnorm/20990101T000000Z.json"}


def test_a_record_that_would_lose_what_the_board_reads_keeps_its_schema_1_file(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compact, "DIGITS", 2)  # an encoder that loses the judge's ceiling
    files, lock_bytes = _files(ws), ws.lock_file.read_bytes()
    done = compact_records(ws)
    assert done.rewritten == [] and len(done.kept) == 5
    assert all("result.runs[0].data.ceiling_gbps" in why for _, why in done.kept)
    assert _files(ws) == files and ws.lock_file.read_bytes() == lock_bytes


def test_a_rewrite_that_would_change_the_board_is_refused_and_writes_nothing(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module, "encode", lambda data: compact.encode({**data, "note": "not what was recorded"}))
    monkeypatch.setattr(module, "compaction_loss", lambda old, new: None)  # a per-record check that misses it
    files, lock_bytes, board = _files(ws), ws.lock_file.read_bytes(), _generated(ws)
    with pytest.raises(HotkernelError, match="LEADERBOARD.md generated from the compacted records would differ"):
        compact_records(ws)
    assert _files(ws) == files and ws.lock_file.read_bytes() == lock_bytes and _generated(ws) == board
    assert not journal_path(ws).exists()


def test_a_crash_between_a_record_and_its_index_entry_is_put_back(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _files(ws)
    real, calls = module.write_lock, []

    def dies_on_the_second(*args: object) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed after the second record's rename, before its index entry
        real(*args)

    monkeypatch.setattr(module, "write_lock", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        compact_records(ws)
    monkeypatch.setattr(module, "write_lock", real)
    assert journal_path(ws).is_file()
    lock = read_lock(ws)
    state = {p: ("new" if _schema(ws, p) == 2 and old[p] != (ws.root / p).read_bytes() else "old") for p in old}
    assert list(state.values()).count("new") == 2
    unindexed = [p for p in old if sha256_file(ws.root / p) != lock.records[p]]
    assert len(unindexed) == 1 and state[unindexed[0]] == "new"
    check = leaderboard_cli(ws.root, "--check")
    assert check.returncode == 1 and "compact-records.json" in check.stdout + check.stderr
    assert any("compact-records.json" in line for line in store_problems(ws))  # `plan` and `sync --check` too

    assert finish_interrupted(ws) == unindexed  # what every `hotkernel leaderboard` does first
    assert (ws.root / unindexed[0]).read_bytes() == old[unindexed[0]] and not journal_path(ws).exists()
    assert all(sha256_file(ws.root / p) == read_lock(ws).records[p] for p in old)  # old or new, each indexed
    assert store_problems(ws) == []

    done = compact_records(ws)  # and a second run finishes the job
    assert len(done.rewritten) == 4
    assert all(_schema(ws, p) == 2 for p in old) and store_problems(ws) == []
