"""hotkernel's own costs, the three numbers of docs/performance.md, in one command.

    python lab/benchmarks/tool_costs.py [--out lab/benchmarks/evidence/performance/tool_costs_<host>.json]

1. `plan` on a 100-target manifest (CPU; goal <= 0.5 s): runs lab/benchmarks/plan_100_targets.py.
2. MCP server start against the SDK's bare import (goal: at most 0.3 s added): runs lab/benchmarks/server_startup.py.
3. `verify` at n=7 on rmsnorm on the H200 (goal <= 20 s, and within the 60 s MCP tool timeout): on a machine
   with CUDA it times `hotkernel verify targets/rmsnorm/baseline.py targets/rmsnorm/candidate.py -n 7`; without
   one it reports the verify wall times the H200 speedrun logged (lab/benchmarks/evidence/speedrun/*/log/*/steps.txt).
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str], timeout: float = 900) -> tuple[float, str]:
    t0 = time.monotonic()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    return time.monotonic() - t0, proc.stdout + proc.stderr


def logged_verify_walls() -> list[dict]:
    """Every `hotkernel verify ... -n 7` wall time in the committed speedrun logs."""
    rows = []
    for steps in sorted(ROOT.glob("lab/benchmarks/evidence/speedrun/*/log/*/steps.txt")):
        lines = steps.read_text().splitlines()
        for command, result in zip(lines, lines[1:], strict=False):
            if command.startswith("$ hotkernel verify") and "-n 7" in command:
                wall = re.search(r"wall=([0-9.]+)s", result)
                if wall:
                    rows.append({"log": str(steps.relative_to(ROOT)), "target": steps.parent.name,
                                 "wall_s": float(wall.group(1))})
    return rows


def cuda_available() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    return probe.stdout.strip() == "True"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="JSON path for the numbers (default: print only)")
    args = parser.parse_args()
    report: dict = {"host": platform.node(), "cpus": platform.processor() or platform.machine(),
                    "python": sys.version.split()[0], "date": time.strftime("%Y-%m-%d")}
    _, plan_out = run([sys.executable, "lab/benchmarks/plan_100_targets.py"])
    report["plan_100_targets"] = plan_out.strip().splitlines()
    _, startup_out = run([sys.executable, "lab/benchmarks/server_startup.py"])
    report["server_startup"] = startup_out.strip().splitlines()
    if cuda_available():
        wall, out = run([sys.executable, "-m", "hotkernel", "verify", "targets/rmsnorm/baseline.py",
                         "targets/rmsnorm/candidate.py", "-n", "7", "--json"])
        report["verify_rmsnorm_n7_wall_s"] = round(wall, 1)
    report["verify_n7_logged_on_h200"] = logged_verify_walls()
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
