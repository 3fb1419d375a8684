"""A kept record points the lock at its candidate; sync records the candidate's own WHO. No torch runs here."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from store.record_factory import provenance, synthetic_result

from hotkernel._util.fs import sha256_file
from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.reconcile.plan import plan
from hotkernel.reconcile.sync import candidate_who, keep_in_lock
from hotkernel.run.render import render_target
from hotkernel.store.record import record
from hotkernel.workspace.lockfile import read_lock, workspace_lock
from hotkernel.workspace.paths import Workspace

MANIFEST = """\
version: 1
targets:
  alpha:
    from: ./kern.py:scale
    shapes: [64x64]
    dtype: fp32
    device: cpu
"""


def _rendered(root: Path) -> Workspace:
    (root / "kern.py").write_text("def scale(x):\n    return x * 2\n", encoding="utf-8")
    (root / "hotkernel.yaml").write_text(MANIFEST, encoding="utf-8")
    ws = Workspace(root)
    render_target(ws, "alpha", resolved_target(load_manifest(ws.manifest), "alpha"))
    return ws


def _verified(sha: str | None, verdict: str = "faster", baseline_sha: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(
        verdict=verdict, candidate=SimpleNamespace(sha256=sha), baseline=SimpleNamespace(sha256=baseline_sha)
    )


def test_generated_candidate_says_hotkernel_wrote_it(tmp_path: Path) -> None:
    ws = _rendered(tmp_path)
    assert "untouched" in candidate_who(ws.targets_dir / "alpha" / "candidate.py")


def test_an_edited_candidate_that_kept_the_generated_who_names_nobody(tmp_path: Path) -> None:
    """The tour's edit changes the kernel and leaves WHO as rendered: the record must not say hotkernel wrote it
    (sync then records $HOTKERNEL_WHO or git's user.name and says the candidate declares no WHO)."""
    path = _rendered(tmp_path).targets_dir / "alpha" / "candidate.py"
    text = path.read_text(encoding="utf-8")
    assert 'WHO = "hotkernel (generated: the untouched candidate calls the baseline)"' in text
    path.write_text(text.replace("\nkernel = _baseline_kernel\n", "\nkernel = abs\n", 1), encoding="utf-8")
    assert path.read_text(encoding="utf-8") != text
    assert candidate_who(path) is None
    path.write_text(text.replace("hotkernel (generated: the untouched candidate calls the baseline)", "Ada"))
    assert candidate_who(path) == "Ada"


def test_candidate_who_reads_the_assignment_without_importing(tmp_path: Path) -> None:
    path = tmp_path / "candidate.py"
    path.write_text('raise SystemExit("never imported")\nWHO = "Ada (Claude Opus, hotkernel session)"\n')
    assert candidate_who(path) == "Ada (Claude Opus, hotkernel session)"
    path.write_text("WHO = 3\n")
    assert candidate_who(path) is None
    path.write_text("def broken(:\n")
    assert candidate_who(path) is None


def test_keep_in_lock_points_the_lock_at_the_verified_candidate(tmp_path: Path) -> None:
    ws = _rendered(tmp_path)
    candidate = ws.targets_dir / "alpha" / "candidate.py"
    assert plan(ws, gpu_name=None).items[0].reasons == ["new"]
    baseline_sha = sha256_file(ws.targets_dir / "alpha" / "baseline.py")
    verified = synthetic_result("alpha", "faster", 1.2, baseline_sha256=baseline_sha)
    kept = record(ws, "alpha", verified, note="n", who="w", provenance=provenance()).path
    assert not keep_in_lock(ws, "alpha", kept, _verified(sha256_file(candidate)), "cpu")
    assert keep_in_lock(ws, "alpha", kept, _verified(sha256_file(candidate), "faster", baseline_sha), "cpu")
    entry = read_lock(ws).targets["alpha"]["cpu"]
    assert entry.candidate_sha256 == sha256_file(candidate) and entry.record == kept
    assert plan(ws, gpu_name=None).items == []


def test_keep_in_lock_refuses_a_candidate_that_is_not_on_disk(tmp_path: Path) -> None:
    ws = _rendered(tmp_path)
    assert not keep_in_lock(ws, "alpha", "results/alpha/r.json", _verified("0" * 64), "cpu")
    assert not ws.lock_file.exists()
    baseline = ws.targets_dir / "alpha" / "baseline.py"
    baseline.write_text(baseline.read_text() + "# edited\n")
    candidate_sha = sha256_file(ws.targets_dir / "alpha" / "candidate.py")
    assert not keep_in_lock(ws, "alpha", "results/alpha/r.json", _verified(candidate_sha), "cpu")
    assert not ws.lock_file.exists()


def test_keep_in_lock_inside_a_sync_does_not_wait_for_itself(tmp_path: Path) -> None:
    ws = _rendered(tmp_path)
    candidate = sha256_file(ws.targets_dir / "alpha" / "candidate.py")
    baseline = sha256_file(ws.targets_dir / "alpha" / "baseline.py")
    with workspace_lock(ws, wait_s=0):  # what sync holds while it records
        assert keep_in_lock(ws, "alpha", "results/alpha/r.json", _verified(candidate, "faster", baseline), "cpu")
    assert read_lock(ws).targets["alpha"]["cpu"].record == "results/alpha/r.json"
