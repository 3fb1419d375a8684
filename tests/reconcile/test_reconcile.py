"""plan: reasons for every kind of drift; sync --check exit codes; the workspace lock. No torch runs here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from reconcile.stand_in import stand_in_executor
from reconcile.test_sync_gpus import ran_on_disk
from store.record_factory import provenance, synthetic_result

from hotkernel._util.fs import sha256_file
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest, manifest_fingerprint, resolved_target
from hotkernel.reconcile.models import SyncItem
from hotkernel.reconcile.plan import plan, plan_lines
from hotkernel.reconcile.sync import sync
from hotkernel.run.render import contract_sha256, expected_baseline_sha256, render_target
from hotkernel.run.runner import sources_digest
from hotkernel.store.leaderboard import current_protocol
from hotkernel.store.record import invalidate_record, record
from hotkernel.workspace.lockfile import LockEntry, read_lock, workspace_lock, write_lock
from hotkernel.workspace.paths import Workspace

MANIFEST = """\
version: 1
defaults:
  dtype: fp32
targets:
  alpha:
    from: ./kern.py:scale
    shapes: [64x64]
    device: cpu
  beta:
    from: ./kern.py:scale
    shapes: [32x32]
    device: cpu
  gpu_only:
    from: ./kern.py:scale
    shapes: [128x128]
