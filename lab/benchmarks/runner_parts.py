"""The tool-side checks around every run (``run/runner.run_script``), each timed alone in a workspace: the
integrity check, the target's source hashes, the workspace hashes, NVML's process list, the idle check and a read
of the manifest (mean of 5 calls each, seconds), and how many files the workspace hashes cover.

Usage (from the workspace, e.g. a KernelBench level imported by level_sync.sh):
    python lab/benchmarks/runner_parts.py [TARGET]   (default: kb1_001_square_matrix_multiplication)

On 2026-12-07 the H200 call 3 ran these lines inline in `.hotkernel/tmp/l1` (lab/benchmarks/evidence/
h200_round_20261207/README.txt); a run calls the first three twice and the idle check once.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from hotkernel._util.nvml import foreign_compute_pids
from hotkernel.run import runner
from hotkernel.workspace.paths import Workspace


def main() -> None:
    ws = Workspace(Path(".").resolve())
    name = sys.argv[1] if len(sys.argv) > 1 else "kb1_001_square_matrix_multiplication"
    resolved = runner.resolved_from_manifest(ws, name)
    parts = [
        ("integrity", lambda: runner.check_workspace_integrity(ws, name, resolved)),
        ("sources", lambda: runner.source_hashes(ws, resolved)),
        ("ws_hashes", lambda: runner.workspace_hashes(ws)),
        ("foreign", lambda: foreign_compute_pids({1})),
        ("idle", lambda: runner.device_idle_problem(set())),
        ("manifest", lambda: runner.resolved_from_manifest(ws, name)),
    ]
    for label, call in parts:
        started = time.perf_counter()
        for _ in range(5):
            call()
        print(label, round((time.perf_counter() - started) / 5, 4))
    print("files", len(runner.workspace_files(ws)))


if __name__ == "__main__":
    main()
