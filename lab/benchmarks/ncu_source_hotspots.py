"""The SASS instructions where a kernel's warps were sampled most, from ncu's source page.

    python lab/benchmarks/ncu_source_hotspots.py SOURCE_CSV[.gz] KERNEL_SUBSTRING [--top N] [--all]

SOURCE_CSV is `ncu --import REPORT --page source --csv --print-source sass` (what
`lab/benchmarks/device/ncu_stalls.sh` writes as `source.csv`): one block per profiled launch. The launches whose
kernel name contains KERNEL_SUBSTRING are summed instruction by instruction (same code, same addresses), and the
N instructions with the most warp-state samples are printed with their execution count and their four largest
stall reasons; `--all` prints every instruction in address order instead (for reading a loop in context). The
last line gives each stall reason's share of all samples.
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import io
import sys
from pathlib import Path

from hotkernel.insight.top_kernels import number

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def _number(text: str) -> float:
    """A cell of the source page as a count (ncu writes ``1,234``; an empty cell is 0)."""
    return number(text) or 0.0


def launches(text: str) -> list[tuple[str, list[dict[str, str]]]]:
    """(kernel name, rows) per launch block of a `--page source --csv` export."""
    blocks = []
    for block in text.split('"Kernel Name",')[1:]:
        name_line, _, table = block.partition("\n")
        name = next(csv.reader([name_line]))[0]
        rows = list(csv.DictReader(io.StringIO(table)))
        blocks.append((name, [row for row in rows if row.get("Address")]))
    return blocks


def summed(blocks: list[tuple[str, list[dict[str, str]]]], kernel: str) -> list[dict[str, object]]:
    """Per instruction of the matching launches: address, source, samples, executions and stall-reason samples."""
    matching = [rows for name, rows in blocks if kernel in name]
    if not matching:
        names = sorted({name[:60] for name, _ in blocks})
        raise SystemExit(f"ncu_source_hotspots: no launch of a kernel containing {kernel!r}; kernels: {names}")
    total: list[dict[str, object]] = []
    for rows in matching:
        if len(rows) != len(matching[0]):
            raise SystemExit("ncu_source_hotspots: the matching launches are different code; pass a longer name")
    for index, row in enumerate(matching[0]):
        stalls: collections.Counter[str] = collections.Counter()
        samples = executed = 0.0
        for rows in matching:
            other = rows[index]
            samples += _number(other.get(SAMPLES, "0"))
            executed += _number(other.get(EXECUTED, "0"))
            for key, value in other.items():
                if key.startswith("stall_") and "Not Issued" not in key:
                    stalls[key.removeprefix("stall_")] += _number(value)
        total.append({"address": row["Address"], "source": row["Source"].strip(), "samples": samples,
                      "executed": executed, "stalls": stalls})
    return total


def line(entry: dict[str, object]) -> str:
    stalls = entry["stalls"]
    assert isinstance(stalls, collections.Counter)
    top = " ".join(f"{reason}={int(count)}" for reason, count in stalls.most_common(4) if count)
    return (f"{entry['address']} {int(entry['samples']):5d} ex={int(entry['executed']):8d} "
            f"{str(entry['source'])[:64]:64s} {top}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source_csv", type=Path)
    parser.add_argument("kernel")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--all", action="store_true")
    args = parser.parse_args(argv)
    raw = args.source_csv.read_bytes()
    text = (gzip.decompress(raw) if args.source_csv.suffix == ".gz" else raw).decode()
    entries = summed(launches(text), args.kernel)
    chosen = entries if args.all else sorted(entries, key=lambda e: -float(e["samples"]))[: args.top]  # type: ignore[arg-type]
    for entry in chosen:
        print(line(entry))
    all_samples = sum(float(e["samples"]) for e in entries)  # type: ignore[arg-type]
    reasons: collections.Counter[str] = collections.Counter()
    for entry in entries:
        reasons.update(entry["stalls"])  # type: ignore[arg-type]
    shares = ", ".join(f"{reason} {100 * count / all_samples:.1f}%" for reason, count in reasons.most_common(8))
    print(f"# {int(all_samples)} samples over {len(entries)} instructions: {shares}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