"""


def _cli(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", *args], capture_output=True, text=True, env=env, cwd=root, timeout=timeout
    )


def _workspace(root: Path) -> Workspace:
    root.mkdir(parents=True, exist_ok=True)
    (root / "kern.py").write_text("def scale(x):\n    return x * 2\n", encoding="utf-8")
    (root / "hotkernel.yaml").write_text(MANIFEST, encoding="utf-8")
    return Workspace(root)


def _mark_up_to_date(ws: Workspace, device_for: dict[str, str] | None = None) -> None:
    """Render every target, record a synthetic result of each and write the lock as sync would after it."""
    manifest = load_manifest(ws.manifest)
    for name in manifest.targets:
        context = resolved_target(manifest, name)
        render_target(ws, name, context)
        device = (device_for or {}).get(name, "cpu" if context["device"] == "cpu" else "Test GPU")
        out = record(
            ws,
            name,
            ran_on_disk(synthetic_result(name, "inconclusive", device=device), ws.target_dir(name) / "candidate.py"),
            note="n",
            who="w",
            provenance=provenance(device),
        )
        lock = read_lock(ws)
        lock.targets[name] = {
            device: LockEntry(
                manifest=manifest_fingerprint(manifest, name),
                baseline_sha256=expected_baseline_sha256(context),
                candidate_sha256=sha256_file(ws.target_dir(name) / "candidate.py"),
                contract_sha256=contract_sha256(),
                device=device,
                sources_sha256=sources_digest(ws, context),
                record=out.path,
                verdict="inconclusive",
                protocol=current_protocol(),
            )
        }
        write_lock(ws, lock)


def _reasons(ws: Workspace, gpu_name: str | None = None) -> dict[str, list[str]]:
    return {item.name: item.reasons for item in plan(ws, gpu_name=gpu_name).items}


def test_new_workspace_plans_every_target_as_new(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    result = plan(ws, gpu_name=None)
    assert [(i.name, i.action, i.reasons) for i in result.items] == [
        ("alpha", "create", ["new"]),
        ("beta", "create", ["new"]),
        ("gpu_only", "create", ["new"]),
    ]
    assert plan_lines(result)[0] == "+ alpha: new"
    assert plan_lines(result)[-1] == "Plan: 3 to add, 0 to change, 0 up to date."


def test_up_to_date_then_each_kind_of_drift(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    assert _reasons(ws, "Test GPU") == {}
    assert plan_lines(plan(ws, gpu_name="Test GPU")) == ["No changes. 3 target(s) up to date."]

    candidate = ws.target_dir("alpha") / "candidate.py"
    candidate.write_text(candidate.read_text() + "\n# faster now\n")
    assert _reasons(ws, "Test GPU") == {"alpha": ["candidate changed"]}
    assert plan_lines(plan(ws, gpu_name="Test GPU"))[0] == "~ alpha: candidate changed"

    (ws.target_dir("beta") / "baseline.py").write_text("# tampered\n")
    assert _reasons(ws, "Test GPU")["beta"] == ["baseline edited (verify will say invalid; delete it to re-render)"]
    (ws.target_dir("beta") / "baseline.py").unlink()
    assert _reasons(ws, "Test GPU")["beta"] == ["baseline not rendered"]

    ws.manifest.write_text(MANIFEST.replace("[128x128]", "[256x128]"))
    assert _reasons(ws, "Test GPU")["gpu_only"] == ["manifest changed"]

    (ws.root / read_lock(ws).targets["alpha"]["cpu"].record).unlink()
    assert _reasons(ws, "Test GPU")["alpha"] == ["candidate changed", "record missing"]

    (ws.root / "kern.py").write_text("def scale(x):\n    return x * 2  # edited\n")  # the baseline's source
    assert "baseline source changed" in _reasons(ws, "Test GPU")["alpha"]


def test_contract_and_gpu_reasons(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    assert _reasons(ws, "Other GPU") == {"gpu_only": ["no record on this GPU (Other GPU)"]}
    none_here = plan(ws, gpu_name=None)  # no GPU: compared with the latest record on any GPU
    assert not none_here.items and none_here.notes
    lock = read_lock(ws)
    lock.targets["alpha"]["cpu"].contract_sha256 = "0" * 64
    write_lock(ws, lock)
    assert _reasons(ws, "Test GPU") == {"alpha": ["contract changed"]}
    ws.contract_file.write_text(ws.contract_file.read_text() + "\n# patched\n")
    reasons = _reasons(ws, "Test GPU")
    assert reasons["beta"] == ["contract edited (verify will say invalid; delete it to re-render)"]


def test_lock_is_sorted_json(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    text = ws.lock_file.read_text()
    data = json.loads(text)
    assert data["schema"] == 2 and text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    ws.lock_file.write_text("{ not json")
    with pytest.raises(HotkernelError, match="hotkernel.lock"):
        plan(ws, gpu_name=None)


def test_check_exit_codes_and_bad_manifest_changes_nothing(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    out = _cli(ws.root, "sync", "--check")
    assert out.returncode == 2 and "+ alpha: new" in out.stdout
    assert not ws.lock_file.exists() and not ws.results_dir.exists() and not ws.targets_dir.exists()
    _mark_up_to_date(ws)
    snapshot = {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file()}
    out = _cli(ws.root, "sync", "--check", "alpha", "beta")
    assert out.returncode == 0, out.stdout + out.stderr
    assert _cli(ws.root, "plan", "--json").returncode == 0
    ws.manifest.write_text(MANIFEST.replace("dtype: fp32", "dtype: bf17"))
    snapshot[ws.manifest] = ws.manifest.read_bytes()
    for args in (("sync", "--check"), ("sync",), ("plan",)):
        out = _cli(ws.root, *args)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert "hotkernel.yaml:" in out.stderr and "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    assert {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file() and ".hotkernel" not in p.parts} == {
        p: b for p, b in snapshot.items() if ".hotkernel" not in p.parts
    }


def test_unknown_target_name_is_one_line_error(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    out = _cli(ws.root, "sync", "--check", "nosuch")
    assert out.returncode == 1 and "no target named 'nosuch'" in out.stderr


def test_plan_imports_no_torch(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    code = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from hotkernel.reconcile.plan import plan
        from hotkernel.workspace.paths import Workspace
        plan(Workspace(Path({str(ws.root)!r})))
        assert "torch" not in sys.modules and "triton" not in sys.modules, "plan imported torch"
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


HOLD = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from hotkernel.errors import HotkernelError
from hotkernel.reconcile.sync import sync
from hotkernel.workspace.paths import Workspace
from reconcile.stand_in import stand_in_executor

def slow_verify(*args, **kwargs):  # stands in for a long GPU verify: holds the workspace lock meanwhile
    print("held", flush=True)
    sys.stdin.read()  # until the test closes our stdin: it lets go then
    raise HotkernelError("stand-in verify: no real run in this test")

ws = Workspace(Path(sys.argv[1]))
report = sync(ws, gpu_name="Test GPU", executor=stand_in_executor(ws, slow_verify, "Test GPU"))
print(report.items[0].status, flush=True)
"""


