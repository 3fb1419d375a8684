"""Does a CPU lane that starts the compile-warm fork server with its first job take the warm-up off the path of a
later CPU ``torch.compile`` competitor? On this machine's CPU, no GPU needed.

One workspace per sync (a CPU target at 256x1024 fp32 with ``competitors: [compile]``), each synced from scratch
through one CPU ``ProcessLane`` (as a default sync's CPU lane), alternately with the warm-up started ahead
(``ProcessLane.warm_ahead``, the default) and without (``warm_ahead`` a no-op). Per sync: the wall time, each item's
seconds, and the competitor record's first run's wall time (the run that waits for a warm-up still going). Writes
OUT/warm_ahead_cpu.json and prints one line a sync.

Usage (repo root, venv with torch): python lab/benchmarks/warm_ahead_cpu.py OUT [PAIRS=2] [ROUNDS=3]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

from hotkernel.reconcile.executor import LaneExecutor, ProcessLane
from hotkernel.reconcile.sync import sync
from hotkernel.workspace.paths import Workspace

KERNEL = "import torch\n\n\ndef f(x):\n    return torch.relu(x) * 2.0 + 1.0\n"
MANIFEST = """\
version: 1
defaults: {device: cpu, dtype: fp32}
targets:
  t:
    from: ./k.py:f
    shapes: [256x1024]
    competitors: [compile]
"""


class PlainLane(ProcessLane):
    """A CPU lane that never starts the compile warm-up ahead (as before c9d8d8f)."""

    def warm_ahead(self, jobs):  # noqa: ANN001, ARG002 - the same signature, doing nothing
        self.compile_ahead = False


def first_run_wall(ws: Workspace, record: str | None) -> float | None:
    if not record:
        return None
    runs = json.loads((ws.root / record).read_text())["result"]["runs"]
    wall = runs["rows"][0][-1] if runs.get("rows") else None  # rows: [role, index, status, reason, ms, wall_s]
    return float(wall) if wall is not None else None


def one(kind: str, rounds: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix=f"hk_warm_{kind}_"))
    (root / "k.py").write_text(KERNEL, encoding="utf-8")
    (root / "hotkernel.yaml").write_text(MANIFEST, encoding="utf-8")
    ws = Workspace(root)
    lane = (ProcessLane if kind == "ahead" else PlainLane)(ws, "cpu", frozenset({"cpu"}))
    started = time.monotonic()
    report = sync(ws, n=rounds, executor=LaneExecutor([lane]), gpu_name=None, from_scratch=True)
    wall = time.monotonic() - started
    items = [
        {"name": i.name, "status": i.status, "verdict": i.verdict, "seconds": i.seconds, "record": i.record}
        for i in report.items
    ]
    rival = next((i for i in report.items if " competitor " in i.name), None)
    return {
        "kind": kind,
        "wall_s": round(wall, 1),
        "items": items,
        "competitor_first_run_s": first_run_wall(ws, rival.record if rival else None),
    }


def main(out: Path, pairs: int, rounds: int) -> int:
    os.environ.setdefault("HOTKERNEL_PYTHON", sys.executable)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for _ in range(pairs):
        for kind in ("ahead", "plain"):
            row = one(kind, rounds)
            rows.append(row)
            seconds = ", ".join(f"{i['name']} {i['seconds']} s {i['verdict']}" for i in row["items"])
            print(f"{kind}: sync {row['wall_s']} s; competitor's first run {row['competitor_first_run_s']} s; "
                  f"{seconds}", flush=True)
    header = {"cpus": os.cpu_count(), "load": os.getloadavg(), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    (out / "warm_ahead_cpu.json").write_text(json.dumps({**header, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: warm_ahead_cpu.py OUT [PAIRS] [ROUNDS]")
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2,
                  int(sys.argv[3]) if len(sys.argv) > 3 else 3))
