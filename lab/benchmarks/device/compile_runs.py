"""Where one run of a `compile` competitor spends its time: the competitor script run directly (no hotkernel: its
own `python targets/T/competitor_compile.py`, one worker run), RUNS times in a row, each a new process on one
inductor cache that starts empty, with dynamo's recompile and graph-break logs on (TORCH_LOGS). Each run's row
holds its wall time, the worker's phase times (`phases_s` of the script's JSON line: import of the script, making
the inputs, the first calls, the timer) and the tail of what it wrote to stderr.

Usage (repo root): python3 lab/benchmarks/device/compile_runs.py OUT_DIR [--target rmsnorm] [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--target", default="rmsnorm")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ)
    env["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="hk_compile_runs_")
    env.update(TORCHINDUCTOR_FX_GRAPH_CACHE="1", TORCHINDUCTOR_AUTOGRAD_CACHE="1", TORCH_LOGS="recompiles,graph_breaks")
    with open(os.path.join(args.out, f"compile_runs_{args.target}.jsonl"), "w") as log:
        for i in range(1, args.runs + 1):
            started = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, f"targets/{args.target}/competitor_compile.py"],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            row = {"target": args.target, "run": i, "rc": proc.returncode,
                   "wall_s": round(time.perf_counter() - started, 3)}  # fmt: skip
            lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
            if lines:
                line = json.loads(lines[-1])
                row.update(ok=line.get("ok"), ms=line.get("ms"), run_wall_s=line.get("wall_s"))
                row["phases_s"] = line.get("phases_s")
            row["stderr_tail"] = proc.stderr[-3000:]
            print(json.dumps(row), flush=True)
            log.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
