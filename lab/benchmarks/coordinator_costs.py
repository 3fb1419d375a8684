"""What the coordinating ``sync`` process spends per finished target, against the number of records already in
the workspace: SYNTHETIC records (tests/store/record_factory.py's made-up results on a made-up device, written
straight to results/ and indexed in hotkernel.lock), no GPU, no torch.

For each size N it builds a workspace of min(N, --max-targets) cpu targets and N records spread over them (the
manifest loader refuses a manifest of more than 8000 YAML keys and values: about 800 targets as record_factory writes them), then times
(median of --repeat):
  manifest_load      load hotkernel.yaml (record() loads it for every record it writes)
  store_snapshot     hash results/ and the lock (sync takes it after every record: what no run may change)
  lock_rw            read hotkernel.lock and write it back (sync's lock entry per target)
  leaderboard        regenerate LEADERBOARD.md from results/ (record() does it for every record)
  record             hotkernel.store.record.record of one more record (spec check, best so far, index, board)
  sync_step          sync's whole per-target step (record_outcome, then store_snapshot): what a lane waits on
  plan               plan over all targets (once per sync, twice with the lock taken)

Usage: python lab/benchmarks/coordinator_costs.py --sizes 100,1000,10000 --out lab/benchmarks/evidence/performance/
prints one line per size and writes coordinator_costs.json there.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hotkernel import __version__
from hotkernel._util.fs import atomic_write_text, sha256_file, sha256_text
from hotkernel.reconcile.executor import Job, LaneRun, Outcome
from hotkernel.reconcile.outcome import Prepared, record_outcome
from hotkernel.reconcile.plan import load_workspace_manifest, plan
from hotkernel.reconcile.progress import RunCounter
from hotkernel.store.leaderboard import current_protocol, write_leaderboard
from hotkernel.store.models import Record
from hotkernel.store.record import record, store_snapshot
from hotkernel.workspace.lockfile import read_lock, workspace_lock, write_lock
from hotkernel.workspace.paths import Workspace

# The synthetic results the record and leaderboard tests use: their numbers follow from their per-round times by
# the verdict rule, as `record` recomputes them (results made up here without that were refused).
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "store"))
from record_factory import make_workspace, provenance, synthetic_result  # noqa: E402

PROVENANCE = provenance()


def build(root: Path, n: int, targets: int) -> Workspace:
    """``targets`` cpu targets in hotkernel.yaml and ``n`` synthetic records spread over them (one per target
    while n <= targets), all indexed in hotkernel.lock."""
    ws = make_workspace(root, tuple(f"t{i:05d}" for i in range(targets)))
    lock = read_lock(ws)
    for i in range(n):
        name, stamp = f"t{i % targets:05d}", f"20261201T{i // targets // 60:02d}{i // targets % 60:02d}00Z"
        rec = Record(target=name, created_at="2026-12-01T00:00:00Z", who="synthetic", note="synthetic record",
                     contract=current_protocol(), result=synthetic_result(name, "faster", 1.0 + (i % 50 + 5) / 100),
                     provenance=PROVENANCE)
        text = json.dumps(rec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"
        path = root / "results" / name / f"{stamp}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        lock.records[path.relative_to(root).as_posix()] = sha256_text(text)
    write_lock(ws, lock)
    write_leaderboard(ws)
    return ws


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median seconds of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(n: int, repeat: int, max_targets: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hotkernel-coordinator-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        targets = min(n, max_targets)
        ws = build(root, n, targets)
        built_s = time.perf_counter() - start
        manifest = load_workspace_manifest(ws)
        target = "t00000"
        counter = RunCounter(None, total=0)
        job = Job(key=target, target=target, baseline=f"targets/{target}/baseline.py",
                  candidate=f"targets/{target}/candidate.py", rounds=3, timeout_s=None, device_kind="cpu")
        candidate = root / "targets" / target / "candidate.py"  # the file the state and the result both name
        candidate.parent.mkdir(parents=True, exist_ok=True)
        candidate.write_text("kernel = None\n", encoding="utf-8")
        state = {"manifest": "m", "baseline_sha256": "b", "candidate_sha256": sha256_file(candidate),
                 "contract_sha256": "c", "sources_sha256": "s"}
        ready = Prepared(name=target, context={}, state=state, reasons=["from scratch"], device_kind="cpu",
                          jobs=[job])
        facts = {"cpu": "synthetic cpu"}

        def lock_rw() -> None:
            write_lock(ws, read_lock(ws))

        def one_record() -> None:
            record(ws, target, synthetic_result(target, "faster", 1.1), note="synthetic", who="synthetic",
                   provenance=PROVENANCE)

        snapshot: list[Any] = []

        def sync_step() -> None:  # as sync does per outcome: record it against the last snapshot, snapshot again
            result = synthetic_result(target, "faster", 1.2)
            ran = result.candidate.model_copy(update={"sha256": state["candidate_sha256"]})
            run = LaneRun(result=result.model_copy(update={"candidate": ran}), facts=facts)
            outcome = Outcome(job, run=run, lane="bench")
            item = record_outcome(ws, ready, outcome, who="synthetic", fallback_who="synthetic", gpu_name=None,
                                   counter=counter, before=snapshot[0])
            assert item.status == "recorded", item
            snapshot[0] = store_snapshot(ws)

        with workspace_lock(ws, command="coordinator benchmark"):
            row = {
                "records": n,
                "targets": targets,
                "build_s": round(built_s, 3),
                "manifest_load_s": timed(lambda: load_workspace_manifest(ws), repeat),
                "store_snapshot_s": timed(lambda: store_snapshot(ws), repeat),
                "lock_rw_s": timed(lock_rw, repeat),
                "leaderboard_s": timed(lambda: write_leaderboard(ws), repeat),
                "record_s": timed(one_record, repeat),
            }
            snapshot.append(store_snapshot(ws))  # the state after the last write, as sync holds it
            row["sync_step_s"] = timed(sync_step, repeat)
            row["plan_s"] = timed(lambda: plan(ws, gpu_name=None, manifest=manifest), max(1, repeat // 2))
    return {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="record counts, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="timed calls per measurement (median)")
    parser.add_argument("--max-targets", type=int, default=500,
                        help="targets in the manifest (records beyond it are history of the same targets): the "
                        "manifest loader refuses more than 8000 YAML keys and values, about 800 such targets")
    parser.add_argument("--out", type=Path, default=None, help="folder for coordinator_costs.json")
    args = parser.parse_args(argv)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        row = measure(n, args.repeat, args.max_targets)
        rows.append(row)
        print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    report = {
        "what": "per-target costs of the coordinating sync process vs records in the workspace (SYNTHETIC records)",
        "command": "python lab/benchmarks/coordinator_costs.py " + " ".join(argv),
        "host": {"python": platform.python_version(), "machine": platform.machine(), "cpu": platform.processor()},
        "hotkernel": __version__,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "rows": rows,
    }
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / "coordinator_costs.json"
        path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
