"""lab/benchmarks/rerun_range_backtest.py --contract-rules: the committed outputs reproduce, and the nested rule
widens the range by the spread between contracts."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "lab" / "benchmarks")]
import rerun_range_backtest  # noqa: E402

from hotkernel.store.rerun_range import rerun_range  # noqa: E402

EVIDENCE = ROOT / "lab" / "benchmarks" / "evidence" / "board_20261205"


# the cut-offs only: the output over all records changes with every new record (its file is kept as evidence)
@pytest.mark.parametrize("name", ["until_20261205T1530", "until_20261205T1610"])
def test_contract_rules_match_their_committed_output(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    monkeypatch.chdir(ROOT)
    command, _, expected = (EVIDENCE / f"rerun_range_contract_rules_{name}.txt").read_text().partition("\n")
    rerun_range_backtest.main(command.split()[3:])
    assert capsys.readouterr().out == expected


def test_a_level_shift_between_contracts_widens_the_nested_range() -> None:
    def sessions(level: float) -> list[list[float]]:
        return [[level * math.exp(d), level * math.exp(-d)] for d in (0.001, 0.002, 0.0015)]

    shifted = [sessions(1.00), sessions(1.02), sessions(0.99)]
    one_way = rerun_range([s for c in shifted for s in c], centre=1.0)
    low, high = rerun_range_backtest.nested_range(shifted, 1.0, "sessions")
    assert one_way.low is not None and one_way.high is not None
    assert high - low > one_way.high - one_way.low
    wide_low, wide_high = rerun_range_backtest.nested_range(shifted, 1.0, "contracts")
    assert wide_high - wide_low > high - low  # t on 2 degrees of freedom, not 8
    flat = [sessions(1.0), sessions(1.0)]  # no shift: no between-contract spread
    same = rerun_range([s for c in flat for s in c], centre=1.0)
    low, high = rerun_range_backtest.nested_range(flat, 1.0, "sessions")
    assert same.low is not None and same.high is not None
    assert high - low == pytest.approx(same.high - same.low, rel=0.05)
