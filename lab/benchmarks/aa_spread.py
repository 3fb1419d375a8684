"""The spread of A/A point estimates in ``cpu_aa_rate.py`` outputs: verdict counts, sd and interquartile range.

python lab/benchmarks/aa_spread.py FILE.jsonl [FILE.jsonl ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def main(paths: list[str]) -> None:
    for path in paths:
        rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.startswith('{"kind"')]
        points = [row["point"] for row in rows if row.get("point") is not None]
        q1, _, q3 = statistics.quantiles(points, n=4)
        verdicts = {v: sum(row["verdict"] == v for row in rows) for v in ("faster", "slower", "inconclusive")}
        print(
            f"{Path(path).name}: {len(rows)} verifies {verdicts}, sd {statistics.stdev(points):.4f}, IQR {q3 - q1:.4f}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
