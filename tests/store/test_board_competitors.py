"""The board's competitors, suite summary (fast_p), roofline charts and README headline, on synthetic records."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from store.record_factory import make_workspace, provenance, synthetic_result

from hotkernel.store.headline import HEADLINE_END, HEADLINE_START
from hotkernel.store.leaderboard import (
    best_entries,
    board_rows,
    current_protocol,
    generated_differences,
    store_problems,
    write_leaderboard,
)
from hotkernel.store.record import best_counted, history, record
from hotkernel.store.roofline_svg import chart_name
from hotkernel.store.summary import suite_of, suite_summaries, summary_lines
from hotkernel.workspace.paths import Workspace

H200 = "NVIDIA H200"


def _gpu_result(target: str, verdict: str, speedup: float | None, *, ceiling: float = 4150.0):
    """A synthetic H200 result with the contract's flops/bytes/dtype and a judge ceiling in its runs."""
    res = synthetic_result(target, verdict, speedup, device=H200)
    res.contract = {"flops": 2.0e8, "bytes": 1.0e8, "dtype": "bf16", "shapes": ["4096x8192"]}
    for run in res.runs:
        run.data = {"ceiling_gbps": ceiling}
    return res


def _record(
    ws: Workspace,
    target: str,
    verdict: str,
    speedup: float | None,
    *,
    competitor: str | None = None,
    who: str = "test author",
    ceiling: float = 4150.0,
):
    """Record one verify; a faster candidate is verified and recorded twice (the second confirms the first)."""
    times = 2 if verdict == "faster" and competitor is None else 1
    for _ in range(times):
        out = record(
            ws,
            target,
            _gpu_result(target, verdict, speedup, ceiling=ceiling),
            note="synthetic",
            who=who,
            provenance=provenance(H200),
            competitor=competitor,
        )
    return out


