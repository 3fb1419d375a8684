"""Record sizes before and after a commit that rewrote records (``hotkernel leaderboard --compact-records``), from
``git ls-tree -r -l`` of the commit's parent and of the commit: how many changed, their bytes, the median record.

Usage: python lab/benchmarks/record_sizes.py COMMIT
"""

from __future__ import annotations

import statistics
import subprocess
import sys


def sizes(rev: str) -> dict[str, int]:
    out = subprocess.run(["git", "ls-tree", "-r", "-l", rev, "results"], capture_output=True, text=True, check=True)
    return {line.split("\t")[1]: int(line.split()[3]) for line in out.stdout.splitlines()}


def main(commit: str) -> None:
    before, after = sizes(f"{commit}^"), sizes(commit)
    changed = sorted(p for p in before if p in after and before[p] != after[p])
    print(f"$ python lab/benchmarks/record_sizes.py {commit}")
    print(f"records rewritten: {len(changed)}")
    print(f"bytes: {sum(before[p] for p in changed):,} -> {sum(after[p] for p in changed):,}")
    print(f"median record: {statistics.median(before[p] for p in changed):,} -> ", end="")
    print(f"{statistics.median(after[p] for p in changed):,} bytes")
    print(f"range after: {min(after[p] for p in changed):,}-{max(after[p] for p in changed):,} bytes")
    print(f"results/ tracked bytes: {sum(before.values()):,} -> {sum(after.values()):,} ({len(after)} files)")
    print(f"median of every record after: {statistics.median(after.values()):,} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
