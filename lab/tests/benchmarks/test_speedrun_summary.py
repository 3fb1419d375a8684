"""lab/benchmarks/speedrun_summary.py on the committed records: only candidates count (a torch.compile competitor is
not a kept kernel), and the kept column names a speedrun variant or says it cannot."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "lab" / "benchmarks"), str(ROOT / "lab" / "speedrun")]
import check_variants  # noqa: E402
import speedrun_summary  # noqa: E402


def test_the_kept_variant_is_read_from_who() -> None:
    who = "Claude (Anthropic), Triton kernel lab/speedrun/softmax/warp_groups.py, variant groups_pair_w16"
    assert speedrun_summary.kept_variant(who) == "groups_pair_w16"
    assert speedrun_summary.kept_variant("torch.compile (default)") == "-"
    assert speedrun_summary.kept_variant("A Person (via hotkernel sync)") == "-"


def test_rows_count_candidates_only(capsys: pytest.CaptureFixture[str]) -> None:
    speedrun_summary.main()
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| ")][2:]
    assert [row[0].removeprefix("| ") for row in rows] == list(speedrun_summary.GOALS)
    for row in rows:
        target, kept = row[0].removeprefix("| "), row[2]
        assert kept == "-" or kept in check_variants.variant_index(target), (target, kept)


def test_the_docs_table_is_the_scripts_output(capsys: pytest.CaptureFixture[str]) -> None:
    """lab/speedrun.md quotes the table the script prints from today's records: a new record must update it."""
    speedrun_summary.main()
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    doc = (ROOT / "lab" / "speedrun.md").read_text(encoding="utf-8")
    section = doc.split("### The same table from today's records", 1)[1]
    quoted = [line for line in section.split("\n\n")[2].splitlines() if line.startswith("| ")]
    assert quoted == printed, "run `python lab/benchmarks/speedrun_summary.py` and paste its table into lab/speedrun.md"


def test_docs_calibration_quotes_the_judge_ceilings_the_records_hold(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/calibration.md gives the range of the judge's per-run copy ceilings over the counted H200 records: the
    line the script prints, so a new record that widens it must update the doc."""
    speedrun_summary.main()
    line = capsys.readouterr().out.splitlines()[1]
    count, span = line.split("over the ")[1].split(" counted NVIDIA H200 records: ")
    doc = " ".join((ROOT / "docs" / "calibration.md").read_text(encoding="utf-8").split())
    assert f"Over the {count} counted NVIDIA H200 records in `results/`" in doc, line
    assert f"they read {span} (`python lab/benchmarks/speedrun_summary.py`" in doc, line
    n, low, high = speedrun_summary.judge_ceilings_gbps()
    assert n == int(count) and low < high <= speedrun_summary.copy_ceiling_gbps()
