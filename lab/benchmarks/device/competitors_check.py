"""torch.compile competitors under the contract's CUDA-graph timer, on one GPU: does each mode verify and record?

Builds a one-target workspace under OUT/ws (softmax 4096x8192 bf16, the example target's shape), then adds the
competitors one at a time (compile, compile-reduce-overhead, compile-max-autotune: reduce-overhead records its
own CUDA graphs, which must work inside the timer's capture) and runs ``hotkernel.reconcile.sync.sync`` of the
target with 3 rounds each (the target's own verify the first time, then the competitor just added), while the
budget lasts. Writes
OUT/competitors.json (every SyncItem), OUT/ws/LEADERBOARD.md and the roofline chart; prints one line each.

Usage (device, repo root, hotkernel importable as in h200_sync.sh):
    python3 lab/benchmarks/device/competitors_check.py OUT [BUDGET_S=180] [MODES=compile,compile-reduce-overhead,...]
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from hotkernel.reconcile.sync import sync
from hotkernel.workspace.paths import Workspace

KERNEL = "import torch\n\n\ndef softmax(x, *, dim):\n    return torch.softmax(x, dim=dim)\n"
MANIFEST = """\
version: 1
defaults: {{device: cuda, dtype: bf16, timeout_s: 300}}
targets:
  softmax:
    from: ./k.py:softmax
    shapes: [4096x8192]
    kwargs: {{dim: -1}}
    flops: 167772160
    bytes: 134217728
    atol: 1.0e-5
    competitors: [{competitors}]
"""
ORDER = ("compile", "compile-reduce-overhead", "compile-max-autotune")
ROUNDS = 3


def main(out: Path, budget_s: float, order: tuple[str, ...] = ORDER) -> int:
    root = out / "ws"
    root.mkdir(parents=True, exist_ok=True)
    (root / "k.py").write_text(KERNEL, encoding="utf-8")
    os.environ.setdefault("HOTKERNEL_PYTHON", sys.executable)
    ws = Workspace(root)
    started = time.monotonic()
    items: list[dict] = []
    for i, competitor in enumerate(order):
        if time.monotonic() - started > budget_s * (i / len(order)) + 30 and i > 0:
            print(f"{competitor}: skipped (budget {budget_s:.0f} s)", flush=True)
            continue
        (root / "hotkernel.yaml").write_text(MANIFEST.format(competitors=", ".join(order[:i + 1])), encoding="utf-8")
        t0 = time.monotonic()
        report = sync(ws, ["softmax"], n=ROUNDS, python=sys.executable, serial=True)
        for item in [i for i in report.items if " competitor " in i.name and i.status != "up to date"]:
            data = {**item.model_dump(mode="json"), "wall_s": round(time.monotonic() - t0, 1)}
            items.append(data)
            print(f"{item.name}: {item.status} {item.verdict} speedup={item.speedup} wall_s={data['wall_s']} "
                  f"{(item.reason or '')[:160]}", flush=True)
    (out / "competitors.json").write_text(json.dumps(items, indent=2) + "\n", encoding="utf-8")
    print(f"total wall_s={time.monotonic() - started:.0f}; board: {root / 'LEADERBOARD.md'}")
    return 0 if items and all(i["status"] == "recorded" for i in items) else 1


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: competitors_check.py OUT [BUDGET_S] [MODES]")
    sys.exit(main(Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 180.0,
                  tuple(sys.argv[3].split(",")) if len(sys.argv) > 3 else ORDER))
