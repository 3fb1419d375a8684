"""The records under ``results/``: which files count (vouched for by hotkernel.lock's records index, and whose
numbers recompute from their samples), which are torn or foreign, and the committed records an index may adopt.

A file counts as a record only when it is a regular file (no symlink) ``results/<target>/<name>.json`` whose
``target`` is that directory, whose sha256 is the one ``hotkernel.lock``'s ``records`` index holds (written by
``record`` inside the workspace lock), whose verdict, speedup and interval follow from its per-round times by the
verdict rule (``store/recompute.py``), and that is not a copy of another record's run. Anything else that says
``kind: record`` is listed as unverified and never counted; a file that does not parse is damaged; an index entry
without its file is missing: each is a problem line naming the file and the fix.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from hotkernel._util.fs import sha256_file
from hotkernel._util.git import git_output
from hotkernel.errors import HotkernelError
from hotkernel.run.render import contract_module
from hotkernel.store.compact import decode
from hotkernel.store.models import RECORD_KIND, Record
from hotkernel.store.recompute import recompute_problem
from hotkernel.workspace.lockfile import Lock, check_record_path, read_lock, temp_files, write_lock
from hotkernel.workspace.paths import Workspace

KIND_RECORD = re.compile(r'"kind"\s*:\s*"record"')
RESTORE_RECORD = (
    "records are written by hotkernel only: restore it with `git checkout -- {path}` or move it out of results/"
)

COMPACT_JOURNAL = "compact-records.json"  # under .hotkernel/: the record `leaderboard --compact-records` is rewriting


def journal_path(ws: Workspace) -> Path:
    """The journal of a records rewrite (``compact_records.py``): present only while one runs, or after one was
    interrupted with a record left new but not yet indexed."""
    return ws.state_dir / COMPACT_JOURNAL


def journal_problem(ws: Workspace) -> str | None:
    """One line when a records rewrite is running or was interrupted, else None."""
    if not journal_path(ws).is_file():
        return None
    return (
        f"{journal_path(ws).relative_to(ws.root).as_posix()}: a `hotkernel leaderboard --compact-records` is running "
        "or was interrupted; `hotkernel leaderboard` puts back the record it left unindexed"
    )


def current_protocol() -> int:
    """The protocol version of the contract this hotkernel renders (``PROTOCOL_VERSION`` of the contract)."""
    return int(contract_module().PROTOCOL_VERSION)


@dataclass
class ResultsScan:
    """What is under ``results/``, sorted by path: vouched records and every kind of torn or foreign file."""

    records: list[tuple[str, Record]] = field(default_factory=list)  # vouched for by the index
    unverified: list[tuple[str, str]] = field(default_factory=list)  # (path, why) say kind: record, not vouched
    damaged: list[tuple[str, str]] = field(default_factory=list)  # (path, why) record files that do not parse
    missing: list[str] = field(default_factory=list)  # indexed or locked, but no such regular file
    temp: list[str] = field(default_factory=list)  # leftover temp files of atomic writes

    def problems(self) -> list[str]:
        """One line per torn or foreign file: the file, what is wrong, the fix."""
        lines = [f"{p}: {why}; {RESTORE_RECORD.format(path=p)}" for p, why in self.damaged]
        lines += [
            f"{p}: named by hotkernel.lock but missing; restore it with `git checkout -- {p}`, or run "
            "`hotkernel sync` to record the target again"
            for p in self.missing
        ]
        lines += [
            f"{p}: unverified record ({why}); it is never counted: restore the original with `git checkout -- "
            f"{p}` (a committed record made before the index: `hotkernel leaderboard --vouch-committed`), or "
            "delete it"
            for p, why in self.unverified
        ]
        lines += [
            f"{p}: leftover temp file of an interrupted write; the next `hotkernel sync`, `record` or "
            "`leaderboard` removes it after a minute (or delete it)"
            for p in self.temp
        ]
        return lines


def _parse(path: Path) -> tuple[dict | None, str | None]:
    """(JSON object, None) or (None, why it is not one)."""
    try:
        return _parse_bytes(path.read_bytes())
    except OSError as err:
        return None, _not_json(err)


def _parse_bytes(raw: bytes) -> tuple[dict | None, str | None]:
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        return None, _not_json(err)
    return (data, None) if isinstance(data, dict) else (None, "not a JSON object")


def _not_json(err: Exception) -> str:
    return f"not valid JSON ({type(err).__name__}: {' '.join(str(err).split())[:120]}): truncated or damaged"


@dataclass(frozen=True)
class _Read:
    """What one file's bytes are: not JSON (``why``), JSON of another kind (``other``), a malformed record
    (``why``), or a record with ``forged`` (why its numbers do not recompute, None when they do)."""

    record: Record | None = None
    why: str | None = None
    not_json: bool = False
    other: bool = False
    forged: str | None = None


# Parsed files kept in this process, keyed by the sha256 of their bytes: the same bytes read again (a sync scans
# results/ after every record, and each scan recomputes every verdict) are not parsed, decoded, validated and
# recomputed again. On a 2-core box one scan of 604 records took 0.36 s, then 0.04 s (docs/performance.md).
# A store larger than this is scanned as before. Records handed out by a scan are shared, so ``Record`` is frozen.
READ_MEMO_FILES = 4096
_READ_MEMO: OrderedDict[str, _Read] = OrderedDict()
_READ_MEMO_LOCK = threading.Lock()


def _read(raw: bytes, digest: str) -> _Read:
    with _READ_MEMO_LOCK:
        known = _READ_MEMO.get(digest)
        if known is not None:
            _READ_MEMO.move_to_end(digest)
            return known
    data, why = _parse_bytes(raw)
    if data is None:
        read = _Read(why=why, not_json=True)
    elif data.get("kind") != RECORD_KIND:
        read = _Read(other=True)
    else:
        record, why = _validate(data)
        read = _Read(record=record, why=why, forged=record_problem(record) if record is not None else None)
    with _READ_MEMO_LOCK:
        _READ_MEMO[digest] = read
        while len(_READ_MEMO) > READ_MEMO_FILES:
            _READ_MEMO.popitem(last=False)
    return read


def _validate(data: dict) -> tuple[Record | None, str | None]:
    try:
        return Record.model_validate(decode(data)), None
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in first["loc"])
        return None, f"record is malformed at {loc or 'top level'}: {first['msg']}"


def scan_results(ws: Workspace, lock: Lock | None = None) -> ResultsScan:
    """Every ``*.json`` under ``results/`` sorted into vouched records, unverified, damaged, missing and temp."""
    lock = read_lock(ws) if lock is None else lock
    scan = ResultsScan(temp=[p.relative_to(ws.root).as_posix() for p in temp_files(ws) if ws.results_dir in p.parents])
    index = lock.records
    seen: set[str] = set()
    results = ws.results_dir
    if results.is_symlink():
        scan.unverified.append(("results", "results/ is a symlink: nothing under it counts"))
        results_paths: list[Path] = []
    else:
        results_paths = sorted(results.rglob("*.json")) if results.is_dir() else []
    for path in results_paths:
        rel = path.relative_to(ws.root).as_posix()
        if any(part.startswith(".") for part in path.relative_to(results).parts):
            continue  # temp files and hidden folders
        seen.add(rel)
        in_index = rel in index
        if path.is_symlink() or not path.is_file() or any(p.is_symlink() for p in path.parents if results in p.parents):
            if in_index or _says_record(path):
                scan.unverified.append((rel, "a symlink, in a symlinked folder, or not a regular file"))
            continue
        try:
            raw = path.read_bytes()
        except OSError as err:
            read = _Read(why=_not_json(err), not_json=True)
            digest = None
        else:
            digest = hashlib.sha256(raw).hexdigest()
            read = _read(raw, digest)
        if read.not_json:
            if in_index or _looks_like_record_path(rel):
                scan.damaged.append((rel, read.why or "unreadable"))
            continue
        if read.other:
            if in_index:
                scan.damaged.append((rel, "indexed as a record but has no kind: record"))
            continue  # calibration data, baseline_choice.json, ...
        record = read.record
        if record is None:
            scan.damaged.append((rel, read.why or "malformed"))
            continue
        try:
            check_record_path(rel, record.target)
        except ValueError:
            scan.unverified.append((rel, f"not under results/{record.target}/"))
            continue
        if read.forged:
            scan.unverified.append((rel, f"its numbers do not recompute: {read.forged}"))
        elif not in_index:
            scan.unverified.append((rel, "not in the records index of hotkernel.lock"))
        elif digest != index[rel]:
            scan.unverified.append((rel, "content differs from the sha256 the records index holds"))
        else:
            scan.records.append((rel, record))
    named = set(index) | lock.entry_records()
    scan.missing = sorted(p for p in named if p not in seen)
    _drop_copies(scan)
    return scan


FINGERPRINT_SIDES = (("baseline_sha256", "baseline"), ("candidate_sha256", "candidate"))


def record_problem(record: Record) -> str | None:
    """Why a record's numbers are not what its runs measured (``recompute_problem``), or why the files its
    fingerprint names are not the files its runs measured; None when both hold."""
    problem = recompute_problem(record.result, record.target)
    if problem:
        return problem
    result, fingerprint = record.result, record.fingerprint or {}
    for key, side in FINGERPRINT_SIDES:
        ran = getattr(result, side).sha256
        if fingerprint.get(key) and ran and fingerprint[key] != ran:
            return f"its fingerprint's {key} is not the {side} file its runs measured"
    if fingerprint.get("contract_sha256") and result.contract_sha256 not in (None, fingerprint["contract_sha256"]):
        return "its fingerprint's contract_sha256 is not the contract its runs used"
    return None


def run_key(record: Record) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """The per-round times of a record's verify: two records with the same ones keep the same run."""
    base, cand = record.result.baseline.stats.samples_ms, record.result.candidate.stats.samples_ms
    return (tuple(base), tuple(cand)) if base and cand else None


