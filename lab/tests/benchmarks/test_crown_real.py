"""lab/benchmarks/crown_real.py on a tiny evidence tree: what it counts as A/A, and the board's confirmation."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "lab" / "benchmarks")]
import crown_real  # noqa: E402


def _aa(target: str, verdict: str, interval: list[float] | None = None) -> str:
    speedup = sum(interval) / 2 if interval else None
    return json.dumps({"step": "aa", "target": target, "verdict": verdict, "speedup": speedup, "interval": interval})


def _tree(root: Path) -> None:
    logs = root / "lab" / "benchmarks" / "evidence" / "h200_fixture"
    logs.mkdir(parents=True)
    (root / "results").mkdir()
    lines = [
        _aa("t", "faster", [1.02, 1.04]),
        _aa("t", "faster", [1.03, 1.05]),  # overlaps the first: the board crowns this pair
        _aa("t", "inconclusive"),
        _aa("u", "faster", [1.02, 1.03]),
        _aa("u", "faster", [1.05, 1.06]),  # no overlap: not confirmed
        json.dumps({"step": "aa", "target": "u", "skipped": "budget"}),
        json.dumps({"step": "bench", "target": "t", "verdict": "faster"}),  # not an A/A step
    ]
    (logs / "aa.jsonl").write_text("\n".join(lines) + "\n")
    side = {"sha256": "same"}
    verify = {"verdict": "invalid", "target": "v", "device": "NVIDIA H200", "baseline": side, "candidate": side}
    (logs / "aa_1.json").write_text(json.dumps(verify))
    other = {**verify, "candidate": {"sha256": "other"}}  # not A/A: different files
    (logs / "ab.json").write_text(json.dumps(other))
    (root / "lab" / "benchmarks" / "evidence" / "no_device.jsonl").write_text(_aa("t", "inconclusive") + "\n")
    own = {**json.loads(_aa("w", "inconclusive")), "kind": "aa", "device": "CPU Box (2 CPUs)"}  # cpu_aa_rate.py's
    (root / "lab" / "benchmarks" / "evidence" / "cpu_aa.jsonl").write_text(json.dumps(own) + "\n")


def test_counts_verifies_false_faster_and_crowned_pairs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _tree(tmp_path)
    verifies, skipped = crown_real.scan(tmp_path)
    assert sorted((v.target, v.verdict) for v in verifies) == [
        ("t", "faster"),
        ("t", "faster"),
        ("t", "inconclusive"),
        ("u", "faster"),
        ("u", "faster"),
        ("v", "invalid"),
        ("w", "inconclusive"),
    ]
    assert {v.device for v in verifies if v.target != "w"} == {"NVIDIA H200"}
    assert [v.device for v in verifies if v.target == "w"] == ["CPU Box (2 CPUs)"]  # the line's own device
    assert len(skipped) == 2  # the budget-skipped line, and the line whose path names no device
    crown_real.main([str(tmp_path)])
    out = capsys.readouterr().out
    assert "A/A verifies: 7" in out
    assert "false faster: 4 of 6 timed A/A verifies" in out
    assert "pairs of the same target, shapes and device: 4 in 2 groups; crowned 1," in out


def test_crowned_is_the_boards_rule() -> None:
    def v(verdict: str, interval: tuple[float, float] | None) -> crown_real.Verify:
        speedup = sum(interval) / 2 if interval else None
        return crown_real.Verify("s", "t", "d", "[]", verdict, speedup, interval)

    assert crown_real.crowned(v("faster", (1.02, 1.04)), v("faster", (1.035, 1.05)))
    assert not crown_real.crowned(v("faster", (1.02, 1.03)), v("faster", (1.04, 1.05)))
    assert not crown_real.crowned(v("faster", (1.02, 1.04)), v("inconclusive", None))
