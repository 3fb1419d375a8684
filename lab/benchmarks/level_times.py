"""Per-verify times of a KernelBench level synced on a GPU, from the records a `level_sync.sh` call brought back.

Usage: python lab/benchmarks/level_times.py RECORDS_TAR_GZ...

A verify's time here is the sum of its runs' wall times (each run: worker, judge and hand-over; what the
verify adds around them is a fraction of a second), so it is available from the records alone when a call's
sync report did not come back. Prints one line per target (rounds, stop, bytes, seconds) and the mean.
"""

from __future__ import annotations

import json
import sys
import tarfile

from hotkernel.store.compact import decode
from hotkernel.store.models import Record


def rows(path: str) -> list[tuple[str, str, int, str, float, float]]:
    found = []
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            if not (member.isfile() and member.name.startswith("results/") and member.name.endswith(".json")):
                continue
            record = Record.model_validate(decode(json.load(tar.extractfile(member))))  # type: ignore[arg-type]
            result = record.result
            decision = result.decision or {}
            found.append(
                (
                    record.target,
                    str(result.verdict),
                    int(decision.get("n") or 0),
                    str(decision.get("stopped")),
                    float((result.contract or {}).get("bytes") or 0) / 1e9,
                    float(sum(run.wall_s or 0.0 for run in result.runs)),
                )
            )
    return found


def main(paths: list[str]) -> None:
    every = sorted(row for path in paths for row in rows(path))
    for target, verdict, n, stopped, gb, seconds in every:
        print(f"{target:66s} {verdict:12s} rounds={n} {stopped:14s} {gb:6.2f} GB {seconds:6.1f} s")
    times = [row[-1] for row in every]
    if times:
        print(f"{len(times)} verifies, mean {sum(times) / len(times):.1f} s, total {sum(times):.0f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
