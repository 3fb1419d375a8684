"""``add_targets``: many targets in one edit of hotkernel.yaml (a suite's import), byte for byte what one
``add_target`` per target writes, validated as a whole, and nothing written when any of it is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.manifest import add_target, add_targets, load_manifest
from hotkernel.manifest import edit as edit_module
from hotkernel.manifest import load as load_module

ENTRIES = {
    "neg": {"from": "torch:neg", "shapes": ["8"], "dtype": "fp32"},
    "gemv": {"from": "torch:mv", "input": "w", "shapes": ["256x256"], "extra": ["x:256"], "kwargs": {"note": "a: b"}},
    "abs": {"from": "torch:abs", "shapes": ["4x4", "8x8"], "device": "cpu"},
}

STARTS = {
    "block": "# top\nversion: 1\ntargets:\n  # first\n  one:\n    from: torch:neg\n    shapes: [8]\n\n# trailing\n",
    "empty": "version: 1\ntargets: {}  # none yet\n",
    "bare": "version: 1\ntargets:\n",
    "none": "version: 1\n",
    "flow": "version: 1\ntargets: {one: {from: 'torch:neg', shapes: [8]}}\n",
    "indented": "version: 1\ntargets:\n    one:\n        from: torch:neg\n        shapes: [8]\n",
}


@pytest.mark.parametrize("start", sorted(STARTS))
def test_one_edit_writes_what_an_edit_per_target_writes(tmp_path: Path, start: str) -> None:
    one_by_one, at_once = tmp_path / "a" / "hotkernel.yaml", tmp_path / "b" / "hotkernel.yaml"
    for path in (one_by_one, at_once):
        path.parent.mkdir()
        path.write_text(STARTS[start], encoding="utf-8")
    for name, fields in ENTRIES.items():
        add_target(one_by_one, name, fields)
    outcome = add_targets(at_once, ENTRIES)
    assert at_once.read_text(encoding="utf-8") == one_by_one.read_text(encoding="utf-8")
    assert [name for name in outcome.manifest.targets if name in ENTRIES] == list(ENTRIES)
    assert load_manifest(at_once).targets["gemv"].kwargs == {"note": "a: b"}


def test_a_new_manifest_is_created_with_its_modeline(tmp_path: Path) -> None:
    path = tmp_path / "hotkernel.yaml"
    outcome = add_targets(path, ENTRIES, schema_ref=".hotkernel/hotkernel.schema.json")
    assert outcome.created and list(load_manifest(path).targets) == list(ENTRIES)
    assert path.read_text(encoding="utf-8").startswith("# yaml-language-server: $schema=.hotkernel/")


def test_the_whole_manifest_is_read_and_validated_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # an edit per target read and validated the growing file each time: a cost with the square of the targets
    path = tmp_path / "hotkernel.yaml"
    path.write_text(STARTS["block"], encoding="utf-8")
    parsed: list[int] = []
    real_parse = load_module.parse_text
    monkeypatch.setattr(
        load_module, "parse_text", lambda text, *a, **k: parsed.append(len(text)) or real_parse(text, *a, **k)
    )
    validated: list[str] = []
    real_validate = edit_module.load_manifest_text
    monkeypatch.setattr(
        edit_module, "load_manifest_text", lambda text, *a: validated.append(text) or real_validate(text, *a)
    )
    many = {f"t{index:03d}": {"from": "torch:neg", "shapes": [str(index + 1)]} for index in range(40)}
    add_targets(path, many)
    assert len(validated) == 1 and len(load_manifest(path).targets) == 41
    assert len(parsed) <= 2  # the file as it was, the file as written (kept: the validation's parse)


@pytest.mark.parametrize(
    ("entries", "expected"),
    [
        (
            {"two": {"from": "torch:abs", "shapes": ["4"]}, "one": {"from": "torch:neg", "shapes": ["8"]}},
            "'one' already exists",
        ),
        (
            {"two": {"from": "torch:abs", "shapes": ["4"]}, "bad": {"from": "torch:neg", "shapes": ["8x"]}},
            "'8x' is not a shape",
        ),
        (
            {"two": {"from": "torch:abs", "shapes": ["4"]}, "../x": {"from": "torch:neg", "shapes": ["8"]}},
            "not allowed",
        ),
        ({"two": {"from": "torch:abs", "shapes": ["4"], "dtyp": "fp32"}}, "unknown target key 'dtyp'"),
    ],
)
def test_anything_refused_leaves_the_file_as_it_was(tmp_path: Path, entries: dict, expected: str) -> None:
    path = tmp_path / "hotkernel.yaml"
    path.write_text(STARTS["block"], encoding="utf-8")
    with pytest.raises(HotkernelError, match=expected) as caught:
        add_targets(path, entries)
    assert "\n" not in str(caught.value)
    assert path.read_text(encoding="utf-8") == STARTS["block"]
