"""lab/benchmarks/ncu_source_hotspots.py on ncu's source page as captured on the H200
(lab/benchmarks/evidence/speedrun/ncu_source_20261202/source.csv.gz): launches of one kernel are summed instruction by
instruction, and the figures its README quotes come out of it."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "lab" / "benchmarks"))
import ncu_source_hotspots  # noqa: E402

CAPTURE = ROOT / "lab" / "benchmarks" / "evidence" / "speedrun" / "ncu_source_20261202" / "source.csv.gz"


def _blocks() -> list[tuple[str, list[dict[str, str]]]]:
    return ncu_source_hotspots.launches(gzip.decompress(CAPTURE.read_bytes()).decode())


def test_every_launch_is_a_block_of_sass_rows() -> None:
    blocks = _blocks()
    names = [name for name, _ in blocks]
    assert sum("tinygemm" in name for name in names) == 6  # one block per profiled launch
    assert names.count("_int4_gemv_mma_kernel") == 3
    for _, rows in blocks:
        assert rows and all(row["Address"].startswith("0x") for row in rows)


def test_the_kernel_launches_are_summed_per_instruction() -> None:
    blocks = _blocks()
    entries = ncu_source_hotspots.summed(blocks, "_int4_gemv_mma_kernel")
    single = [rows for name, rows in blocks if name == "_int4_gemv_mma_kernel"]
    assert len(entries) == len(single[0]) == 1032
    first = sum(ncu_source_hotspots._number(row[ncu_source_hotspots.SAMPLES]) for row in single[0])
    total = sum(float(entry["samples"]) for entry in entries)
    assert first < total == 4395  # three launches, as the README's listing says
    top = max(entries, key=lambda entry: float(entry["samples"]))
    assert top["source"] == "IMAD.U32 R22, R62, 0x10000, RZ" and top["samples"] == 438
    assert top["stalls"]["long_sb"] == 435


def test_an_unknown_kernel_names_the_ones_there(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit, match="no launch of a kernel containing 'nope'.*_int4_gemv_mma_kernel"):
        ncu_source_hotspots.summed(_blocks(), "nope")
    assert ncu_source_hotspots.main([str(CAPTURE), "_int4_gemv_mma_kernel", "--top", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[-1].startswith("# 4395 samples over 1032 instructions: long_sb 27.4%")
