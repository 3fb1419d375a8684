"""benchmarks/speedrun_summary.py on the committed records: only candidates count (a torch.compile competitor is
not a kept kernel), and the kept column names a speedrun variant or says it cannot."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "speedrun")]
import check_variants  # noqa: E402
import speedrun_summary  # noqa: E402


def test_the_kept_variant_is_read_from_who() -> None:
    who = "Claude (Anthropic), Triton kernel speedrun/softmax/warp_groups.py, variant groups_pair_w16"
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
    """docs/speedrun.md quotes the table the script prints from today's records: a new record must update it."""
    speedrun_summary.main()
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")]
    doc = (ROOT / "docs" / "speedrun.md").read_text(encoding="utf-8")
    section = doc.split("### The same table from today's records", 1)[1]
    quoted = [line for line in section.split("\n\n")[2].splitlines() if line.startswith("| ")]
    assert quoted == printed, "run `python benchmarks/speedrun_summary.py` and paste its table into docs/speedrun.md"
