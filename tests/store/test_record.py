"""record: atomic, never overwrites, says whether it beats the best; invalidate keeps the raw log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from store.record_factory import FP32_TOLERANCES, make_workspace, provenance, synthetic_result

from hotkernel._util.fs import sha256_file
from hotkernel.cli.commands.record import best_line
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest, manifest_fingerprint, resolved_target
from hotkernel.run.render import expected_baseline_sha256
from hotkernel.run.runstore import run_ids, save_run
from hotkernel.store import record as record_module
from hotkernel.store.leaderboard import current_protocol, load_records, scan_results
from hotkernel.store.record import history, invalidate_record, record, store_snapshot, write_new_json
from hotkernel.store.scan import load_record
from hotkernel.workspace.lockfile import read_lock, write_lock

TESTS = Path(__file__).resolve().parents[1]


def test_killed_between_temp_write_and_rename_leaves_no_record(tmp_path: Path) -> None:
    """SIGKILL a real process after the temp file is written and before it gets its name."""
    ws = make_workspace(tmp_path)
    script = textwrap.dedent(f"""
        import os, signal, sys
        from pathlib import Path
        sys.path.insert(0, {str(TESTS)!r})
        from store.record_factory import provenance, synthetic_result
        from hotkernel.store.record import record
        from hotkernel.workspace.paths import Workspace
        from hotkernel.manifest import load_manifest
        load_manifest(Path({str(ws.root)!r}) / "hotkernel.yaml")  # warm the manifest cache (it writes atomically)
        def dies_on_a_record(real):
            def call(src, dst, *args, **kwargs):
                if "/results/" in str(dst):  # the record's final name: the workspace lock's info file passes
                    os.kill(os.getpid(), signal.SIGKILL)
                return real(src, dst, *args, **kwargs)
            return call
        os.link = dies_on_a_record(os.link)
        os.replace = dies_on_a_record(os.replace)
        record(Workspace(Path({str(ws.root)!r})), "rmsnorm", synthetic_result("rmsnorm", "faster", 1.2),
               note="n", who="w", provenance=provenance())
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()
    directory = ws.results_dir / "rmsnorm"
    assert list(directory.glob("*.json")) == []  # no partial record under a record name
    leftovers = [p.name for p in directory.iterdir()]
    assert leftovers and all(name.startswith(".") and name.endswith(".tmp") for name in leftovers)
    assert load_records(ws.results_dir) == []  # and the temp file is never read as a record
    assert not ws.leaderboard.exists()
    assert read_lock(ws).records == {}  # the lock is absent or valid, never half-written


def test_failure_during_rename_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = make_workspace(tmp_path)

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(record_module.os, "link", broken)
    with pytest.raises(OSError):
        record(ws, "rmsnorm", synthetic_result("rmsnorm", "faster", 1.2), note="n", who="w", provenance=provenance())
    assert list((ws.results_dir / "rmsnorm").iterdir()) == []


def test_never_overwrites_a_record(tmp_path: Path) -> None:
    directory = tmp_path / "results" / "t"
    directory.mkdir(parents=True)
    first = write_new_json(directory, "20260101T000000Z", {"a": 1})
    second = write_new_json(directory, "20260101T000000Z", {"a": 2})
    third = write_new_json(directory, "20260101T000000Z", {"a": 3})
    assert [p.name for p in (first, second, third)] == [
        "20260101T000000Z.json",
        "20260101T000000Z_001.json",
        "20260101T000000Z_002.json",
    ]
    assert sorted(p.name for p in directory.iterdir()) == [p.name for p in (first, second, third)]
    assert json.loads(first.read_text()) == {"a": 1}


