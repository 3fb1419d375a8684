"""lab/benchmarks/suites_table.py: docs/suites.md's own-shape sweep is the committed logs, rendered."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("suites_table", REPO / "lab" / "benchmarks" / "suites_table.py")
table = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = table  # dataclasses need the module registered
spec.loader.exec_module(table)


def test_the_docs_block_is_the_logs_rendered():
    assert table.main(["--check"]) == 0, "run `python lab/benchmarks/suites_table.py --write`"


def test_every_imported_problem_is_counted_once():
    index, imported, tries = table.load()
    block = table.render(index, imported, tries)
    head = block.splitlines()[0]
    counted = sum(int(n) for n in re.findall(r"\*\*(\d+) ", head))
    unreached = re.search(r"; (\d+) not reached", head)
    assert counted + (int(unreached.group(1)) if unreached else 0) == len(imported) == 98
    rows = [line for line in block.splitlines() if line.startswith("| 0") or line.startswith("| 1")]
    assert len(rows) == len(tries) + (int(unreached.group(1)) if unreached else 0)


def test_a_later_try_replaces_an_earlier_one():
    index, imported, tries = table.load()
    nine = [t for t in tries if t.target == "kb1_009_tall_skinny_matrix_multiplication"]
    assert [t.verdict for t in nine] == ["invalid", "inconclusive"]  # K=15 ran out of memory, then fixed
    counts_head = table.render(index, imported, tries).splitlines()[0]
    dropped = [t for t in tries if t is not nine[-1]]
    assert table.render(index, imported, dropped).splitlines()[0] != counts_head


@pytest.mark.parametrize("verdict", ["inconclusive", "invalid"])
def test_each_cell_keeps_what_the_log_says(verdict):
    _, _, tries = table.load()
    picked = [t for t in tries if t.verdict == verdict]
    assert picked
    for t in picked:
        cell = table.outcome(t.verdict, t.reason)
        assert cell.startswith(verdict)
        if verdict == "inconclusive":
            assert cell.split(" ", 1)[1] in t.reason  # the speedup and its interval, verbatim
        else:
            check = t.reason.removeprefix("baseline_failed: ").split(":", 1)[0]
            assert f"`{check}`" in cell
            assert ("baseline " in cell) == t.reason.startswith("baseline_failed")


def test_a_run_stopped_by_its_budget_is_not_a_verdict():
    _, _, tries = table.load()
    stopped = [t for t in tries if t.verdict is None]
    assert stopped
    assert all(table.outcome(None, t.reason).startswith("not judged: verify ran past") for t in stopped)


def test_missing_markers_say_what_to_add():
    with pytest.raises(SystemExit, match="markers"):
        table.replace_block("# no markers here\n", "block")
