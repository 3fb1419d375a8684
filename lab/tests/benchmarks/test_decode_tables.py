"""lab/benchmarks/decode_tables.py on the committed H200 evidence: the decode attention figures lab/speedrun.md quotes
("What moves decode attention's time") come out of the raw files."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "lab" / "benchmarks"))
import decode_tables  # noqa: E402

EVIDENCE = ROOT / "lab" / "benchmarks" / "evidence" / "speedrun"


def test_placement_shows_the_candidate_drifting_and_cudnn_faster_after_it() -> None:
    lines = decode_tables.placement_lines(EVIDENCE / "decode_placement_1829" / "decode_placement.jsonl").splitlines()
    assert lines[0] == "112 placements: candidate 36.81-37.86 us, cuDNN 37.14-38.62 us"
    assert lines[1].startswith("candidate against the placement's index: correlation +0.46; cuDNN +0.07")
    assert "1004: 37.07, 37.86" in lines[2]  # the same pad, the same addresses, another time
    assert lines[3] == "cuDNN timed first on a placement: median 38.15 us; right after the candidate: 37.41 us"


def test_drift_shows_both_sides_moving_together_and_cudnn_following_its_graph() -> None:
    lines = decode_tables.drift_lines(EVIDENCE / "decode_drift_1838" / "decode_drift.jsonl").splitlines()
    assert lines[0] == ("steady (60 s): candidate 36.15-36.68 us, cuDNN 36.63-37.16 us, "
                        "cuDNN - candidate 0.43-0.50 us, ratio of medians 1.0127")
    assert lines[1].startswith("again (20 s): candidate 36.18-36.51 us")
    assert lines[3] == ("16 placements: cuDNN right after the candidate 36.51-36.81 us, in its own second capture "
                        "37.21-37.62 us, first on the placement 37.22-37.61 us; candidate 36.16-36.47 us")


def test_small_pad_puts_the_pair_level_with_cudnn_in_a_bare_graph() -> None:
    lines = decode_tables.small_pad_lines(EVIDENCE / "decode_small_pad_1842" / "decode_small_pad.jsonl").splitlines()
    assert lines[0] == ("candidate: 36.65-36.99 us over 32 sizes, median 36.79 us; a size's two timings correlate "
                        "+0.57")
    assert lines[2] == "speedup per size 1.0014-1.0087x, median 1.0054x"
    after = decode_tables.small_pad_lines(EVIDENCE / "decode_small_pad_1842" / "decode_small_pad_after.jsonl")
    assert after.endswith("median 1.0031x")


def test_contract_puts_more_on_cudnn_than_on_the_pair_against_the_bare_graph() -> None:
    """lab/speedrun.md: on GPU-12d4823c cuDNN took about 1.7 us more per call in the contract's rounds than in the
    bare graph, the pair about 0.8 us more."""
    lines = decode_tables.contract_lines(EVIDENCE / "decode_small_pad_1842").splitlines()
    assert lines[0].endswith("bare graph median 36.79 us, +0.78 us in the contract"), lines[0]
    assert lines[1].endswith("bare graph median 36.98 us, +1.69 us in the contract"), lines[1]