def test_beats_best_only_when_faster_than_every_counted_record(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    prov = provenance()

    def rec(verdict: str, speedup: float | None) -> object:
        return record(
            ws, "softmax", synthetic_result("softmax", verdict, speedup), note="x", who="agent", provenance=prov
        )

    assert not rec("inconclusive", None).beats_best
    first = rec("faster", 1.2)
    assert first.beats_best and first.awaiting_confirmation and first.previous_best is None
    confirmation = rec("faster", 1.2)  # a second verify of the same files: the pair is crowned
    assert confirmation.confirmed and not confirmation.awaiting_confirmation
    assert not rec("faster", 1.1).beats_best
    assert not rec("slower", 0.9).beats_best
    assert not rec("incorrect", None).beats_best
    better = rec("faster", 1.3)
    assert better.beats_best and better.awaiting_confirmation and better.previous_best_path == confirmation.path
    assert better.previous_best == pytest.approx(1.2)  # the median of the best's runs
    other_device = record(
        ws,
        "softmax",
        synthetic_result("softmax", "faster", 1.05, device="Other"),
        note="x",
        who="agent",
        provenance=provenance("Other"),
    )
    assert other_device.beats_best  # best-so-far is per device


def test_a_best_inside_the_noise_of_the_previous_one_is_not_clear_of_it(tmp_path: Path) -> None:
    """beats_best compares point estimates; clear_of_best asks for intervals that do not overlap (the synthetic
    intervals are +-1%), so a re-verify that beats the best by noise says so."""
    ws = make_workspace(tmp_path)

    def rec(speedup: float) -> object:
        return record(
            ws,
            "softmax",
            synthetic_result("softmax", "faster", speedup),
            note="x",
            who="agent",
            provenance=provenance(),
        )

    first = rec(1.2)
    assert first.beats_best and first.clear_of_best and first.previous_best_interval is None
    assert best_line(first).startswith("beats the best so far, awaiting confirmation")
    rec(1.2)  # confirmed: the best, median 1.2
    clear = rec(1.3)  # [1.296, 1.304] against [1.196, 1.204]
    assert clear.beats_best and clear.clear_of_best
    assert clear.previous_best_interval == pytest.approx([1.1965, 1.2035], abs=1e-3)
    rec(1.3)
    noisy = rec(1.301)  # overlaps [1.296, 1.304]
    assert noisy.beats_best and not noisy.clear_of_best and noisy.previous_best == pytest.approx(1.3)
    assert not rec(1.1).clear_of_best  # not a best at all
    assert best_line(noisy).startswith("beats the best so far, awaiting confirmation")
    confirmed = rec(1.301)
    assert best_line(confirmed).startswith(
        "beats the best so far (confirmed), but only inside the two verifies' noise (previous best 1.300x ["
    )


def test_record_content_and_history(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = record(
        ws,
        "gemv",
        synthetic_result("gemv", "faster", 1.5),
        note="vectorised loads",
        who="Claude (agent)",
        provenance=provenance(),
    )
    data = json.loads((ws.root / out.path).read_text())
    assert data["kind"] == "record" and data["who"] == "Claude (agent)" and data["contract"] == current_protocol()
    assert data["result"]["verdict"] == "faster" and data["provenance"]["device"] == provenance().device
    assert out.path.startswith("results/gemv/") and out.path.endswith("Z.json")
    assert ws.leaderboard.read_text().startswith("<!-- Code generated")
    invalidate_record(ws, out.path, "found a bug in the check")
    (entry,) = history(ws, "gemv")
    assert not entry.counted and entry.not_counted_reason == "invalidated: found a bug in the check"
    assert (ws.root / out.path).is_file()  # the raw log is kept


@pytest.mark.parametrize(("who", "note"), [("", "n"), ("   ", "n"), ("w", "two\nlines")])
def test_who_and_note_are_required_one_liners(tmp_path: Path, who: str, note: str) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(HotkernelError):
        record(ws, "gemv", synthetic_result("gemv", "faster", 1.5), note=note, who=who, provenance=provenance())
    assert not ws.results_dir.exists()


def test_record_refuses_a_result_of_another_target_and_bad_names(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(HotkernelError, match="not 'gemv'"):
        record(ws, "gemv", synthetic_result("softmax", "faster", 1.5), note="n", who="w", provenance=provenance())
    with pytest.raises(HotkernelError):
        record(ws, "../evil", synthetic_result("softmax", "faster", 1.5), note="n", who="w", provenance=provenance())
    with pytest.raises(HotkernelError):
        invalidate_record(ws, "../outside.json", "r")
    assert not ws.results_dir.exists()


def test_cli_record_import_is_labelled_and_a_run_id_comes_from_the_run_store(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    result = synthetic_result("gemv", "slower", 0.8)
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(ws.root)}
    base = [sys.executable, "-m", "hotkernel", "record", "gemv"]
    meta = ["--who", "me", "--note", "tried", "--json"]
    cmd = [*base, "--import", "-", *meta]
    out = subprocess.run(
        cmd, input=result.model_dump_json(), capture_output=True, text=True, env=env, cwd=ws.root, timeout=120
    )
    assert out.returncode == 0, out.stderr
    reply = json.loads(out.stdout)
    assert reply["verdict"] == "slower" and reply["beats_best"] is False
    assert json.loads((ws.root / reply["path"]).read_text())["imported"] is True
    assert "imported" in ws.leaderboard.read_text()
    bad = subprocess.run(cmd, input="{not json", capture_output=True, text=True, env=env, cwd=ws.root, timeout=120)
    assert bad.returncode == 1 and "not a verify result" in bad.stderr and "Traceback" not in bad.stderr
    stdin = subprocess.run([*base, "-", *meta], capture_output=True, text=True, env=env, cwd=ws.root, timeout=120)
    assert stdin.returncode == 1 and "is not one" in stdin.stderr  # JSON is not taken from outside any more

    save_run(ws, synthetic_result("gemv", "faster", 1.5))
    stored = subprocess.run([*base, "--latest", *meta], capture_output=True, text=True, env=env, cwd=ws.root)
    assert stored.returncode == 0, stored.stderr
    kept = json.loads((ws.root / json.loads(stored.stdout)["path"]).read_text())
    assert kept["imported"] is False and kept["run_id"] == run_ids(ws)[-1]


def test_record_refuses_what_does_not_describe_the_target(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    with pytest.raises(HotkernelError, match="no target named 'attention'"):
        record(
            ws, "attention", synthetic_result("attention", "faster", 2.0), note="n", who="w", provenance=provenance()
        )
    swapped = synthetic_result("gemv", "faster", 100.0)
    swapped.baseline.script = "targets/gemv/slow_copy.py"  # a slowed-down "baseline" makes any candidate win
    with pytest.raises(HotkernelError, match="not targets/gemv/baseline.py"):
        record(ws, "gemv", swapped, note="n", who="w", provenance=provenance())
    stale = synthetic_result("gemv", "faster", 1.5)
    stale.baseline.sha256 = "0" * 64  # the baseline as an older manifest entry rendered it
    with pytest.raises(HotkernelError, match="before hotkernel.yaml changed"):
        record(ws, "gemv", stale, note="n", who="w", provenance=provenance())
    assert not ws.results_dir.exists() or not list(ws.results_dir.rglob("*.json"))


def test_record_stores_the_spec_it_ran_with_and_indexes_itself(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path)
    out = record(
        ws,
        "gemv",
        synthetic_result("gemv", "faster", 1.5, tolerances=FP32_TOLERANCES),
        note="n",
        who="w",
        provenance=provenance(),
    )
    data = json.loads((ws.root / out.path).read_text())
    manifest = load_manifest(ws.manifest)
    assert data["spec"] == json.loads(json.dumps(resolved_target(manifest, "gemv")))
    assert data["spec"]["atol"] == 1e-4 and data["spec"]["inputs"][0]["shapes"] == [[8, 8]]
    assert data["manifest_fingerprint"] == manifest_fingerprint(manifest, "gemv")
    assert data["tolerances"] == FP32_TOLERANCES
    assert read_lock(ws).records == {out.path: sha256_file(ws.root / out.path)}


def test_record_refuses_runs_judged_with_other_tolerances(tmp_path: Path) -> None:
    """Integrity item 1: a run judged with loosened tolerances (e.g. a poisoned cache) is not recorded."""
    ws = make_workspace(tmp_path)
    loose = synthetic_result("gemv", "faster", 3.367, tolerances={"atol": 1000.0, "rtol": 1e-4})
    with pytest.raises(HotkernelError, match=r"judged gemv with atol 1000.0 but hotkernel.yaml says 0.0001"):
        record(ws, "gemv", loose, note="n", who="w", provenance=provenance())
    assert not ws.results_dir.exists() and not ws.lock_file.exists()


PER_OUTPUT = [{"atol": 1e-2, "rtol": 1e-4, "rel_l2_max": 3e-5, "min_corr": 0.9999}]


def per_output_workspace(root: Path) -> tuple:
    """A workspace whose target ``gemv`` sets output 0's atol, and that target's rendered baseline sha256."""
    ws = make_workspace(root, ("gemv",))
    ws.manifest.write_text(ws.manifest.read_text() + "    output_tolerances: [{atol: 0.01}]\n")
    return ws, expected_baseline_sha256(resolved_target(load_manifest(ws.manifest), "gemv"))


def test_a_record_keeps_each_outputs_bounds_and_old_flat_ones_still_read(tmp_path: Path) -> None:
    ws, sha = per_output_workspace(tmp_path)
    tolerances = {**FP32_TOLERANCES, "rel_l2_max": 3e-5, "min_corr": 0.9999, "per_output": PER_OUTPUT}
    result = synthetic_result("gemv", "faster", 1.5, tolerances=tolerances, baseline_sha256=sha)
    out = record(ws, "gemv", result, note="n", who="w", provenance=provenance())
    data = json.loads((ws.root / out.path).read_text())
    assert data["tolerances"]["per_output"] == PER_OUTPUT
    assert data["spec"]["output_tolerances"] == [{"atol": 0.01}]
    assert load_record(ws.root / out.path).tolerances == tolerances
    old = tmp_path / "old.json"  # a record written before per-output bounds: flat floats
    old.write_text(json.dumps({**data, "tolerances": FP32_TOLERANCES}))
    assert load_record(old).tolerances == FP32_TOLERANCES


def test_record_refuses_runs_judged_with_other_output_tolerances(tmp_path: Path) -> None:
    ws, sha = per_output_workspace(tmp_path)
    loose = [{**PER_OUTPUT[0], "atol": 1.0}]
    result = synthetic_result(
        "gemv", "faster", 1.5, tolerances={**FP32_TOLERANCES, "per_output": loose}, baseline_sha256=sha
    )
    with pytest.raises(HotkernelError, match=r"judged gemv with other output_tolerances than hotkernel.yaml says"):
        record(ws, "gemv", result, note="n", who="w", provenance=provenance())


def test_a_run_that_forges_a_record_and_its_index_entry_changes_nothing(tmp_path: Path) -> None:
    """Integrity item 2 during a run: the candidate copies the best record as 50x and vouches for it in the
    index (and points the lock at it); the record written after the run is invalidated and the lock restored."""
    ws = make_workspace(tmp_path)
    honest = record(ws, "gemv", synthetic_result("gemv", "faster", 1.5), note="n", who="w", provenance=provenance())
    lock_before = ws.lock_file.read_bytes()
    before = store_snapshot(ws)
    # --- what the candidate does during its run
    data = json.loads((ws.root / honest.path).read_text())
    data["result"]["speedup"] = 50.0
    forged = ws.results_dir / "gemv" / "20991231T000000Z.json"
    forged.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    lock = read_lock(ws)
    lock.records["results/gemv/20991231T000000Z.json"] = sha256_file(forged)
    write_lock(ws, lock)
    # --- the run ends; sync records its result
    out = record(
        ws, "gemv", synthetic_result("gemv", "faster", 1.6), note="n", who="w", provenance=provenance(), before=before
    )
    assert out.tampered == ["hotkernel.lock", "results/gemv/20991231T000000Z.json"] and not out.beats_best
    assert json.loads((ws.root / out.path).read_text())["invalidated"]["reason"].startswith(
        "the run changed files only hotkernel writes (hotkernel.lock, results/gemv/20991231T000000Z.json)"
    )
    assert set(read_lock(ws).records) == {honest.path, out.path}
    assert json.loads(lock_before)["records"].items() <= read_lock(ws).records.items()
    board = ws.leaderboard.read_text()
    assert "| gemv | Synthetic Test Device | 1.500x |" in board and "50.000x" not in board
    assert [p for p, _ in scan_results(ws).unverified] == ["results/gemv/20991231T000000Z.json"]


def test_invalidate_refuses_a_file_the_index_does_not_vouch_for(tmp_path: Path) -> None:
    """Invalidating re-indexes the file: it must never launder a forged one into the index."""
    ws = make_workspace(tmp_path)
    honest = record(ws, "gemv", synthetic_result("gemv", "faster", 1.5), note="n", who="w", provenance=provenance())
    forged = ws.results_dir / "gemv" / "20991231T000000Z.json"
    forged.write_text((ws.root / honest.path).read_text())
    with pytest.raises(HotkernelError, match="not vouched for by hotkernel.lock"):
        invalidate_record(ws, "results/gemv/20991231T000000Z.json", "r")
    assert "results/gemv/20991231T000000Z.json" not in read_lock(ws).records


def test_package_versions_asks_each_interpreter_once_in_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sync writes a record per target; the interpreter is run once for all of them, and again after
    ``VERSIONS_KEPT_S``."""
    asked: list[str] = []
    monkeypatch.setattr(record_module, "_VERSIONS", {})
    monkeypatch.setattr(record_module, "_ask_versions", lambda python: asked.append(python) or {"torch": "2.13.0"})
    now = [1000.0]
    monkeypatch.setattr(record_module.time, "monotonic", lambda: now[0])
    for _ in range(3):
        assert record_module.package_versions("/usr/bin/python3") == {"torch": "2.13.0"}
    assert record_module.package_versions("/opt/other/python3") == {"torch": "2.13.0"}
    now[0] += record_module.VERSIONS_KEPT_S
    record_module.package_versions("/usr/bin/python3")
    assert asked == ["/usr/bin/python3", "/opt/other/python3", "/usr/bin/python3"]
