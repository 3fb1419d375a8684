"""Where one run's time and CPU go on a CPU target: the test suite's small rms target (tests/adversarial/workspace.py)
run N times through the contract with one judge, each run's wall time, the CPU time of its reaped children (the
worker, its pre-start excluded: one worker per run here) and its phases (``phases_s``: worker, judge and their steps).
Since workers are forked from the fork server (a2bbfeb) a worker is the server's child, not this process's, so
``worker_cpu_s`` reads 0.00 there.

Usage: python lab/benchmarks/run_phases_cpu.py [N] > lab/benchmarks/evidence/performance/run_phases_cpu_<date>.txt
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

from hotkernel.run import render  # noqa: E402

SHOWN = ("worker", "worker_import_torch", "worker_job", "job_shapes", "shape0_timer", "judge", "judge_checks")


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(runs: int) -> None:
    hk = render.contract_module()
    ws, _ = make_workspace(Path(tempfile.mkdtemp(prefix="hk_run_phases_")) / "ws")
    contract = str(render.contract_path())
    judge = hk.Judge(python(), contract)
    try:
        for index in range(runs):
            started, cpu = time.monotonic(), children_cpu_s()
            result = hk.orchestrate(
                str(ws.target_dir(TARGET) / "candidate.py"), python=python(), contract=contract, judge=judge
            )
            wall, used = time.monotonic() - started, children_cpu_s() - cpu
            phases = result.get("phases_s") or {}
            cells = " ".join(f"{name}={phases.get(name, 0.0):.3f}" for name in SHOWN)
            print(f"run {index}: {result['status']} wall_s={wall:.2f} worker_cpu_s={used:.2f} {cells}")
            print("  " + json.dumps(phases, sort_keys=True))
    finally:
        judge.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