def test_competitor_records_are_never_best_and_show_their_own_rows(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    _record(ws, "rmsnorm", "faster", 1.5)
    rival = _record(ws, "rmsnorm", "faster", 2.0, competitor="compile-max-autotune", who="torch.compile (max-autotune)")
    _record(ws, "rmsnorm", "inconclusive", None, competitor="./k.py:f", who="./k.py:f")
    assert rival.beats_best is False
    assert best_counted(ws, "rmsnorm", H200, current_protocol())[1].result.speedup == pytest.approx(1.5)
    rows = board_rows(ws)
    assert [r.role for r in rows if r.best] == ["candidate"]
    entry = next(e for e in best_entries(rows) if e.target == "rmsnorm")
    assert entry.competitor is not None and entry.competitor.competitor == "compile-max-autotune"
    assert entry.vs_competitor == pytest.approx(0.75)
    board = ws.leaderboard.read_text()
    best_line = next(line for line in board.splitlines() if line.startswith("| rmsnorm | NVIDIA H200 | 1.500x"))
    assert "| 0.750x | torch.compile (max-autotune) (2.000x) |" in best_line
    competitors = board.split("## Competitors")[1].split("## Roofline")[0]
    assert competitors.count("| rmsnorm | NVIDIA H200 |") == 2 and rival.path in competitors
    assert rival.path not in board.split("## All records")[1].split("## Competitors")[0]
    assert [(h.role, h.competitor) for h in history(ws, "rmsnorm")] == [
        ("candidate", None),
        ("candidate", None),
        ("competitor", "compile-max-autotune"),
        ("competitor", "./k.py:f"),
    ]


def test_a_slower_competitor_counts_with_its_speedup_and_inconclusive_as_even(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    _record(ws, "softmax", "faster", 1.2)
    _record(ws, "softmax", "inconclusive", None, competitor="compile", who="torch.compile (default)")
    _record(ws, "softmax", "slower", 0.8, competitor="./k.py:f", who="./k.py:f")
    entry = next(e for e in best_entries(board_rows(ws)) if e.target == "softmax")
    assert entry.competitor_speedup == 1.0 and entry.vs_competitor == pytest.approx(1.2)
    rivals = ws.leaderboard.read_text().split("## Competitors")[1]
    assert "| inconclusive | even |  |" in rivals and "| slower | 0.800x | [0.798, 0.802] |" in rivals


def _kb_workspace(root: Path, names: list[str]) -> Workspace:
    root.mkdir(parents=True)
    (root / "k.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    entry = "  {}:\n    from: ./k.py:f\n    shapes: [8x8]\n    dtype: fp32\n    device: cpu\n"
    entries = "".join(entry.format(t) for t in names)
    (root / "hotkernel.yaml").write_text(f"version: 1\ntargets:\n{entries}", encoding="utf-8")
    return Workspace(root)


def test_fast_p_and_geomean_per_suite_and_device(tmp_path: Path) -> None:
    names = ["kb1_001_relu", "kb1_002_gelu", "kb1_003_softmax", "kb1_004_matmul", "kb2_001_conv", "mine"]
    ws = _kb_workspace(tmp_path / "ws", names)
    cases = {
        "kb1_001_relu": ("faster", 1.2),
        "kb1_002_gelu": ("faster", 1.8),
        "kb1_003_softmax": ("faster", 2.5),
        "kb1_004_matmul": ("incorrect", None),
        "kb2_001_conv": ("slower", 0.5),
        "mine": ("faster", 3.0),
    }
    for name, (verdict, speedup) in cases.items():
        _record(ws, name, verdict, speedup)
    assert suite_of("kb1_023_softmax") == "kernelbench level 1" and suite_of("rmsnorm") == "workspace"
    summaries = {s.suite: s for s in suite_summaries(best_entries(board_rows(ws)))}
    level1 = summaries["kernelbench level 1"]
    assert level1.targets == 4 and level1.faster == 3
    assert level1.fast_p == {"fast_0": 0.75, "fast_1.0": 0.75, "fast_1.5": 0.5, "fast_2.0": 0.25}
    assert level1.geomean_speedup == pytest.approx(math.exp((math.log(1.2) + math.log(1.8) + math.log(2.5)) / 3))
    assert summaries["kernelbench level 2"].fast_p["fast_0"] == 0.0
    assert summaries["kernelbench level 2"].geomean_speedup is None
    assert summaries["workspace"].fast_p["fast_2.0"] == 1.0
    lines = summary_lines(list(summaries.values()))
    assert lines[0].split()[:3] == ["suite", "device", "targets"]
    level1_line = next(line for line in lines if line.startswith("kernelbench level 1"))
    assert "0.750" in level1_line and "1.754x (3)" in level1_line  # 5.4 ** (1/3)


def test_roofline_chart_is_generated_deterministic_and_checked(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    _record(ws, "rmsnorm", "faster", 1.5, ceiling=4100.0)
    _record(ws, "gemv", "inconclusive", None, ceiling=4210.0)
    _record(ws, "rmsnorm", "faster", 1.9, competitor="compile", who="torch.compile (default)")
    chart = ws.root / chart_name(H200)
    assert chart.name == "roofline_nvidia_h200.svg"
    first = chart.read_bytes()
    write_leaderboard(ws)
    assert chart.read_bytes() == first  # same records, same bytes
    text = first.decode()
    assert text.startswith("<svg") and "measured copy 4.21 TB/s (judge)" in text  # the highest judge ceiling
    assert "spec 4.80 TB/s" in text and "bf16 dense peak 989 TFLOP/s (spec)" in text
    assert "rmsnorm 1.50x" in text and "gemv (not beaten)" in text
    assert text.count("<polygon") == 2  # the competitor's point and its legend marker
    assert not re.search(r"\d\.\d{2,}\d{5}", text)  # fixed float formatting, no raw floats
    assert f"[{chart.name}]({chart.name})" in ws.leaderboard.read_text()
    assert generated_differences(ws) == []
    chart.write_text(text.replace("rmsnorm 1.50x", "rmsnorm 9.99x"))
    assert f"{chart.name} is stale: it differs from results/: run `hotkernel leaderboard`" in " ".join(
        store_problems(ws)
    )
    chart.unlink()
    assert f"{chart.name} is missing: run `hotkernel leaderboard` to regenerate it" in store_problems(ws)


def test_no_chart_for_a_device_the_spec_table_lacks(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    record(ws, "rmsnorm", synthetic_result("rmsnorm", "faster", 1.2), note="n", who="w", provenance=provenance())
    assert not list(ws.root.glob("roofline_*.svg")) and "## Roofline" not in ws.leaderboard.read_text()


def test_readme_headline_block_is_generated_and_checked(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    readme = ws.root / "README.md"
    readme.write_text(f"# ws\n\nbefore\n\n{HEADLINE_START}\nold typed table\n{HEADLINE_END}\n\nafter\n")
    _record(ws, "rmsnorm", "faster", 1.5)
    _record(ws, "rmsnorm", "faster", 2.0, competitor="compile", who="torch.compile (default)")
    text = readme.read_text()
    assert text.startswith("# ws\n\nbefore\n\n") and text.endswith(f"{HEADLINE_END}\n\nafter\n")
    assert "old typed table" not in text
    row = next(line for line in text.splitlines() if line.startswith("| rmsnorm |"))
    # bytes 1e8 over the candidate's median (1.0 / 1.5 ms) against the 4.15 TB/s judge ceiling
    share = 1e8 / (1.0 / 1.5 * 1e-3) / 4150e9
    assert row == (
        "| rmsnorm | 4096x8192, bf16 | `./k.py:f` | 1.500x | 2 runs: 1.500-1.500x | "  # the median of 2 runs
        "not stated: 1 session, spread between sessions unknown | "  # both runs on one machine, minutes apart
        f"0.750x (torch.compile (default)) | {100 * share:.1f}% |"
    )
    assert "[roofline chart](roofline_nvidia_h200.svg)" in text
    assert generated_differences(ws) == []
    readme.write_text(text.replace("1.500x | 2 runs", "1.600x | 2 runs"))
    assert (
        "README.md is stale: its headline block differs from results/: run `hotkernel leaderboard` to "
        "regenerate it" in store_problems(ws)
    )
    write_leaderboard(ws)
    assert readme.read_text() == text


def test_a_readme_without_markers_is_left_alone(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    readme = ws.root / "README.md"
    readme.write_text("# mine\n")
    _record(ws, "rmsnorm", "faster", 1.5)
    assert readme.read_text() == "# mine\n" and generated_differences(ws) == []


def test_a_start_marker_without_its_end_is_named(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    readme = ws.root / "README.md"
    readme.write_text(f"# ws\n{HEADLINE_START}\nno end\n")
    _record(ws, "rmsnorm", "faster", 1.5)
    assert readme.read_text() == f"# ws\n{HEADLINE_START}\nno end\n"
    assert any(
        line.startswith("README.md: the headline start marker has no `<!-- hotkernel:headline:end -->`")
        for line in store_problems(ws)
    )