def _drop_copies(scan: ResultsScan) -> None:
    """A vouched record that keeps the same run as an earlier one (a copy) is unverified, naming the first."""
    first: dict[tuple[tuple[float, ...], tuple[float, ...]], str] = {}
    kept = []
    for rel, record in scan.records:
        key = run_key(record)
        if key is not None and key in first:
            scan.unverified.append((rel, f"a copy of the run {first[key]} keeps: one verify counts once"))
            continue
        if key is not None:
            first[key] = rel
        kept.append((rel, record))
    scan.records = kept


def _says_record(path: Path) -> bool:
    try:
        return KIND_RECORD.search(path.read_text(encoding="utf-8", errors="replace")[:100_000]) is not None
    except OSError:
        return False


def _looks_like_record_path(rel: str) -> bool:
    try:
        check_record_path(rel)
    except ValueError:
        return False
    return True


def load_records(results_dir: Path) -> list[tuple[str, Record]]:
    """The vouched records under ``results_dir`` (a workspace's ``results/``) as (workspace path, record)."""
    return scan_results(Workspace(results_dir.parent)).records


def load_record(path: Path) -> Record | None:
    """Parse one record file (None when it is not ``kind: record``); a damaged record is a HotkernelError."""
    data, why = _parse(path)
    if data is None:
        raise HotkernelError(f"{path}: {why}; {RESTORE_RECORD.format(path=path)}")
    if data.get("kind") != RECORD_KIND:
        return None
    record, why = _validate(data)
    if record is None:
        raise HotkernelError(f"{path}: {why}; {RESTORE_RECORD.format(path=path)}")
    return record


