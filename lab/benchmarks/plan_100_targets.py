"""How long `hotkernel plan` takes for a workspace of 100 targets (goal: under 0.5 s).

Builds a throw-away workspace with 100 cpu targets, renders them, writes a hotkernel.lock in which every
target is up to date (so plan compares every fingerprint part), edits a few candidates, then times
``reconcile.plan`` in-process (median of repeats) and the ``hotkernel plan`` command end to end (process start
and imports included). Prints the numbers; exits 1 when the in-process median exceeds the goal.

    python lab/benchmarks/plan_100_targets.py [--targets 100] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL_S = 0.5


def build_workspace(root: Path, count: int) -> None:
    """A manifest of ``count`` cpu targets over one kernel file, rendered, with an up-to-date lock."""
    from hotkernel._util.fs import sha256_file
    from hotkernel.manifest import load_manifest, manifest_fingerprint, resolved_target
    from hotkernel.run.bench import sample_stats
    from hotkernel.run.models import SideSummary, VerifyResult
    from hotkernel.run.render import contract_sha256, expected_baseline_sha256, render_target
    from hotkernel.run.runner import sources_digest
    from hotkernel.store.leaderboard import current_protocol
    from hotkernel.store.models import Provenance, Record
    from hotkernel.workspace.lockfile import write_lock
    from hotkernel.workspace.paths import Workspace

    (root / "kernels.py").write_text("def scale(x, w):\n    return x * w\n", encoding="utf-8")
    lines = ["version: 1", "defaults:", "  device: cpu", "  dtype: fp32", "targets:"]
    for i in range(count):
        lines += [f"  t{i:03d}:", "    from: ./kernels.py:scale", f"    shapes: [{64 + i}x256]",
                  "    extra: [w:256]", "    atol: 1.0e-5"]
    (root / "hotkernel.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ws = Workspace(root)
    manifest = load_manifest(ws.manifest)
    lock: dict = {"targets": {}, "records": {}}
    (root / "results").mkdir()
    protocol = current_protocol()
    for name in manifest.targets:
        context = resolved_target(manifest, name)
        render_target(ws, name, context)
        record = root / "results" / name / "20260101T000000Z.json"
        record.parent.mkdir(parents=True)
        synthetic = VerifyResult(  # a made-up result: plan reads the record's presence and index entry only
            verdict="inconclusive", reason="benchmark: synthetic", n=3, rounds_completed=3, target=name,
            device="cpu", device_kind="cpu", protocol=protocol,
            baseline=SideSummary(script=f"targets/{name}/baseline.py", stats=sample_stats([1.0, 1.0, 1.0])),
            candidate=SideSummary(script=f"targets/{name}/candidate.py", stats=sample_stats([1.0, 1.0, 1.0])))
        rec = Record(target=name, created_at="2026-01-01T00:00:00Z", who="benchmark (synthetic record)",
                     note="synthetic", contract=protocol, result=synthetic,
                     provenance=Provenance(device="cpu", device_kind="cpu", hotkernel="benchmark"))
        record.write_text(json.dumps(rec.model_dump(mode="json"), indent=2, sort_keys=True) + "\n", encoding="utf-8")
        lock["records"][record.relative_to(root).as_posix()] = sha256_file(record)
        lock["targets"][name] = {"cpu": {
            "manifest": manifest_fingerprint(manifest, name),
            "baseline_sha256": expected_baseline_sha256(context),
            "candidate_sha256": sha256_file(ws.target_dir(name) / "candidate.py"),
            "contract_sha256": contract_sha256(), "device": "cpu",
            "sources_sha256": sources_digest(ws, context),
            "record": record.relative_to(root).as_posix(), "verdict": "inconclusive", "protocol": protocol,
        }}
    write_lock(ws, lock)
    for name in list(manifest.targets)[:3]:  # a few out of date, as in real life
        with open(ws.target_dir(name) / "candidate.py", "a", encoding="utf-8") as handle:
            handle.write("\n# edited\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    from hotkernel.reconcile.plan import plan
    from hotkernel.workspace.paths import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        build_workspace(root, args.targets)
        ws = Workspace(root)
        timings = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            result = plan(ws, gpu_name=None)
            timings.append(time.perf_counter() - start)
        assert len(result.items) == 3 and len(result.up_to_date) == args.targets - 3, result
        env = {**os.environ, "HOTKERNEL_WORKSPACE": str(root)}
        start = time.perf_counter()
        cli = subprocess.run([sys.executable, "-m", "hotkernel", "plan", "--json"], env=env, cwd=root,
                             capture_output=True, text=True, timeout=120)
        cli_s = time.perf_counter() - start
        assert cli.returncode == 0, cli.stderr
        assert len(json.loads(cli.stdout)["items"]) == 3
    median = statistics.median(timings)
    print(json.dumps({
        "targets": args.targets, "plan_median_s": round(median, 4), "plan_min_s": round(min(timings), 4),
        "plan_first_s": round(timings[0], 4), "cli_plan_s": round(cli_s, 4), "goal_s": GOAL_S,
    }))
    return 0 if median < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
