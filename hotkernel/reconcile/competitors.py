"""A sync's competitor verifies (``competitors:`` in hotkernel.yaml): each out-of-date competitor becomes one lane
job beside the targets' (``prepare_competitors``), and its outcome one record (``record_competitor``).

Each competitor is rendered (``run/competitors.py``), verified against the generated baseline like a candidate, in
whatever lane runs its device kind (the CPU lane beside the GPU's, one lane per GPU, a Ray task), recorded with
``role: competitor`` (never the kept candidate) and fingerprinted in the lock's ``competitors`` section, so
``plan`` says when one is out of date.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hotkernel._util.fs import sha256_file
from hotkernel.manifest import manifest_fingerprint, resolved_target
from hotkernel.reconcile.jobs import Job, JobTerms, Outcome, competitor_job_key, copy_hint, job_files
from hotkernel.reconcile.models import SyncItem, failed_item, recorded_item, tampered_item
from hotkernel.reconcile.plan import CPU_DEVICE, competitor_state, device_key, device_ran_on
from hotkernel.run.competitors import COMPILE_MODES, competitor_who, render_competitor
from hotkernel.run.render import contract_sha256, render_target
from hotkernel.run.runner import compile_warm_for
from hotkernel.store.record import record
from hotkernel.workspace.lockfile import LockEntry, read_lock, write_lock
from hotkernel.workspace.paths import Workspace

FINGERPRINT_PARTS = ("manifest", "baseline_sha256", "candidate_sha256", "contract_sha256", "sources_sha256")
Say = Callable[[str], None]  # a message about one competitor, for the progress line


@dataclass
class Competitor:
    """One competitor rendered and ready to verify: its job and what its record is fingerprinted with."""

    target: str
    competitor: str
    reasons: list[str]
    parts: dict[str, Any]  # FINGERPRINT_PARTS as rendered (its script as ``candidate_sha256``)
    job: Job  # its ``candidate`` is the rendered competitor script (workspace-relative)

    @property
    def label(self) -> str:
        """How reports name it: ``<target> competitor <competitor>``."""
        return competitor_label(self.target, self.competitor)


def competitor_label(target: str, competitor: str) -> str:
    return f"{target} competitor {competitor}"


def prepare_competitors(
    ws: Workspace,
    manifest: Any,
    name: str,
    reasons: dict[str, list[str]],
    terms: JobTerms,
    say: Callable[[str, str], None],
) -> dict[str, Competitor | SyncItem]:
    """Render target ``name`` and its competitors named in ``reasons`` (competitor -> why it runs), in manifest
    order; per job key (``competitor_job_key``) the ``Competitor`` to verify, or the ``skipped`` / ``failed``
    item of one that cannot run here (a cuda target where no lane runs cuda: ``no_cuda``)."""
    out: dict[str, Competitor | SyncItem] = {}
    todo = [c for c in manifest.targets[name].competitors if c in reasons]
    if not todo:
        return out
    try:
        context = resolved_target(manifest, name)
        fingerprint = manifest_fingerprint(manifest, name)
        contract_sha = contract_sha256()
        kind = CPU_DEVICE if device_key(context, terms.gpu_name) == CPU_DEVICE else "cuda"
        render_target(ws, name, context)  # the baseline and contract they are verified against
    except Exception as err:  # noqa: BLE001 - a failing target is reported; the others go on
        for competitor in todo:
            label = competitor_label(name, competitor)
            out[competitor_job_key(name, competitor)] = failed_item(label, err, lambda m, c=label: say(c, m))
        return out
    for competitor in todo:
        key, label = competitor_job_key(name, competitor), competitor_label(name, competitor)
        try:
            if kind not in terms.kinds:
                say(label, "skipped: no CUDA GPU")
                out[key] = SyncItem(name=label, status="skipped", reason=terms.no_cuda)
                continue
            script = render_competitor(ws, name, context, competitor)
            state = competitor_state(ws, context, fingerprint, contract_sha, competitor)
            rel = script.relative_to(ws.root).as_posix()
            refs = () if competitor in COMPILE_MODES else (competitor,)
            job = Job(
                key=key,
                target=name,
                baseline=f"targets/{name}/baseline.py",
                candidate=rel,
                rounds=terms.rounds,
                timeout_s=terms.timeout_s,
                device_kind=kind,
                files=job_files(ws, name, context, refs),
                compile_warm=kind == CPU_DEVICE and compile_warm_for([ws.target_dir(name) / "baseline.py", script]),
                resolved=context,
            )
            parts = {k: state[k] for k in FINGERPRINT_PARTS}
            out[key] = Competitor(name, competitor, reasons[competitor], parts, job)
        except Exception as err:  # noqa: BLE001 - a failing competitor is reported; the others go on
            out[key] = failed_item(label, err, lambda m, c=label: say(c, m))
    return out


def record_competitor(
    ws: Workspace, ready: Competitor, outcome: Outcome, *, gpu_name: str | None, before: Any, say: Say
) -> SyncItem:
    """Record one finished competitor verify (board=False: the sync writes the board) and point the lock's
    competitor entry at it, unless it was invalid (an invalid run measured nothing: it stays out of date);
    every anticipated failure becomes a ``failed`` item."""
    label = ready.label
    try:
        if outcome.run is None:
            say(f"failed: {outcome.error}")
            return SyncItem(name=label, status="failed", reason=outcome.error)
        result, facts = outcome.run.result, outcome.run.facts
        ran = result.candidate.sha256
        if sha256_file(ws.root / ready.job.candidate) != ready.parts["candidate_sha256"] or (
            ran and ran != ready.parts["candidate_sha256"]
        ):
            return SyncItem(
                name=label,
                status="failed",
                reason=f"{ready.job.candidate} changed during sync (it is generated): run `hotkernel sync` again",
            )
        device = device_ran_on(ready.job.device_kind, facts, result.device, gpu_name)
        say(f"record ({result.verdict})")
        rec = record(
            ws,
            ready.target,
            result,
            note=f"hotkernel sync: competitor {ready.competitor}: {', '.join(ready.reasons)}",
            who=competitor_who(ready.competitor),
            python=result.python,
            fingerprint={**ready.parts, "device": device},
            device_kind="cpu" if device == CPU_DEVICE else "cuda",
            before=before,
            competitor=ready.competitor,
            board=False,
        )
        if rec.tampered:
            return tampered_item(label, rec.path, rec.tampered)
        if result.verdict != "invalid":
            lock = read_lock(ws)
            lock.competitors.setdefault(ready.target, {}).setdefault(ready.competitor, {})[device] = LockEntry(
                **ready.parts, device=device, record=rec.path, verdict=result.verdict, protocol=result.protocol or 0
            )
            write_lock(ws, lock)
        say(f"done: {result.verdict}")
        return recorded_item(label, result, rec.path, copy_hint(result.reason, outcome.run, ws.root), beats_best=False)
    except Exception as err:  # noqa: BLE001 - a failing competitor is reported; the others go on
        return failed_item(label, err, say)
