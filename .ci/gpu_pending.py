"""Reads `hotkernel plan --json` on stdin. Exit 0 when everything that is out of date is a cuda target (or a cuda
target's competitor) out of date only because the contract changed: its re-record needs a GPU, which CI has not.
Anything else out of date (a CPU target, a manifest or candidate change, a problem in results/) exits 2, naming it.

CI runs this only when `hotkernel sync --check` said "out of date" (exit 2), so a contract change can land before
the GPU re-record that it makes necessary, while every other kind of drift still fails the gate."""

import json
import sys

GPU_ONLY_REASON = {"contract changed"}


def main() -> int:
    plan = json.load(sys.stdin)
    pending, failing = [], []
    for kind, items in (("target", plan.get("items", [])), ("competitor", plan.get("competitors", []))):
        for item in items:
            name = item.get("name") or item.get("target")
            label = f"{kind} {name}" + (f" ({item['competitor']})" if item.get("competitor") else "")
            reasons = set(item.get("reasons") or [item.get("reason", "?")])
            if item.get("device_kind") == "cuda" and reasons <= GPU_ONLY_REASON:
                pending.append(label)
            else:
                failing.append(f"{label}: {', '.join(sorted(reasons))} (device {item.get('device_kind')})")
    failing += [f"results/: {problem}" for problem in plan.get("problems", [])]
    for label in pending:
        print(f"pending a GPU re-record (contract changed): {label}")
    for line in failing:
        print(f"out of date: {line}", file=sys.stderr)
    return 2 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
