"""The workspace's run store: every verify and bench result the runner produced, as
``.hotkernel/runs/<id>.json``.

``record`` takes a verify result from here by its id, not JSON typed in from outside. A stored run holds the
result with every run's samples and a digest (sha256 of the result's canonical JSON); a file whose digest does
not match is refused by name. The digest catches an edit that leaves it alone; someone who can write the file
can also rewrite the digest, which is why ``record`` and the board recompute the verdict from the samples as
well (``docs/security.md``).

The id is the UTC time of the save plus the first 8 hex digits of the digest: ids sort by time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from hotkernel._util.fs import atomic_write_text
from hotkernel.errors import HotkernelError, quote
from hotkernel.run.models import BenchResult, VerifyResult

RUNS_DIR = "runs"
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")
RunKind = Literal["verify", "bench"]
R = TypeVar("R", BenchResult, VerifyResult)


@dataclass(frozen=True)
class StoredRun:
    """One run-store file, its digest checked."""

    run_id: str
    kind: RunKind
    created_at: str
    digest: str
    result: VerifyResult | BenchResult


def stored_body(result: VerifyResult | BenchResult) -> dict[str, Any]:
    """The result as the store keeps it: its JSON without ``run_id`` (the id is derived from the digest)."""
    return result.model_dump(mode="json", exclude={"run_id"})


def result_digest(result: VerifyResult | BenchResult) -> str:
    """sha256 of the result's canonical JSON (sorted keys, no spaces, no ``run_id``): what a stored run's digest
    covers."""
    text = json.dumps(stored_body(result), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def runs_dir(ws: Any) -> Path:
    """``<workspace>/.hotkernel/runs``."""
    return Path(ws.root) / ".hotkernel" / RUNS_DIR


def save_run(ws: Any, result: R) -> R:
    """Write ``result`` into the run store and return it with its ``run_id``; a workspace that cannot be written
    to (read-only, no root) keeps nothing and the result comes back with ``run_id`` None."""
    root = getattr(ws, "root", None)
    if root is None:
        return result.model_copy(update={"run_id": None})
    digest = result_digest(result)
    now = dt.datetime.now(dt.timezone.utc)
    run_id = f"{now.strftime('%Y%m%dT%H%M%SZ')}-{digest[:8]}"
    kind: RunKind = "verify" if isinstance(result, VerifyResult) else "bench"
    body = {
        "kind": kind,
        "id": run_id,
        "created_at": now.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "digest": digest,
        "result": stored_body(result),
    }
    path = runs_dir(ws) / f"{run_id}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(body, separators=(",", ":")) + "\n", overwrite=False)
    except OSError:  # a read-only workspace still gets its result, without a run id to record
        if not path.is_file():  # else the same result, saved within the same second, is already kept
            return result.model_copy(update={"run_id": None})
    return result.model_copy(update={"run_id": run_id})


def _path(ws: Any, run_id: str) -> Path:
    if not RUN_ID.match(run_id or ""):
        raise HotkernelError(
            f"run id {quote(run_id)} is not one (like 20261205T101500Z-1a2b3c4d): list them with "
            "`hotkernel record TARGET --runs`"
        )
    return runs_dir(ws) / f"{run_id}.json"


def load_run(ws: Any, run_id: str) -> StoredRun:
    """The stored run ``run_id``, its digest checked; a HotkernelError naming the file otherwise."""
    path = _path(ws, run_id)
    where = f".hotkernel/{RUNS_DIR}/{run_id}.json"
    if path.is_symlink() or not path.is_file():
        raise HotkernelError(f"{where}: no such run; list them with `hotkernel record TARGET --runs`")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = VerifyResult if data.get("kind") == "verify" else BenchResult
        result = model.model_validate({**data["result"], "run_id": None})
        digest, created, kind = str(data["digest"]), str(data["created_at"]), data["kind"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
        raise HotkernelError(f"{where}: damaged run file (not a stored run); run verify again") from None
    if kind not in ("verify", "bench") or data.get("id") != run_id:
        raise HotkernelError(f"{where}: damaged run file (its id or kind is wrong); run verify again")
    if result_digest(result) != digest:
        raise HotkernelError(f"{where}: edited after the run (its digest does not match); run verify again")
    result = result.model_copy(update={"run_id": run_id})
    return StoredRun(run_id=run_id, kind=kind, created_at=created, digest=digest, result=result)


def run_ids(ws: Any) -> list[str]:
    """Every run id in the store, oldest first (by the second in the id, then by when the file was written)."""
    folder = runs_dir(ws)
    if not folder.is_dir():
        return []
    found = [p for p in folder.glob("*.json") if RUN_ID.match(p.stem) and not p.is_symlink()]
    return [p.stem for p in sorted(found, key=lambda p: (p.stem[:16], p.stat().st_mtime_ns, p.stem))]


def verify_runs(ws: Any, target: str) -> list[StoredRun]:
    """The stored verify runs of ``target`` (the contract's target name), oldest first; damaged ones skipped."""
    found = []
    for run_id in run_ids(ws):
        try:
            run = load_run(ws, run_id)
        except HotkernelError:
            continue
        if run.kind == "verify" and getattr(run.result, "target", None) == target:
            found.append(run)
    return found


def latest_verify(ws: Any, target: str) -> StoredRun:
    """The newest stored verify of ``target``; a HotkernelError when there is none."""
    runs = verify_runs(ws, target)
    if not runs:
        raise HotkernelError(
            f"no stored verify of target {target!r} in {os.fspath(runs_dir(ws))}: run "
            f"`hotkernel verify targets/{target}/baseline.py targets/{target}/candidate.py` first"
        )
    return runs[-1]


def stored_verify(ws: Any, target: str, run_id: str | None, latest: bool) -> StoredRun:
    """The stored verify to record: ``run_id``, or with ``latest`` the newest of ``target``; exactly one of the
    two. A HotkernelError when it is not there, was edited, or is a bench."""
    if latest == (run_id is not None):
        raise HotkernelError(
            f"record: pass one run id or latest (list the runs with `hotkernel record {target} --runs`), "
            "or import a result from elsewhere with `hotkernel record --import FILE`"
        )
    stored = latest_verify(ws, target) if latest else load_run(ws, str(run_id))
    if stored.kind != "verify":
        raise HotkernelError(f"record: run {stored.run_id} is a bench, not a verify; record a verify's run")
    return stored
