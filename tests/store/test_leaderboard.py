"""LEADERBOARD.md: deterministic, generated-marked, best-so-far per target and device, vouched records only."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from store.record_factory import make_workspace, provenance, synthetic_result, write_noise

from hotkernel._util.fs import sha256_file
from hotkernel.errors import HotkernelError
from hotkernel.store.leaderboard import (
    GENERATED_MARKER,
    check_leaderboard,
    leaderboard_difference,
    load_records,
    render_leaderboard,
    scan_results,
    store_problems,
    write_leaderboard,
)
from hotkernel.store.record import invalidate_record, record
from hotkernel.workspace.lockfile import read_lock, write_lock
from hotkernel.workspace.paths import Workspace


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
        ("rmsnorm", "faster", 1.40, "Dev A"),  # second verifies of the same files: they confirm the firsts
        ("rmsnorm", "faster", 1.10, "Dev B"),
    ]
    paths = []
    for target, verdict, speedup, device in cases:
        res = synthetic_result(target, verdict, speedup, device=device)
        out = record(ws, target, res, note=f"{verdict} | try", who="test author", provenance=provenance(device))
        paths.append(out.path)
    return paths


def _best_section(ws: Workspace) -> str:
    return ws.leaderboard.read_text().split("## Best so far")[1].split("## All records")[0]


def test_render_is_deterministic_and_order_independent(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    _populate(ws)
    write_noise(ws.results_dir)
    first = render_leaderboard(ws)
    assert first == render_leaderboard(ws)
    assert first.splitlines()[0] == GENERATED_MARKER and "DO NOT EDIT" in first.splitlines()[0]

    # Same records (and their index) copied into a fresh tree in a shuffled order (other inodes, mtimes).
    other = make_workspace(tmp_path / "copy")
    shutil.copyfile(ws.lock_file, other.lock_file)
    files = [p for p in ws.results_dir.rglob("*.json")]
    random.Random(7).shuffle(files)
    for path in files:
        dest = other.results_dir / path.relative_to(ws.results_dir)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        os.utime(dest, (random.random() * 1e9, random.random() * 1e9))
    assert render_leaderboard(other) == first


def test_cells_best_so_far_and_noise_ignored(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    write_noise(ws.results_dir)
    assert len(load_records(ws.results_dir)) == len(paths)  # calibration, baseline_choice, temp files ignored
    text = render_leaderboard(ws)
    best = text.split("## Best so far")[1].split("## All records")[0]
    assert "| rmsnorm | Dev A | 1.400x |" in best
    assert "| rmsnorm | Dev B | 1.100x |" in best
    assert "| softmax | Dev A | no gain |" in best
    rows = text.split("## All records")[1]
    assert "| slower | no gain |  |" in rows and "0.800x" not in rows  # no speedup, no interval for slower
    assert "| incorrect | incorrect |" in rows and "| invalid | invalid |" in rows
    assert "| inconclusive | no gain |" in rows
    assert "faster \\| try" in rows  # a pipe in a note is escaped, the table stays intact
    assert "Unverified" not in text


def test_older_protocol_is_one_line_and_invalidated_not_counted(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    old = record(
        ws,
        "gemv",
        synthetic_result("gemv", "faster", 3.0, protocol=1),
        note="old contract",
        who="t",
        provenance=provenance(),
    )
    for _ in range(2):  # verified twice: crowned
        good = record(
            ws, "gemv", synthetic_result("gemv", "faster", 1.5), note="honest", who="t", provenance=provenance()
        )
    for _ in range(2):
        cheat = record(
            ws, "gemv", synthetic_result("gemv", "faster", 2.0), note="cheat", who="t", provenance=provenance()
        )
    assert cheat.beats_best and cheat.previous_best == pytest.approx(1.5)  # the protocol-1 record is not the best
    invalidate_record(ws, cheat.path, "read a stale buffer")
    text = ws.leaderboard.read_text()
    assert "1 record(s) of protocol 1 not shown." in text and old.path not in text and "3.000x" not in text
    assert "invalidated: read a stale buffer" in text
    best = _best_section(ws)
    assert "1.500x" in best and "2.000x" not in best
    raw = json.loads((ws.root / cheat.path).read_text())
    assert raw["invalidated"]["reason"] == "read a stale buffer" and raw["result"]["speedup"] == pytest.approx(2.0)
    assert good.path in text and store_problems(ws) == []  # the invalidated file is re-indexed, not unverified


def test_check_names_the_record_a_hand_edit_changed(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    write_leaderboard(ws)
    assert check_leaderboard(ws) and leaderboard_difference(ws) is None
    ws.leaderboard.write_text(ws.leaderboard.read_text().replace("1.400x", "9.999x"))
    assert not check_leaderboard(ws)
    assert leaderboard_difference(ws) == (
        f"LEADERBOARD.md is stale: the row of {paths[7]} differs: run `hotkernel leaderboard` to regenerate it"
    )


def test_a_stale_board_names_the_record_it_lacks(tmp_path: Path) -> None:
    """A kill just after writing a record, before the board: the board is stale, and says which record."""
    ws = make_workspace(tmp_path)
    _populate(ws)
    stale = ws.leaderboard.read_text()
    newer = record(ws, "gemv", synthetic_result("gemv", "faster", 1.2), note="n", who="w", provenance=provenance())
    ws.leaderboard.write_text(stale)
    (line,) = store_problems(ws)
    assert (
        line == f"LEADERBOARD.md is stale: it does not list {newer.path}: run `hotkernel leaderboard` to regenerate it"
    )


# ------------------------------------------------------------------ forged records (integrity issue, item 2)


def _forge_copy(ws: Workspace, source: str, speedup: float, name: str = "20991231T000000Z.json") -> Path:
    data = json.loads((ws.root / source).read_text())
    data["result"].update(verdict="faster", speedup=speedup, interval=[speedup * 0.99, speedup * 1.01])
    forged = ws.root / Path(source).parent / name
    forged.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return forged


def test_a_copied_record_with_speedup_50_is_unverified_and_never_counted(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    forged = _forge_copy(ws, paths[1], 50.0)
    write_leaderboard(ws)
    best = _best_section(ws)
    assert "| rmsnorm | Dev A | 1.400x |" in best and "50.000x" not in ws.leaderboard.read_text()
    unverified = ws.leaderboard.read_text().split("## Unverified (never counted)")[1]
    rel = forged.relative_to(ws.root).as_posix()
    assert f"| {rel} | its numbers do not recompute: speedup 50.0 but its samples give 1.4 |" in unverified
    (line,) = store_problems(ws)
    assert line.startswith(f"{rel}: unverified record (its numbers do not recompute: speedup 50.0 but its samples")


def test_an_edited_vouched_record_no_longer_counts(tmp_path: Path) -> None:
    """The attacker's next try: rewrite the best record itself instead of adding one."""
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    _forge_copy(ws, paths[1], 50.0, name=Path(paths[1]).name)  # overwrite the 1.40x record in place
    write_leaderboard(ws)
    assert "| rmsnorm | Dev A | no gain |" in _best_section(ws)  # the 1.40x left has no confirmation
    reasons = dict(scan_results(ws).unverified)
    assert reasons[paths[1]].startswith("its numbers do not recompute: speedup 50.0")


