"""``hotkernel leaderboard --compact-records``: rewrite a workspace's schema-1 record files in the compact schema 2
(``store/compact.py``), in place, and move their sha256 in hotkernel.lock's records index with them.

Only records the index vouches for (``scan_results``: the sha256 matches, the numbers recompute, not a copy) are
rewritten; every other file under results/ is left as it is and named. Before anything is written, every record
is re-encoded in memory and read back: it must be the same ``Record`` in every field except what the compact file
leaves out by design (the per-phase wall times and the run fields its row keeps, the prose of passed checks,
floats inside the runs' data beyond 6 significant digits; ``result.per_shape`` is rebuilt from the runs), else
that record keeps its schema-1 file, named with the field. Then the board (LEADERBOARD.md, the roofline charts,
the README headline) is generated from the records as they are and as they would be: when any byte differs,
nothing is written.

The rewrite happens inside the workspace lock, one record at a time: a journal
(``.hotkernel/compact-records.json``: the record's path, its old text and the sha256 of its new text) is written
first, then the record file (atomically), then hotkernel.lock with the new sha256. A crash leaves every record
old and indexed or new and indexed, except the one in flight when it fell between the record's rename and the
lock's: ``finish_interrupted`` (run by every ``hotkernel leaderboard`` that writes) puts that record's old text
back, which the index still vouches for (``git checkout -- <record>`` does the same).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from hotkernel._util.fs import atomic_write_text, sha256_file, sha256_text
from hotkernel.errors import HotkernelError
from hotkernel.store.compact import COMPACT_SCHEMA, DROPPED, decode, encode
from hotkernel.store.leaderboard import generated_texts
from hotkernel.store.models import Record
from hotkernel.store.scan import ResultsScan, journal_path, record_problem, scan_results
from hotkernel.workspace.lockfile import check_record_path, read_lock, workspace_lock, write_lock
from hotkernel.workspace.paths import Workspace

REL_DIGITS = 1e-5  # a float inside a run's data kept to 6 significant digits is within this of the original
RUN_ROW = ("role", "index", "status", "reason", "ms", "wall_s")


@dataclass(frozen=True)
class Rewrite:
    """One record file rewritten: its path, old and new sizes and sha256s."""

    path: str
    before: int
    after: int
    old_sha256: str
    new_sha256: str


@dataclass
class Compaction:
    """What ``compact_records`` did: the records rewritten, those kept as they were and why, the files the index
    does not vouch for (left untouched), and an interrupted rewrite's record put back first."""

    rewritten: list[Rewrite] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)  # vouched schema-1 records left as schema 1, why
    untouched: list[tuple[str, str]] = field(default_factory=list)  # files the index does not vouch for, why
    restored: list[str] = field(default_factory=list)  # the record an interrupted rewrite left unindexed

    @property
    def bytes_before(self) -> int:
        return sum(r.before for r in self.rewritten)

    @property
    def bytes_after(self) -> int:
        return sum(r.after for r in self.rewritten)


@dataclass(frozen=True)
class _Planned:
    rewrite: Rewrite
    old_text: str
    new_text: str
    record: Record


# ------------------------------------------------------------------------------- what the rewrite must keep


def _floats_close(old: Any, new: Any) -> bool:
    """``new`` is ``old`` with every float kept to 6 significant digits (everything else exactly)."""
    if isinstance(old, float) and isinstance(new, float):
        return old == new or math.isclose(old, new, rel_tol=REL_DIGITS, abs_tol=0.0)
    if isinstance(old, dict) and isinstance(new, dict):
        return old.keys() == new.keys() and all(_floats_close(old[k], new[k]) for k in old)
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_floats_close(a, b) for a, b in zip(old, new, strict=True))
    return type(old) is type(new) and old == new


def _kept_data(data: dict[str, Any]) -> dict[str, Any]:
    """A run's data as the compact file keeps it: without the per-phase wall times and the run fields its row
    keeps, and without the prose of a passed check."""
    kept = {k: v for k, v in data.items() if k not in DROPPED}
    checks = kept.get("checks")
    if isinstance(checks, list):
        kept["checks"] = [
            {k: v for k, v in c.items() if not (k == "detail" and c.get("ok") is True)} if isinstance(c, dict) else c
            for c in checks
        ]
    return kept


def _first_key(old: dict[str, Any], new: dict[str, Any]) -> str:
    return next((k for k in sorted(old.keys() | new.keys()) if old.get(k, ...) != new.get(k, ...)), "?")


def compaction_loss(old: Record, new: Record) -> str | None:
    """None when ``new`` (a schema-1 record re-encoded compactly and read back) is ``old`` in every field but what
    the compact file leaves out by design; else the first field that differs, by name."""
    a, b = old.model_dump(mode="json"), new.model_dump(mode="json")
    for data in (a, b):
        data.pop("schema_version")
    ra, rb = a.pop("result"), b.pop("result")
    if a != b:
        return _first_key(a, b)
    runs_a, runs_b = ra.pop("runs"), rb.pop("runs")
    shapes_a, shapes_b = ra.pop("per_shape"), rb.pop("per_shape")
    if ra != rb:
        return f"result.{_first_key(ra, rb)}"
    if len(runs_a) != len(runs_b):
        return "result.runs"
    for i, (run_a, run_b) in enumerate(zip(runs_a, runs_b, strict=True)):
        for key in RUN_ROW:
            if run_a.get(key) != run_b.get(key):
                return f"result.runs[{i}].{key}"
        data_a, data_b = run_a.get("data"), run_b.get("data")
        if (data_a is None) != (data_b is None):
            return f"result.runs[{i}].data"
        if data_a is not None and not _floats_close(_kept_data(data_a), data_b):
            return f"result.runs[{i}].data.{_first_key(_kept_data(data_a), data_b)}"
    if not _floats_close(shapes_a, shapes_b):
        return "result.per_shape"
    return None