def test_second_sync_refuses_then_waits(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    ws.manifest.write_text(
        MANIFEST.split("  alpha:")[0] + "  gpu_only:\n    from: ./kern.py:scale\n    shapes: [128x128]\n"
    )
    tests = str(Path(__file__).resolve().parents[1])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(ws.root), tests], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    release = threading.Timer(1.0, holder.stdin.close)  # the holder's verify ends a second into the wait below
    try:
        assert holder.stdout.readline().strip() == "held"  # the first sync is inside its verify
        refused = _cli(ws.root, "sync")
        assert refused.returncode == 1
        assert f"locked by pid {holder.pid}" in refused.stderr and "`hotkernel sync`" in refused.stderr
        assert "--wait" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        with pytest.raises(HotkernelError, match="locked by"):
            sync(ws, gpu_name=None)
        start = time.monotonic()
        release.start()
        waited = sync(ws, wait_s=60, gpu_name=None)  # blocks until the holder lets go
        assert time.monotonic() - start > 0.5
        assert holder.stdout.readline().strip() == "failed"  # the first sync finished before we got in
    finally:
        release.cancel()
        if release.is_alive():
            release.join()
        holder.stdin.close()
        holder.wait(timeout=60)
    assert [(i.name, i.status) for i in waited.items] == [("gpu_only", "skipped")]
    assert waited.items[0].reason.startswith("no CUDA GPU")
    assert not waited.failed
    assert (ws.target_dir("gpu_only") / "candidate.py").is_file()  # rendered even though skipped
    assert not (ws.state_dir / "lock.info").exists()  # holder info removed on release


def test_sync_flow_failures_go_on_and_from_scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """sync over a stand-in verify: a failing target is reported, the rest are recorded and locked."""
    ws = _workspace(tmp_path)
    ran: list[str] = []

    def stand_in(ws: Workspace, baseline: Path, candidate: Path, **kwargs: object) -> object:
        name = Path(baseline).parent.name
        ran.append(name)
        if name == "beta":
            raise HotkernelError("targets/beta/baseline.py: stand-in failure")
        return ran_on_disk(synthetic_result(name, "inconclusive", device="Test CPU"), Path(candidate))

    lanes = stand_in_executor(ws, stand_in)
    monkeypatch.setenv("HOTKERNEL_WHO", "tester")
    report = sync(ws, n=3, gpu_name=None, executor=lanes)
    status = {i.name: (i.status, i.verdict) for i in report.items}
    assert status == {"alpha": ("recorded", "inconclusive"), "beta": ("failed", None), "gpu_only": ("skipped", None)}
    assert report.failed and ran == ["alpha", "beta"]
    lock = read_lock(ws)
    assert list(lock.targets) == ["alpha"] and lock.targets["alpha"]["cpu"].verdict == "inconclusive"
    pending = {i.name: i.reasons for i in plan(ws, gpu_name=None).items}
    assert pending == {"beta": ["new"], "gpu_only": ["new"]}

    ran.clear()
    again = sync(ws, ["alpha", "beta"], n=3, gpu_name=None, executor=lanes)
    assert ran == ["beta"] and [i.status for i in again.items] == ["up to date", "failed"]
    ran.clear()
    fresh = sync(ws, ["alpha"], n=3, gpu_name=None, from_scratch=True, executor=lanes)
    assert ran == ["alpha"] and fresh.items[0].status == "recorded"
    assert len(list((ws.results_dir / "alpha").glob("*.json"))) == 2  # a new record, the old one kept
    assert read_lock(ws).targets["alpha"]["cpu"].record == fresh.items[0].record