def test_a_scan_reads_known_bytes_once_and_changed_bytes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scans keep what a file's bytes parsed to (a sync scans after every record): unchanged files are not parsed
    again, and a file rewritten in place, its index entry rewritten to match, is read again and caught."""
    from hotkernel.store import scan as scan_module

    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    first = scan_results(ws)
    parsed: list[str] = []
    real = scan_module._validate
    monkeypatch.setattr(scan_module, "_validate", lambda data: parsed.append(data["target"]) or real(data))
    again = scan_results(ws)
    assert parsed == [] and [p for p, _ in again.records] == [p for p, _ in first.records] == sorted(paths)
    shared = again.records[0][1]
    assert shared is first.records[0][1]  # one parsed object for both scans: it cannot be changed in place
    with pytest.raises(ValidationError, match="frozen"):
        shared.who = "someone else"
    forged = _forge_copy(ws, paths[1], 50.0, name=Path(paths[1]).name)
    lock = read_lock(ws)
    lock.records[paths[1]] = sha256_file(forged) or ""  # the forger also fixes the index: the numbers still tell
    write_lock(ws, lock)
    reasons = dict(scan_results(ws).unverified)
    assert parsed == ["rmsnorm"] and reasons[paths[1]].startswith("its numbers do not recompute: speedup 50.0")


def test_symlinks_and_files_outside_their_target_folder_never_count(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    outside = tmp_path.parent / f"{tmp_path.name}_outside.json"
    outside.write_text((ws.root / paths[1]).read_text().replace('"speedup": 1.4', '"speedup": 50.0'))
    link = ws.results_dir / "rmsnorm" / "20991231T000000Z.json"
    link.symlink_to(outside)
    lock = read_lock(ws)
    lock.records[link.relative_to(ws.root).as_posix()] = lock.records[paths[1]]  # even with an index entry
    moved = ws.results_dir / "softmax" / "20991231T000001Z.json"  # an rmsnorm record in softmax's folder
    shutil.copyfile(ws.root / paths[1], moved)
    lock.records[moved.relative_to(ws.root).as_posix()] = sha256_file(moved)
    write_lock(ws, lock)
    scan = scan_results(ws)
    assert {p for p, _ in scan.unverified} == {
        "results/rmsnorm/20991231T000000Z.json",
        "results/softmax/20991231T000001Z.json",
    }
    assert len(scan.records) == len(paths)


def test_truncated_and_missing_records_are_reported_with_the_file(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    truncated = ws.root / paths[-1]
    truncated.write_text(truncated.read_text()[:200])
    (ws.root / paths[0]).unlink()
    problems = store_problems(ws)
    assert problems[0].startswith(f"{paths[-1]}: not valid JSON") and "git checkout -- " + paths[-1] in problems[0]
    assert problems[1].startswith(f"{paths[0]}: named by hotkernel.lock but missing")
    assert problems[2].startswith("LEADERBOARD.md is stale")


def _cli(ws_root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(ws_root)}
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", *args], capture_output=True, text=True, env=env, cwd=ws_root, timeout=120
    )


def test_cli_leaderboard_check_exit_codes(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    _populate(ws)
    assert _cli(ws.root, "leaderboard", "--check").returncode == 0
    ws.leaderboard.write_text("hand edit\n")
    out = _cli(ws.root, "leaderboard", "--check")
    assert out.returncode == 1 and "LEADERBOARD.md is stale: it does not list results/" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert _cli(ws.root, "leaderboard").returncode == 0
    assert _cli(ws.root, "leaderboard", "--check").returncode == 0


def test_cli_leaderboard_check_names_a_damaged_record(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    (ws.root / paths[2]).write_text('{"kind": "record", "target": "rmsn')
    out = _cli(ws.root, "leaderboard", "--check")
    assert out.returncode == 1 and f"{paths[2]}: not valid JSON" in out.stderr
    assert "Traceback" not in out.stderr
    rewrite = _cli(ws.root, "leaderboard")  # rewrites the board, still names the damaged file
    assert rewrite.returncode == 0 and f"{paths[2]}: not valid JSON" in rewrite.stderr


def _git(root: Path, *args: str) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env, timeout=60)


def test_vouch_committed_indexes_only_what_git_head_holds_unchanged(tmp_path: Path) -> None:
    """Records made before the index existed: `leaderboard --vouch-committed` trusts git HEAD, nothing else."""
    ws = make_workspace(tmp_path)
    paths = _populate(ws)
    lock = read_lock(ws)
    lock.records = {}  # a schema-1 lock: no index
    write_lock(ws, lock)
    _git(ws.root, "init", "-q")
    _git(ws.root, "add", "-A")
    _git(ws.root, "commit", "-q", "-m", "records")
    edited = ws.root / paths[1]
    edited.write_text(edited.read_text().replace('"note":"faster | try"', '"note":"edited"'))  # differs from HEAD
    forged = _forge_copy(ws, paths[0], 60.0)  # untracked
    out = _cli(ws.root, "leaderboard", "--vouch-committed")
    assert out.returncode == 0, out.stderr
    assert set(read_lock(ws).records) == set(paths) - {paths[1]}
    board = ws.leaderboard.read_text()
    assert "60.000x" not in board and "| rmsnorm | Dev A | 1.400x |" in board
    unverified = {p for p, _ in scan_results(ws).unverified}
    assert unverified == {paths[1], forged.relative_to(ws.root).as_posix()}


def test_a_symlinked_target_folder_never_counts_and_is_never_written(tmp_path: Path) -> None:
    """The attacker's next try after a symlinked file: symlink the whole results/<target>/ folder."""
    ws = make_workspace(tmp_path / "ws")
    honest = record(ws, "gemv", synthetic_result("gemv", "faster", 1.5), note="n", who="w", provenance=provenance())
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(ws.results_dir / "gemv", elsewhere)
    forged = _forge_copy(ws, honest.path, 50.0)
    shutil.copyfile(forged, elsewhere / forged.name)
    forged.unlink()
    shutil.rmtree(ws.results_dir / "gemv")
    (ws.results_dir / "gemv").symlink_to(elsewhere, target_is_directory=True)
    lock = read_lock(ws)
    lock.records[f"results/gemv/{forged.name}"] = sha256_file(elsewhere / forged.name)
    write_lock(ws, lock)
    assert scan_results(ws).records == []
    with pytest.raises(HotkernelError, match="results/gemv is a symlink"):
        record(ws, "gemv", synthetic_result("gemv", "faster", 1.6), note="n", who="w", provenance=provenance())
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted([Path(honest.path).name, forged.name])


