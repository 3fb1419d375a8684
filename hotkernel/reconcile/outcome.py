"""What the coordinator does with a target's finished verify (``record_outcome``): check the candidate is the one
that ran, record it (board=False: the sync writes the board once), and point the lock at it, or hold a would-be
new best (``Held``) until its second verify; every anticipated failure becomes a ``failed`` ``SyncItem``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hotkernel._util.fs import sha256_file
from hotkernel.reconcile.jobs import Job, Outcome, copy_hint
from hotkernel.reconcile.keep import candidate_who
from hotkernel.reconcile.models import SyncItem, failed_item, measured, recorded_item, tampered_item
from hotkernel.reconcile.plan import CPU_DEVICE, device_ran_on
from hotkernel.reconcile.progress import RunCounter
from hotkernel.store.models import RecordResult
from hotkernel.store.record import StoreSnapshot, collect_provenance, record
from hotkernel.workspace.lockfile import LockEntry, read_lock, write_lock
from hotkernel.workspace.paths import Workspace


@dataclass
class Held:
    """A would-be new best, recorded but not yet in the lock: its confirmation verify decides."""

    record: str
    fingerprint: dict[str, Any]
    device: str


@dataclass
class Prepared:
    """A target rendered and ready to verify: its fingerprint state, plan reasons and jobs."""

    name: str
    context: dict[str, Any]
    state: dict[str, Any]
    reasons: list[str]
    device_kind: str
    jobs: list[Job] = field(default_factory=list)
    held: Held | None = None  # set by record_outcome when the first verify would be a new best


def record_outcome(
    ws: Workspace,
    ready: Prepared,
    outcome: Outcome,
    *,
    who: str | None,
    fallback_who: str,
    gpu_name: str | None,
    counter: RunCounter,
    before: StoreSnapshot,
    confirms: str | None = None,
) -> SyncItem:
    """Record one finished job (the coordinator's part); every anticipated failure becomes a ``failed`` item.

    A ``faster`` first verify that would be the target's new best is recorded but kept out of the lock
    (``ready.held``): sync verifies the same files again, and that record (``confirms``: the first one's path)
    is what the lock points at. Without the second verify the target stays out of date."""
    name, state = ready.name, ready.state

    def say(message: str) -> None:
        counter.say(name, message, outcome.job.runs)

    try:
        if outcome.run is None:
            say(f"failed: {outcome.error}")
            return SyncItem(name=name, status="failed", reason=outcome.error, confirms=confirms)
        result, facts = outcome.run.result, outcome.run.facts
        target_dir = ws.targets_dir / name
        ran = result.candidate.sha256
        if sha256_file(target_dir / "candidate.py") != state["candidate_sha256"] or (
            ran and ran != state["candidate_sha256"]
        ):
            return SyncItem(
                name=name,
                status="failed",
                verdict=None,
                reason="candidate changed during sync: run `hotkernel sync` again",
                confirms=confirms,
            )
        say(f"record ({result.verdict})")
        device = device_ran_on(ready.device_kind, facts, result.device, gpu_name)
        fingerprint = {
            k: state[k]
            for k in ("manifest", "baseline_sha256", "candidate_sha256", "contract_sha256", "sources_sha256")
        }
        fingerprint["device"] = device
        declared = candidate_who(target_dir / "candidate.py")  # read after rendering
        author = who or declared or fallback_who
        if not (who or declared):
            say(
                f"targets/{name}/candidate.py declares no WHO: recorded as {author!r}; "
                'put WHO = "<who wrote it>" in the candidate to name its author'
            )
        rec = write_record(ws, ready, result, facts, fingerprint, author=author, before=before, confirms=confirms)
        speedup, interval = measured(result)
        if rec.tampered:
            say("failed: the run changed files only hotkernel writes")
            return tampered_item(name, rec.path, rec.tampered, confirms=confirms)
        new_best = result.verdict == "faster" and (rec.previous_best is None or (speedup or 0) > rec.previous_best)
        if confirms is None and new_best:
            ready.held = Held(record=rec.path, fingerprint=fingerprint, device=device)
            say(f"{result.verdict}: a new best, verified again before it counts")
        elif result.verdict != "invalid":  # an invalid run measured nothing: the target stays out of date
            lock = read_lock(ws)
            lock.targets.setdefault(name, {})[device] = LockEntry(
                **fingerprint,
                record=rec.path,
                verdict=result.verdict,
                protocol=result.protocol or 0,
            )
            write_lock(ws, lock)
        say(f"done: {result.verdict}")
        reason = copy_hint(result.reason, outcome.run, ws.root)
        return recorded_item(
            name,
            result,
            rec.path,
            reason,
            beats_best=rec.beats_best,
            clear_of_best=rec.clear_of_best,
            who=author,
            confirms=confirms,
        )
    except Exception as err:  # noqa: BLE001 - a failing target is reported; the others go on
        return failed_item(name, err, say)


def write_record(
    ws: Workspace,
    ready: Prepared,
    result: Any,
    facts: dict[str, Any] | None,
    fingerprint: dict[str, Any],
    *,
    author: str,
    before: StoreSnapshot,
    confirms: str | None,
) -> RecordResult:
    """``record`` one verify of ``ready`` (board=False); ``confirms``: the record it repeats."""
    kind = "cpu" if fingerprint["device"] == CPU_DEVICE else "cuda"
    provenance = None
    if facts is not None:  # measured where the run happened (a lane's GPU, a cluster node)
        provenance = collect_provenance(
            ws,
            result,
            python=result.python,
            device_kind=kind,
            facts={k: v for k, v in facts.items() if k != "cpu"},
            cpu=facts.get("cpu"),
        )
    note = f"hotkernel sync: {', '.join(ready.reasons)}"
    if confirms is not None:
        note += f"; confirms {confirms}"
    return record(
        ws,
        ready.name,
        result,
        note=note,
        who=author,
        python=result.python,
        fingerprint=fingerprint,
        device_kind=kind,
        before=before,
        provenance=provenance,
        board=False,
        confirms=confirms,
    )
