"""LEADERBOARD.md: deterministic, generated-marked, best-so-far per target and device, not-counted rows."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from record_factory import make_workspace, provenance, synthetic_result, write_noise

from hotkernel.store.leaderboard import (
    GENERATED_MARKER,
    check_leaderboard,
    leaderboard_difference,
    load_records,
    render_leaderboard,
    write_leaderboard,
)
from hotkernel.store.record import invalidate_record, record


def _populate(ws) -> list[str]:
    """Several records over two targets and two devices; returns their paths."""
    cases = [
        ("rmsnorm", "faster", 1.25, "Dev A"),
        ("rmsnorm", "faster", 1.40, "Dev A"),
        ("rmsnorm", "slower", 0.80, "Dev A"),
        ("rmsnorm", "incorrect", None, "Dev A"),
        ("rmsnorm", "faster", 1.10, "Dev B"),
        ("softmax", "inconclusive", None, "Dev A"),
        ("softmax", "invalid", None, "Dev A"),
    ]
    paths = []
    for target, verdict, speedup, device in cases:
        res = synthetic_result(target, verdict, speedup, device=device)
        out = record(ws, target, res, note=f"{verdict} | try", who="test author",
                     provenance=provenance(device))
        paths.append(out.path)
    return paths


def test_render_is_deterministic_and_order_independent(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    _populate(ws)
    write_noise(ws.results_dir)
    first = render_leaderboard(ws.results_dir, protocol=1)
    assert first == render_leaderboard(ws.results_dir, protocol=1)
    assert first.splitlines()[0] == GENERATED_MARKER and "DO NOT EDIT" in first.splitlines()[0]

    # Same records copied into a fresh tree in a shuffled order (different inode/mtime/listing order).
    files = [p for p in ws.results_dir.rglob("*.json")]
    random.Random(7).shuffle(files)
    other = tmp_path / "copy" / "results"
    for path in files:
        dest = other / path.relative_to(ws.results_dir)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        os.utime(dest, (random.random() * 1e9, random.random() * 1e9))
    assert render_leaderboard(other, protocol=1) == first


def test_cells_best_so_far_and_noise_ignored(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    write_noise(ws.results_dir)
    assert len(load_records(ws.results_dir)) == len(paths)  # calibration, baseline_choice, temp files ignored
    text = render_leaderboard(ws.results_dir, protocol=1)
    best = text.split("## Best so far")[1].split("## All records")[0]
    assert "| rmsnorm | Dev A | 1.400x |" in best
    assert "| rmsnorm | Dev B | 1.100x |" in best
    assert "| softmax | Dev A | no gain |" in best
    rows = text.split("## All records")[1]
    assert "| slower | no gain |  |" in rows and "0.800x" not in rows  # no speedup, no interval for slower
    assert "| incorrect | incorrect |" in rows and "| invalid | invalid |" in rows
    assert "| inconclusive | no gain |" in rows
    assert "faster \\| try" in rows  # a pipe in a note is escaped, the table stays intact


def test_older_protocol_and_invalidated_not_counted(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    old = record(ws, "gemv", synthetic_result("gemv", "faster", 3.0, protocol=0), note="old contract",
                 who="t", provenance=provenance())
    good = record(ws, "gemv", synthetic_result("gemv", "faster", 1.5), note="honest", who="t",
                  provenance=provenance())
    cheat = record(ws, "gemv", synthetic_result("gemv", "faster", 2.0), note="cheat", who="t",
                   provenance=provenance())
    assert cheat.beats_best and cheat.previous_best == 1.5  # protocol-0 record does not count as best
    invalidate_record(ws, cheat.path, "read a stale buffer")
    text = ws.leaderboard.read_text()
    assert "contract protocol 0 (current 1)" in text
    assert "invalidated: read a stale buffer" in text
    best = text.split("## Best so far")[1].split("## All records")[0]
    assert "1.500x" in best and "2.000x" not in best and "3.000x" not in best
    raw = json.loads((ws.root / cheat.path).read_text())
    assert raw["invalidated"]["reason"] == "read a stale buffer" and raw["result"]["speedup"] == 2.0
    assert old.path != good.path


def test_check_detects_a_hand_edit(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _populate(ws)
    write_leaderboard(ws)
    assert check_leaderboard(ws) and leaderboard_difference(ws) is None
    ws.leaderboard.write_text(ws.leaderboard.read_text().replace("1.400x", "9.999x"))
    assert not check_leaderboard(ws)
    assert "first difference at line" in leaderboard_difference(ws)


def _cli(ws_root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(ws_root)}
    return subprocess.run([sys.executable, "-m", "hotkernel", *args], capture_output=True, text=True, env=env,
                          cwd=ws_root, timeout=120)


def test_cli_leaderboard_check_exit_codes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _populate(ws)
    assert _cli(ws.root, "leaderboard", "--check").returncode == 0
    ws.leaderboard.write_text("hand edit\n")
    out = _cli(ws.root, "leaderboard", "--check")
    assert out.returncode == 1 and "differs from what results/ produce" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert _cli(ws.root, "leaderboard").returncode == 0
    assert _cli(ws.root, "leaderboard", "--check").returncode == 0