def test_best_row_counts_every_run_of_its_very_files_and_their_range(tmp_path: Path) -> None:
    """The best is crowned only when a second verify of its files agrees; its speedup is the median of every
    counted run of its files on its device, with their count and range: three runs of files A (1.30x twice, one
    inconclusive), one of files B (1.25x) and a lone 1.9x of files A on another device, which awaits its
    confirmation and is not crowned."""
    ws = make_workspace(tmp_path)
    for verdict, speedup, files, device in (
        ("faster", 1.30, "A", "Dev A"),
        ("faster", 1.30, "A", "Dev A"),
        ("inconclusive", None, "A", "Dev A"),
        ("faster", 1.25, "B", "Dev A"),
        ("faster", 1.9, "A", "Dev B"),
    ):
        res = synthetic_result("rmsnorm", verdict, speedup, device=device, candidate=files)
        record(ws, "rmsnorm", res, note="run", who="test author", provenance=provenance(device))
    write_leaderboard(ws)
    best = _best_section(ws)
    assert "| rmsnorm | Dev A | 1.300x | [1.296, 1.304] | 3 runs: 1.000-1.300x, 1 not faster |" in best, best
    assert "| rmsnorm | Dev B | no gain |" in best, best
    waiting = ws.leaderboard.read_text().split("## Awaiting confirmation")[1]
    assert "| rmsnorm | Dev B | 1.900x |" in waiting
    assert "yes, awaiting confirmation" in ws.leaderboard.read_text()


def test_reruns_under_a_newer_contract_join_the_same_files_count(tmp_path: Path) -> None:
    """A contract change of the same protocol re-verifies the same baseline and candidate: those runs join the
    best's count and median (1.20x twice under the old contract, 1.10x twice under the new: one set of 4 runs,
    median 1.15x), never a second set whose higher median alone would be crowned."""
    ws = make_workspace(tmp_path)
    for speedup, contract in ((1.20, "old"), (1.20, "old"), (1.10, "new"), (1.10, "new")):
        res = synthetic_result("rmsnorm", "faster", speedup, candidate="A")
        if contract == "new":
            res = res.model_copy(update={"contract_sha256": "9" * 64})
        record(ws, "rmsnorm", res, note="run", who="test author", provenance=provenance())
    write_leaderboard(ws)
    best = _best_section(ws)
    assert "| rmsnorm | Synthetic Test Device | 1.150x |" in best, best
    assert "4 runs: 1.100-1.200x |" in best, best
