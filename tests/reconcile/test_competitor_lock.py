"""The lock's competitors section: optional (older locks read), validated, and its records are looked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.reconcile.plan import competitor_reasons
from hotkernel.workspace.lockfile import Lock, LockEntry, read_lock, write_lock
from hotkernel.workspace.paths import Workspace

STATE = {
    "manifest": "m",
    "baseline_sha256": "b",
    "contract_sha256": "c",
    "candidate_sha256": "s",
    "sources_sha256": "src",
}


def _entry(record: str, **changes: object) -> LockEntry:
    return LockEntry(**{**STATE, **changes}, device="cpu", record=record, verdict="inconclusive", protocol=2)


def test_a_lock_without_competitors_reads_and_a_bad_record_path_is_named(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    (tmp_path / "hotkernel.lock").write_text(json.dumps({"schema": 2, "targets": {}, "records": {}}))
    assert read_lock(ws).competitors == {}
    bad = {
        "schema": 2,
        "competitors": {
            "t": {"compile": {"cpu": {**STATE, "device": "cpu", "verdict": "faster", "record": "results/other/x.json"}}}
        },
    }
    (tmp_path / "hotkernel.lock").write_text(json.dumps(bad))
    with pytest.raises(HotkernelError, match="not under results/t/"):
        read_lock(ws)


def test_competitor_entries_round_trip_and_their_records_count_as_named(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    lock = Lock()
    lock.competitors.setdefault("t", {}).setdefault("compile", {})["cpu"] = _entry("results/t/a.json")
    write_lock(ws, lock)
    again = read_lock(ws)
    assert again.competitor_entries("t", "compile")["cpu"].record == "results/t/a.json"
    assert again.competitor_entries("t", "./k.py:g") == {}
    assert "results/t/a.json" in again.entry_records()


def test_competitor_reasons_follow_the_fingerprints(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    (tmp_path / "results" / "t").mkdir(parents=True)
    record = "results/t/a.json"
    assert competitor_reasons(ws, STATE, {}, "cpu") == ["new"]
    assert competitor_reasons(ws, STATE, {"cpu": _entry(record)}, "cpu") == ["record missing"]
    stale = _entry(record, candidate_sha256="older", sources_sha256="older")
    assert competitor_reasons(ws, STATE, {"cpu": stale}, "cpu")[:2] == ["templates changed", "source changed"]
    moved = _entry(record, manifest="older", contract_sha256="older")
    assert competitor_reasons(ws, STATE, {"cpu": moved}, "cpu")[:2] == ["manifest changed", "contract changed"]
    assert competitor_reasons(ws, STATE, {"GPU A": _entry(record)}, "GPU B")[0] == "no record on this GPU (GPU B)"
