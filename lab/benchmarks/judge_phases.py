"""Where each verify's time went: per target, the verify's rounds and wall time, and per role the mean seconds of
every run phase (``phases_s``: the worker's, ``job_*`` and ``shape0_*`` inside it, and the judge's ``judge_*``).

Usage: python lab/benchmarks/judge_phases.py VERIFY_JSON... (``hotkernel verify --json`` outputs; import.json and
other files without runs are skipped)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

SHOWN = ("worker", "judge", "job_shapes", "shape0_inputs", "shape0_correctness_pass", "shape0_timer")


def summary(path: Path) -> list[str]:
    try:
        report = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    runs = report.get("runs") if isinstance(report, dict) else None
    if not runs:
        return []
    walls = [float(r.get("wall_s") or 0.0) for r in runs]
    lines = [
        f"{report.get('target')}: {report.get('verdict')} rounds={report.get('rounds_completed')} "
        f"stopped={report.get('stopped')} runs={len(runs)} run_wall_s={sum(walls):.1f} "
        f"bytes={(report.get('contract') or {}).get('bytes')}"
    ]
    for role in ("baseline", "candidate"):
        phases = [(r.get("data") or {}).get("phases_s") or {} for r in runs if r.get("role") == role]
        if not phases:
            continue
        names = [n for n in SHOWN if any(n in p for p in phases)]
        names += sorted({n for p in phases for n in p if n.startswith("judge_")})
        cells = [f"{n}={statistics.mean(p.get(n, 0.0) for p in phases):.3f}" for n in names]
        lines.append(f"  {role} (mean of {len(phases)}): " + " ".join(cells))
    return lines


def main(paths: list[str]) -> None:
    for path in sorted(paths):
        for line in summary(Path(path)):
            print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