def not_counted_reason(record: Record, protocol: int) -> str | None:
    """Why a record does not count toward best-so-far, or None when it counts."""
    if record.invalidated is not None:
        return f"invalidated: {record.invalidated.reason}"
    if record.contract is not None and record.contract < protocol:  # None: no run got far enough to say
        return f"contract protocol {record.contract} (current {protocol})"
    return None


def device_of(record: Record) -> str:
    """The device a record was measured on (GPU name or CPU model)."""
    return record.provenance.device or record.result.device or "unknown"


def vouch_committed_records(ws: Workspace) -> list[str]:
    """Index the unverified records that git HEAD holds byte for byte (the caller holds the workspace lock).

    For records made before the index existed, or a lock restored from elsewhere: a committed record went through
    review of results/, so its committed bytes are what the index vouches for. A file that differs from HEAD, is
    untracked, or sits outside results/<its target>/ stays unverified. Returns the paths indexed.
    """
    if git_output(["rev-parse", "HEAD"], root=ws.root) is None:
        raise HotkernelError(f"{ws.root}: not a git checkout with a commit: only committed records can be vouched for")
    tracked = set((git_output(["ls-files", "--", "results"], root=ws.root) or "").splitlines())
    changed = set((git_output(["diff", "--name-only", "HEAD", "--", "results"], root=ws.root) or "").splitlines())
    lock = read_lock(ws)
    added = []
    for path, why in scan_results(ws, lock).unverified:
        if why == "not in the records index of hotkernel.lock" and path in tracked and path not in changed:
            lock.records[path] = sha256_file(ws.root / path) or ""
            added.append(path)
    if added:
        write_lock(ws, lock)
    return added