def test_invalidated_record_and_malformed_lock(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    invalidate_record(ws, read_lock(ws).targets["alpha"]["cpu"].record, "bad")
    assert _reasons(ws, "Test GPU") == {"alpha": ["record invalidated"]}
    for bad, where in (
        ('{"schema": "1", "targets": {}}', "schema"),
        ('{"schema": 1, "targets": {"a": {"cpu": "x"}}}', "targets.a.cpu"),
        ('{"schema": 1, "targets": {"a": []}}', "targets.a"),
        ("[1, 2]", "top level"),
    ):
        ws.lock_file.write_text(bad)
        with pytest.raises(HotkernelError) as err:
            plan(ws, gpu_name=None)
        message = str(err.value)
        assert message.startswith(f"hotkernel.lock: {where}") and "git checkout -- hotkernel.lock" in message


def test_a_lock_entry_outside_results_is_refused(tmp_path: Path) -> None:
    """Integrity item 2: the lock never reads outside the workspace."""
    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    data = json.loads(ws.lock_file.read_text())
    for path in (
        "../../../../etc/passwd",
        "results/alpha/../../../etc/passwd.json",
        "/etc/passwd",
        "results/beta/20260101T000000Z.json",
        "kern.py",
    ):
        data["targets"]["alpha"]["cpu"]["record"] = path
        ws.lock_file.write_text(json.dumps(data))
        with pytest.raises(
            HotkernelError,
            match=r"^hotkernel.lock: targets(\.alpha\.cpu\.record)?: .*"
            r"results/<target>/<name>.json|not under results/alpha/",
        ):
            plan(ws, gpu_name=None)
    data = json.loads(ws.lock_file.read_text())
    data["targets"]["alpha"]["cpu"]["record"] = read_lock_text_record(ws)
    data["records"] = {"../outside.json": "0" * 64}
    ws.lock_file.write_text(json.dumps(data))
    with pytest.raises(HotkernelError, match="hotkernel.lock: records"):
        plan(ws, gpu_name=None)


def read_lock_text_record(ws: Workspace) -> str:
    return sorted(p.relative_to(ws.root).as_posix() for p in (ws.results_dir / "alpha").glob("*.json"))[0]


def test_a_schema_1_lock_reads_as_protocol_1_and_makes_its_targets_out_of_date(tmp_path: Path) -> None:
    """Protocol 2: a lock entry of protocol 1 (every schema-1 entry) makes its target out of date."""
    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    data = json.loads(ws.lock_file.read_text())
    data["schema"] = 1
    for entries in data["targets"].values():
        for entry in entries.values():
            del entry["protocol"]
    ws.lock_file.write_text(json.dumps(data))
    assert read_lock(ws).targets["alpha"]["cpu"].protocol == 1
    assert _reasons(ws, "Test GPU")["alpha"] == [f"recorded with contract protocol 1 (current {current_protocol()})"]


def test_torn_state_is_reported_by_plan_and_sync_check(tmp_path: Path) -> None:
    """Integrity items 6 and 8: a truncated record, a stale board and a leftover temp file are each a line."""
    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    assert _cli(ws.root, "sync", "--check").returncode == 0
    latest = ws.root / read_lock(ws).targets["alpha"]["cpu"].record
    latest.write_text(latest.read_text()[:300])  # truncated
    board = ws.leaderboard.read_text()
    ws.leaderboard.write_text(board.replace("## All records", "## All"))  # stale
    temp = ws.results_dir / "alpha" / ".20990101T000000Z.json.x1.tmp"
    temp.write_text("{")
    result = plan(ws, gpu_name="Test GPU")
    assert result.items[0].name == "alpha" and result.items[0].reasons == ["record damaged"]
    rel = latest.relative_to(ws.root).as_posix()
    assert [line.split(":")[0] for line in result.problems] == [
        rel,
        temp.relative_to(ws.root).as_posix(),
        "LEADERBOARD.md is stale",
    ]
    for args in (("sync", "--check"), ("plan",)):
        out = _cli(ws.root, *args)
        assert out.returncode == 2 and f"! {rel}: not valid JSON" in out.stdout and "Traceback" not in out.stderr
    assert _cli(ws.root, "plan", "--json").returncode == 2
    assert "leftover temp file" in out.stdout and "~ alpha: record damaged" in out.stdout
    assert "1 to change" in out.stdout.splitlines()[-1] or "problem(s)" in out.stdout


def test_an_old_temp_file_is_removed_by_the_next_writer(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    old = ws.results_dir / "alpha" / ".20990101T000000Z.json.x1.tmp"
    young = ws.root / ".hotkernel.lock.x2.tmp"
    for path in (old, young):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{")
    os.utime(old, (time.time() - 120, time.time() - 120))
    with workspace_lock(ws):
        pass
    assert not old.exists() and young.exists()


def test_sync_on_a_fresh_clone_shows_each_target_and_the_best_rows(tmp_path: Path, capsys) -> None:
    """Papercut: an up-to-date sync says what each target stands at and what the board's best is."""
    from hotkernel.cli.commands.sync import print_report

    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    faster = record(
        ws,
        "alpha",
        ran_on_disk(synthetic_result("alpha", "faster", 1.25, device="cpu"), ws.target_dir("alpha") / "candidate.py"),
        note="n",
        who="w",
        provenance=provenance("cpu"),
    )
    lock = read_lock(ws)
    lock.targets["alpha"]["cpu"].record = faster.path
    write_lock(ws, lock)
    report = sync(ws, gpu_name=None)
    assert [i.status for i in report.items] == ["up to date"] * 3 and not report.repaired
    print_report(report, [])
    out, err = capsys.readouterr()
    assert err == ""  # results go to stdout: `hotkernel sync 2>/dev/null` shows them
    lines = out.splitlines()
    assert lines[0].startswith("alpha....... up to date; last record: faster 1.250x [1.2")
    assert lines[0].endswith(f"] on cpu ({faster.path})")
    assert lines[1].startswith("beta........ up to date; last record: inconclusive on cpu (results/beta/")
    assert lines[2].startswith("gpu_only.... up to date; last record: inconclusive on Test GPU (results/gpu_only/")
    assert lines[3] == "Sync: 3 up to date."
    assert lines[4].startswith("Best so far: no counted faster record yet")  # one faster verify is not crowned


def test_sync_says_when_a_new_best_is_inside_the_noise(tmp_path: Path, capsys) -> None:
    from hotkernel.cli.commands.sync import print_report

    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    report = sync(ws, gpu_name=None)
    items = [
        SyncItem(
            name="alpha",
            status="recorded",
            verdict="faster",
            speedup=1.3,
            interval=[1.2, 1.4],
            record="results/alpha/a.json",
            beats_best=True,
            clear_of_best=False,
        ),
        SyncItem(
            name="alpha",
            status="recorded",
            verdict="faster",
            speedup=1.28,
            interval=[1.21, 1.35],
            record="results/alpha/b.json",
            confirms="results/alpha/a.json",
        ),
        SyncItem(
            name="beta",
            status="recorded",
            verdict="inconclusive",
            speedup=1.004,
            interval=[0.99, 1.02],
            record="results/beta/b.json",
        ),
    ]
    print_report(report.model_copy(update={"items": items}), [])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith(
        "faster 1.300x [1.200, 1.400], beats the best so far (inside the two verifies' noise) (results/alpha/a.json)"
    ), lines[0]
    assert lines[1].endswith("faster 1.280x [1.210, 1.350], confirms results/alpha/a.json (results/alpha/b.json)")
    assert lines[2].endswith("recorded: inconclusive 1.004x [0.990, 1.020] (results/beta/b.json)"), lines[2]


def test_sync_rewrites_a_stale_board_and_says_so(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    ws.leaderboard.write_text("stale\n")
    report = sync(ws, gpu_name=None)
    assert report.repaired == ["LEADERBOARD.md was stale: rewritten from results/"]
    assert plan(ws, gpu_name=None).problems == []


KILLED_SYNC = """
import os, signal, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from store.record_factory import synthetic_result
from hotkernel.reconcile.sync import sync
from hotkernel.workspace.paths import Workspace

from reconcile.stand_in import stand_in_executor
from reconcile.test_sync_gpus import ran_on_disk
lanes = stand_in_executor(Workspace(Path(sys.argv[1])), lambda ws, baseline, candidate, **kw: ran_on_disk(
    synthetic_result(Path(baseline).parent.name, "slower", 0.8, device="cpu"), Path(candidate)))  # no 2nd verify
real_replace = os.replace
def replace(src, dst, *args, **kwargs):
    if Path(dst).name == sys.argv[2]:  # SIGKILL just before this file gets its new content
        os.kill(os.getpid(), signal.SIGKILL)
    return real_replace(src, dst, *args, **kwargs)
os.replace = replace
sync(Workspace(Path(sys.argv[1])), ["alpha"], n=1, gpu_name=None, executor=lanes)
"""


@pytest.mark.parametrize("killed_at", ["hotkernel.lock", "LEADERBOARD.md"])
def test_kill_9_of_sync_during_record_leaves_valid_state_and_says_what_is_torn(tmp_path: Path, killed_at: str) -> None:
    ws = _workspace(tmp_path)
    tests = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_SYNC, str(ws.root), killed_at, tests], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -9, proc.stderr
    for path in ws.results_dir.rglob("*.json"):
        json.loads(path.read_text())  # no corrupt JSON
    lock = read_lock(ws)  # no invalid lock
    (written,) = [p.relative_to(ws.root).as_posix() for p in (ws.results_dir / "alpha").glob("*.json")]
    result = plan(ws, gpu_name=None)
    if killed_at == "hotkernel.lock":  # the record exists, its index entry does not: unverified, re-run
        assert written not in lock.records and "alpha" not in lock.targets
        assert result.items[0].name == "alpha" and result.items[0].reasons == ["new"]
        assert any(line.startswith(f"{written}: unverified record") for line in result.problems)
    else:  # indexed, the board never written
        assert written in lock.records
        assert result.problems == ["LEADERBOARD.md is missing: run `hotkernel leaderboard` to regenerate it"]
        out = _cli(ws.root, "plan", "alpha")  # alpha is recorded: the board alone is out of date, plan exits 2
        assert out.returncode == 2 and out.stdout.splitlines()[-1].startswith("Plan: the board to regenerate")
        assert _cli(ws.root, "leaderboard").returncode == 0 and plan(ws, gpu_name=None).problems == []
        assert _cli(ws.root, "plan", "alpha").returncode == 0


def test_an_untouched_render_of_an_older_protocol_is_re_rendered_not_called_edited(tmp_path: Path) -> None:
    """After a protocol bump every baseline an older hotkernel rendered still counts as generated: sync replaces
    it; a hand edit of such a file is still 'edited' (left for the runner's hash check to refuse)."""
    from hotkernel.reconcile.plan import is_pristine_render
    from hotkernel.run.render import contract_module, expected_baseline

    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    context = resolved_target(load_manifest(ws.manifest), "alpha")
    baseline = ws.target_dir("alpha") / "baseline.py"
    older = expected_baseline(context, protocol=contract_module().PROTOCOL_VERSION - 1)
    assert older != baseline.read_text(encoding="utf-8")
    baseline.write_text(older, encoding="utf-8")
    assert is_pristine_render(baseline)
    reasons = {item.name: item.reasons for item in plan(ws, gpu_name=None).items}
    assert reasons["alpha"] and not any("edited" in reason for reason in reasons["alpha"]), reasons["alpha"]
    baseline.write_text(older.replace("import json\n", "import json  # slowed\n", 1), encoding="utf-8")
    assert not is_pristine_render(baseline)
    reasons = {item.name: item.reasons for item in plan(ws, gpu_name=None).items}
    assert any("edited" in reason for reason in reasons["alpha"]), reasons["alpha"]


def test_sync_output_lists_only_what_is_still_torn_after_it(tmp_path: Path, capsys) -> None:
    """A stale board that sync rewrote is reported as repaired, never as still stale."""
    from hotkernel.cli.commands.sync import print_report
    from hotkernel.store.leaderboard import store_problems

    ws = _workspace(tmp_path)
    _mark_up_to_date(ws)
    ws.leaderboard.write_text("stale\n", encoding="utf-8")
    report = sync(ws, gpu_name=None)
    assert report.plan.problems and report.repaired  # seen before, repaired by the sync
    print_report(report, store_problems(ws))
    out = capsys.readouterr().out
    assert "repaired: " in out and "\n! " not in out and not out.startswith("! ")