def _compacted(old: Record) -> tuple[str, Record]:
    """The schema-2 text of ``old`` (``compact.encode``, as ``record`` writes new records) and the record it reads
    back as."""
    text = encode(old.model_dump(mode="json"))
    return text, Record.model_validate(decode(json.loads(text)))


def _is_schema_1(data: Any) -> bool:
    version = data.get("schema_version") if isinstance(data, dict) else None
    return version is None or (isinstance(version, int) and not isinstance(version, bool) and version < COMPACT_SCHEMA)


def _plan(ws: Workspace, scan: ResultsScan, index: dict[str, str]) -> tuple[list[_Planned], list[tuple[str, str]]]:
    """The vouched schema-1 records that compact without loss (re-encoded in memory), and those that do not."""
    planned, kept = [], []
    for rel, old in scan.records:
        path = ws.root / rel
        raw = path.read_bytes()
        if hashlib.sha256(raw).hexdigest() != index.get(rel) or not _is_schema_1(json.loads(raw)):
            continue
        old_text = raw.decode("utf-8")
        try:
            new_text, new = _compacted(old)
        except (ValueError, TypeError, KeyError) as err:  # pydantic's ValidationError is a ValueError
            kept.append((rel, f"its compact file does not read back ({type(err).__name__})"))
            continue
        loss = compaction_loss(old, new) or record_problem(new)
        if loss:
            kept.append((rel, f"compacting it would change {loss}"))
            continue
        rewrite = Rewrite(
            path=rel,
            before=len(raw),
            after=len(new_text.encode("utf-8")),
            old_sha256=index[rel],
            new_sha256=sha256_text(new_text),
        )
        planned.append(_Planned(rewrite, old_text, new_text, new))
    return planned, kept


def _board_change(ws: Workspace, scan: ResultsScan, planned: list[_Planned]) -> str | None:
    """The first generated file (LEADERBOARD.md, a roofline chart, the README headline) whose text the rewrite
    would change, or None when every one stays byte for byte the same."""
    new = {p.rewrite.path: p.record for p in planned}
    after_scan = dataclasses.replace(scan, records=[(rel, new.get(rel, rec)) for rel, rec in scan.records])
    before, after = generated_texts(ws, scan=scan), generated_texts(ws, scan=after_scan)
    return next((name for name in sorted(before.keys() | after.keys()) if before.get(name) != after.get(name)), None)


# --------------------------------------------------------------------------------------------- the rewrite


def finish_interrupted(ws: Workspace) -> list[str]:
    """Put back the record an interrupted rewrite left new but unindexed (its old text, which the index still
    vouches for), then drop the journal; the caller holds the workspace lock. Returns the paths put back."""
    journal = journal_path(ws)
    if not journal.is_file():
        return []
    restored = []
    try:
        entry = json.loads(journal.read_text(encoding="utf-8"))
        rel, old_text, new_sha = check_record_path(entry["path"]), entry["old_text"], entry["new_sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        rel = None  # torn or foreign: the records index is the truth, nothing to put back
    if rel is not None and isinstance(old_text, str):
        path = ws.root / rel
        indexed = read_lock(ws).records.get(rel)
        now = sha256_file(path) if path.is_file() and not path.is_symlink() else None
        if indexed == sha256_text(old_text) and now == new_sha and now != indexed:
            atomic_write_text(path, old_text, overwrite=True)
            restored.append(rel)
    with contextlib.suppress(FileNotFoundError):
        journal.unlink()
    return restored


def _write_journal(ws: Workspace, planned: _Planned) -> None:
    entry = {"path": planned.rewrite.path, "old_text": planned.old_text, "new_sha256": planned.rewrite.new_sha256}
    atomic_write_text(journal_path(ws), json.dumps(entry, sort_keys=True) + "\n", overwrite=True)


def compact_records(ws: Workspace, *, wait_s: float = 10.0) -> Compaction:
    """Rewrite every vouched schema-1 record under results/ in schema 2, in place, and its index entry with it;
    HotkernelError (nothing written) when the board would not stay byte for byte the same."""
    with workspace_lock(ws, wait_s=wait_s, command="hotkernel leaderboard --compact-records"):
        restored = finish_interrupted(ws)
        lock = read_lock(ws)
        scan = scan_results(ws, lock)
        planned, kept = _plan(ws, scan, lock.records)
        untouched = sorted(scan.unverified + scan.damaged)
        changed = _board_change(ws, scan, planned) if planned else None
        if changed is not None:
            raise HotkernelError(
                f"leaderboard --compact-records: {changed} generated from the compacted records would differ from "
                f"what the records give now; nothing was rewritten ({len(planned)} schema-1 records stay as they are)"
            )
        for item in planned:
            path = ws.root / item.rewrite.path
            if sha256_file(path) != item.rewrite.old_sha256:  # nothing else writes under the lock; be sure
                kept.append((item.rewrite.path, "it changed while the rewrite was prepared"))
                continue
            _write_journal(ws, item)
            atomic_write_text(path, item.new_text, overwrite=True)
            lock.records[item.rewrite.path] = item.rewrite.new_sha256
            write_lock(ws, lock)
        with contextlib.suppress(FileNotFoundError):
            journal_path(ws).unlink()
    done = {p for p, _ in kept}
    return Compaction(
        rewritten=[p.rewrite for p in planned if p.rewrite.path not in done],
        kept=sorted(kept),
        untouched=untouched,
        restored=restored,
    )
