"""Where every run of a sync spent its time, from the workspace's run store (``.hotkernel/runs/*.json``: each
verify result with every run's ``phases_s``, which records drop).

Usage: python lab/benchmarks/run_store_phases.py WORKSPACE|PHASES.jsonl.gz [--jsonl OUT.jsonl.gz] [--totals]

Prints, for the first run of each verify and for the later ones apart, the mean seconds of each layer of a run:
``runner`` (the tool side around the contract's run: hashes, the idle check, taking a worker), ``orchestrate``
(the contract's run outside its worker and judge: freeze, reap, hand-over), ``worker`` and ``judge``, then their
phases (``job_*``, ``shape0_*``, ``judge_*``), with the timed kernel time (``timed_kernel_s``) beside them.
``--jsonl``: one line per run (target, role, index, first, walls, phases, timed kernel seconds, bytes), gzipped;
such a file can be read back in place of the workspace. ``--totals``: the seconds of each layer and phase summed
over every run (what a whole level spent on it), then the same by the size of a set of inputs and outputs.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from pathlib import Path
from typing import Any

OWN = ("runner", "orchestrate", "timed_kernel_s")  # a run line's own numbers besides ``wall_s`` and ``phases``


def run_lines(workspace: Path) -> list[dict[str, Any]]:
    """One dict per run of every stored verify, in the order the verifies were saved."""
    lines = []
    for path in sorted((workspace / ".hotkernel" / "runs").glob("*.json")):
        stored = json.loads(path.read_text())
        if stored.get("kind") != "verify":
            continue
        result = stored["result"]
        for position, run in enumerate(result.get("runs") or []):
            data = run.get("data") or {}
            phases = data.get("phases_s") or {}
            if not phases:
                continue
            orchestrate_s = float(data.get("wall_s") or 0.0)
            lines.append(
                {
                    "run_id": stored.get("id"),
                    "target": result.get("target"),
                    "role": run.get("role"),
                    "index": run.get("index"),
                    "first": position == 0,
                    "status": run.get("status"),
                    "wall_s": run.get("wall_s"),
                    "runner": round(float(run.get("wall_s") or 0.0) - orchestrate_s, 3),
                    "orchestrate": round(
                        orchestrate_s - float(phases.get("worker", 0.0)) - float(phases.get("judge", 0.0)), 3
                    ),
                    "timed_kernel_s": round(
                        sum(s.get("timed_kernel_s") or 0.0 for s in data.get("per_shape") or []), 4
                    ),
                    "bytes": data.get("bytes"),
                    "phases": phases,
                }
            )
    return lines


def read_lines(source: Path) -> list[dict[str, Any]]:
    if source.is_dir():
        return run_lines(source)
    with gzip.open(source, "rt") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def totals(lines: list[dict[str, Any]]) -> list[str]:
    sums = dict.fromkeys(("wall_s", *OWN), 0.0)
    for line in lines:
        for name in ("wall_s", *OWN):
            sums[name] += float(line[name] or 0.0)
        for name, value in line["phases"].items():
            sums[name] = sums.get(name, 0.0) + float(value)
    out = [f"totals over {len(lines)} runs, seconds"]
    out += [f"  {name} {value:.1f}" for name, value in sorted(sums.items(), key=lambda item: -item[1])]
    out.append("per run by bytes of a set (GB), mean seconds: runs wall runner timer timed_kernel judge cuda_init")
    bins = ((0.0, 0.5), (0.5, 2.0), (2.0, 5.0), (5.0, 10.0), (10.0, float("inf")))
    for low, high in bins:
        chosen = [line for line in lines if line["status"] == "ok" and low <= (line["bytes"] or 0) / 1e9 < high]
        if chosen:
            columns = (
                lambda r: r["wall_s"],
                lambda r: r["runner"],
                lambda r: r["phases"].get("shape0_timer", 0.0),
                lambda r: r["timed_kernel_s"],
                lambda r: r["phases"].get("judge", 0.0),
                lambda r: r["phases"].get("job_cuda_init", 0.0),
            )
            means = " ".join(f"{statistics.mean(float(get(r)) for r in chosen):.3f}" for get in columns)
            out.append(f"  [{low:g}, {high:g}) {len(chosen)} {means}")
    return out


def table(lines: list[dict[str, Any]]) -> list[str]:
    out = []
    for first in (True, False):
        chosen = [line for line in lines if line["first"] is first and line["status"] == "ok"]
        if not chosen:
            continue
        out.append(f"{'first' if first else 'later'} runs of a verify: {len(chosen)} (ok), mean seconds")
        out.append(f"  wall_s {statistics.mean(line['wall_s'] for line in chosen):.3f}")
        for name in OWN:
            out.append(f"  {name} {statistics.mean(line[name] for line in chosen):.3f}")
        names = sorted({name for line in chosen for name in line["phases"]})
        for name in names:
            values = [float(line["phases"].get(name, 0.0)) for line in chosen]
            out.append(f"  {name} {statistics.mean(values):.3f} (median {statistics.median(values):.3f})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="a workspace, or a --jsonl file written before")
    parser.add_argument("--jsonl", type=Path, help="write one line per run here, gzipped")
    parser.add_argument("--totals", action="store_true", help="add the sums over every run")
    args = parser.parse_args()
    lines = read_lines(args.source)
    if args.jsonl:
        with gzip.open(args.jsonl, "wt") as handle:
            for line in lines:
                handle.write(json.dumps(line, sort_keys=True) + "\n")
    print("\n".join(table(lines) + (totals(lines) if args.totals else [])))


if __name__ == "__main__":
    main()
