"""The figures lab/speedrun.md quotes from the three decode attention experiments of 2026-12-04, recomputed from
their raw files (lab/benchmarks/evidence/speedrun/decode_*).

    python lab/benchmarks/decode_tables.py placement lab/benchmarks/evidence/speedrun/decode_placement_1829
    python lab/benchmarks/decode_tables.py drift lab/benchmarks/evidence/speedrun/decode_drift_1838
    python lab/benchmarks/decode_tables.py small_pad lab/benchmarks/evidence/speedrun/decode_small_pad_1842
    python lab/benchmarks/decode_tables.py contract lab/benchmarks/evidence/speedrun/decode_small_pad_1842

A folder stands for the experiment's own `<mode's script>.jsonl` in it; a file is read as it is.

`placement` (lab/benchmarks/device/decode_placement.py): both sides' ranges over the placements of one process, the
candidate's trend with the placement's index, what a repeated pad gave, and cuDNN timed first on a placement against
right after the candidate. `drift` (decode_drift.py): per phase the ranges, the baseline-minus-candidate difference
and the ratio of medians; then cuDNN per placement after the candidate, in its own second capture, and first.
`small_pad` (decode_small_pad.py): the ranges over the small block's sizes, how well a size's two timings agree, and
the per-size speedup. `contract`: the contract's verifies on the same card against that bare graph, per side.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _span(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def placement_lines(path: Path) -> str:
    rows = _rows(path)
    candidate = [r["candidate_us"] for r in rows]
    baseline = [r["baseline_us"] for r in rows]
    repeats = [(rows[r["repeat_of"]], r) for r in rows if r["repeat_of"] is not None]
    first = [r["baseline_us"] for r in rows if not r["candidate_first"]]
    second = [r["baseline_us"] for r in rows if r["candidate_first"]]
    quarter = len(rows) // 4
    return "\n".join([
        f"{len(rows)} placements: candidate {_span(candidate)} us, cuDNN {_span(baseline)} us",
        f"candidate against the placement's index: correlation "
        f"{statistics.correlation(candidate, list(range(len(rows)))):+.2f}; cuDNN "
        f"{statistics.correlation(baseline, list(range(len(rows)))):+.2f}; candidate median of the first "
        f"{quarter} {statistics.median(candidate[:quarter]):.2f} us, of the last {quarter} "
        f"{statistics.median(candidate[-quarter:]):.2f} us",
        "repeated pads (MiB: candidate us then, now): " + ", ".join(
            f"{new['pad_mib']}: {old['candidate_us']:.2f}, {new['candidate_us']:.2f}" for old, new in repeats),
        f"cuDNN timed first on a placement: median {statistics.median(first):.2f} us; right after the candidate: "
        f"{statistics.median(second):.2f} us"])


def drift_lines(path: Path) -> str:
    rows = _rows(path)
    lines = []
    for phase in ("steady", "again", "fresh"):
        seconds = [r for r in rows if r["phase"] == phase]
        candidate = [r["candidate_us"] for r in seconds]
        baseline = [r["baseline_us"] for r in seconds]
        gap = [b - c for b, c in zip(baseline, candidate, strict=True)]
        lines.append(f"{phase} ({len(seconds)} s): candidate {_span(candidate)} us, cuDNN {_span(baseline)} us, "
                     f"cuDNN - candidate {_span(gap)} us, ratio of medians "
                     f"{statistics.median(baseline) / statistics.median(candidate):.4f}")
    placements = [r for r in rows if r["phase"] == "first"]
    after = [r["baseline_us"][0] for r in placements if r["first"] == "candidate"]
    own_second = [r["baseline_us"][1] for r in placements if r["first"] == "candidate"]
    alone_first = [t for r in placements if r["first"] == "baseline" for t in r["baseline_us"]]
    candidate = [t for r in placements for t in r["candidate_us"]]
    lines.append(f"{len(placements)} placements: cuDNN right after the candidate {_span(after)} us, in its own second "
                 f"capture {_span(own_second)} us, first on the placement {_span(alone_first)} us; candidate "
                 f"{_span(candidate)} us")
    return "\n".join(lines)


def small_pad_lines(path: Path) -> str:
    rows = _rows(path)
    times: dict[tuple[int, str], list[float]] = {}
    for row in rows:
        times.setdefault((row["small_bytes"], row["function"]), []).append(row["us"])
    sizes = sorted({row["small_bytes"] for row in rows})
    lines = []
    for name in ("candidate", "baseline"):
        first, second = ([times[(size, name)][i] for size in sizes] for i in (0, 1))
        lines.append(f"{name}: {_span(first + second)} us over {len(sizes)} sizes, median "
                     f"{statistics.median(first + second):.2f} us; a size's two timings correlate "
                     f"{statistics.correlation(first, second):+.2f}")
    ratios = [statistics.fmean(times[(s, "baseline")]) / statistics.fmean(times[(s, "candidate")]) for s in sizes]
    lines.append(f"speedup per size {min(ratios):.4f}-{max(ratios):.4f}x, median {statistics.median(ratios):.4f}x")
    return "\n".join(lines)


def contract_lines(folder: Path) -> str:
    """The contract's verifies in FOLDER (``verify_*.json``) against the bare graph of ``decode_small_pad.jsonl``
    on the same card: each side's median time in the verifies' rounds, in the bare graph, and the difference."""
    rounds: dict[str, list[float]] = {"candidate": [], "baseline": []}
    for path in sorted(folder.glob("verify_*.json")):
        for run in json.loads(path.read_text())["runs"]:
            rounds[run["role"]].append(1e3 * run["data"]["ms"])
    bare = _rows(folder / "decode_small_pad.jsonl")
    lines = []
    for name, times in rounds.items():
        contract = statistics.median(times)
        graph = statistics.median(r["us"] for r in bare if r["function"] == name)
        lines.append(f"{name}: contract rounds {_span(times)} us (median {contract:.2f}), bare graph median "
                     f"{graph:.2f} us, {contract - graph:+.2f} us in the contract")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    modes = {"placement": placement_lines, "drift": drift_lines, "small_pad": small_pad_lines}
    if argv[:1] == ["contract"] and len(argv) == 2:
        print(contract_lines(Path(argv[1])))
        return
    if len(argv) != 2 or argv[0] not in modes:
        sys.exit("usage: python lab/benchmarks/decode_tables.py placement|drift|small_pad FOLDER|FILE.jsonl "
                 "| contract FOLDER")
    path = Path(argv[1])
    print(modes[argv[0]](path / f"decode_{argv[0]}.jsonl" if path.is_dir() else path))


if __name__ == "__main__":
    main(sys.argv[1:])
