"""``run.targets.add_targets``: many targets in one manifest edit, each checked as ``change_target`` checks one, one
that fails refused with its reason while the others land rendered; a render that fails takes its target out again."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest
from hotkernel.run import targets as targets_module
from hotkernel.run.targets import add_targets, change_target
from hotkernel.workspace.paths import Workspace

GOOD = {
    "neg": {"from": "operator:neg", "shapes": ["8x8"], "device": "cpu"},  # operator: its check imports no torch
    "pos": {"from": "operator:pos", "shapes": ["4x8"], "device": "cpu"},
}


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    monkeypatch.delenv("HOTKERNEL_WORKSPACE", raising=False)
    monkeypatch.setenv("HOTKERNEL_PYTHON", sys.executable)
    monkeypatch.chdir(tmp_path)
    return Workspace(tmp_path)


def test_the_targets_land_rendered_with_what_change_target_gives(ws: Workspace, tmp_path: Path) -> None:
    outcome = add_targets(ws, GOOD)
    assert outcome.refused == {} and [edit.target for edit in outcome.added] == ["neg", "pos"]
    assert list(load_manifest(ws.manifest).targets) == ["neg", "pos"]
    for edit in outcome.added:
        assert edit.created_manifest and edit.correctness and edit.resolved is not None
        assert (ws.target_dir(edit.target) / "baseline.py").is_file()
        assert (ws.target_dir(edit.target) / "candidate.py").is_file()
    other = Workspace(tmp_path / "one_by_one")
    other.root.mkdir()
    single = [change_target(other, name, fields) for name, fields in GOOD.items()]
    assert other.manifest.read_text(encoding="utf-8") == ws.manifest.read_text(encoding="utf-8")
    for edit, alone in zip(outcome.added, single, strict=True):
        assert edit.correctness == alone.correctness and edit.resolved == alone.resolved
        assert edit.render is not None and alone.render is not None
        assert edit.render.baseline_sha256 == alone.render.baseline_sha256


def test_an_entry_that_fails_its_checks_is_refused_and_the_others_land(ws: Workspace) -> None:
    entries = {
        **GOOD,
        "missing": {"from": "operator:no_such_function", "shapes": ["8"], "device": "cpu"},
        "badshape": {"from": "operator:neg", "shapes": ["8x"], "device": "cpu"},
    }
    outcome = add_targets(ws, entries)
    assert [edit.target for edit in outcome.added] == ["neg", "pos"]
    assert sorted(outcome.refused) == ["badshape", "missing"]
    assert "cannot import operator:no_such_function" in outcome.refused["missing"]
    assert "'8x' is not a shape" in outcome.refused["badshape"]
    assert all("\n" not in reason for reason in outcome.refused.values())
    assert list(load_manifest(ws.manifest).targets) == ["neg", "pos"]


def test_a_target_whose_render_fails_is_taken_out_again(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    real = targets_module.render_target

    def render(ws_: Workspace, name: str, resolved):
        if name == "neg":
            raise HotkernelError("render: the template could not be written (a test's failure)")
        return real(ws_, name, resolved)

    monkeypatch.setattr(targets_module, "render_target", render)
    outcome = add_targets(ws, GOOD)
    assert [edit.target for edit in outcome.added] == ["pos"]
    assert outcome.refused == {"neg": "render: the template could not be written (a test's failure)"}
    assert list(load_manifest(ws.manifest).targets) == ["pos"]


def test_an_interrupt_leaves_the_manifest_as_it_was(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    change_target(ws, "first", {"from": "operator:abs", "shapes": ["8"], "device": "cpu"})
    before = ws.manifest.read_text(encoding="utf-8")

    def render(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr(targets_module, "render_target", render)
    with pytest.raises(KeyboardInterrupt):
        add_targets(ws, GOOD)
    assert ws.manifest.read_text(encoding="utf-8") == before
