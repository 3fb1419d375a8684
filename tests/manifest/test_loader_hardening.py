"""Manifests that used to hang, crash or be misread: each is one ``hotkernel.yaml:LINE`` error, fast."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest, load_manifest_text, resolved_target
from hotkernel.manifest.load import MAX_FILE_BYTES, MAX_LINE, MAX_NODES, read_document
from hotkernel.workspace.paths import validate_target_name

HEAD = "version: 1\ntargets:\n  t:\n    from: torch:neg\n    shapes: [8x8]\n"


def _alias_bomb() -> str:
    lines = ["    kwargs:", "      a: &a [x, x, x, x, x, x, x, x, x]"]
    for index in range(1, 9):
        prev, name = chr(96 + index), chr(97 + index)
        lines.append(f"      {name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    return HEAD + "\n".join(lines) + "\n"


HOSTILE = {
    # name: (text, line of the error, words the error must contain)
    "alias bomb": (_alias_bomb(), 7, "anchors (&a) are not allowed"),
    "alias": (HEAD + "    extra: [*w]\n", 6, "aliases (*w) are not allowed"),
    "5 MB comment line": (HEAD + "# " + "x" * 5_000_000 + "\n", 1, f"over the limit of {MAX_FILE_BYTES}"),
    "long line": (HEAD + "# " + "x" * (MAX_LINE + 10) + "\n", 6, f"over the limit of {MAX_LINE}"),
    "5,000-deep flow list": (
        HEAD + "    kwargs:\n      k:\n" + "        [\n" * 5000 + "]" * 5000 + "\n",
        36,
        "nested more than 32 levels",
    ),
    "deep block list": (
        HEAD + "    kwargs:\n      k:\n" + "".join(" " * (8 + 2 * i) + "-\n" for i in range(200)),
        36,
        "nested more than 32 levels",
    ),
    "atol .inf": (HEAD + "    atol: .inf\n", 6, "targets.t.atol: inf is not a finite number"),
    "rtol .nan": (HEAD + "    rtol: .nan\n", 6, "targets.t.rtol: nan is not a finite number"),
    "flops 1e999": (HEAD + "    flops: 1e999\n", 6, "targets.t.flops: inf is not a finite number"),
    "kwarg -.inf": (HEAD + "    kwargs: {eps: -.inf}\n", 6, "not a finite number"),
    "tag": (HEAD + "    atol: !!float 1\n", 6, "tags"),
    "python tag": (HEAD + "    kwargs: {k: !!python/object:os.system ls}\n", 6, "tags"),
    "YAML 1.1 directive": ("%YAML 1.1\n---\n" + HEAD, 2, "directives"),
    "4,000-digit seed": (HEAD + "    seed: " + "9" * 4000 + "\n", 6, "too large"),
    "5,000-character string": (HEAD + "    kwargs: {k: " + "y" * 5000 + "}\n", 6, "5000 characters"),
}


def _values(lines: int) -> str:
    """HEAD with `lines` kwargs of 100 values each: 102 keys and values a line."""
    return HEAD + "    kwargs:\n" + "".join(f"      k{i}: [{', '.join(['1'] * 100)}]\n" for i in range(lines))


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_manifest_is_one_line_error(case: str) -> None:
    text, line, words = HOSTILE[case]
    with pytest.raises(HotkernelError) as caught:
        load_manifest_text(text, check_files=False)
    message = str(caught.value)
    assert "\n" not in message and len(message) < 400, message
    assert message.startswith(f"hotkernel.yaml:{line}: "), message
    assert words in message, message


def test_too_many_values_are_refused_at_the_limit_not_after_the_whole_file() -> None:
    """MAX_NODES bounds the parse: a manifest of 100,000 values (12 times the limit) is refused at the line where
    the limit is passed, and one just under the limit is not refused for its number of values. (How long the
    refusal takes against a load at the limit is lab/benchmarks/loader_limits.py.)"""
    per_line = 102
    head_nodes = 11  # version, targets, t, its mapping, from, torch:neg, shapes, the list, 8x8, kwargs, its mapping
    under = (MAX_NODES - head_nodes) // per_line
    try:
        load_manifest_text(_values(under), check_files=False)
    except HotkernelError as error:  # the kwargs themselves may be refused later: not for their number
        assert "keys and values" not in str(error), str(error)
    with pytest.raises(HotkernelError) as caught:
        load_manifest_text(_values(1000), check_files=False)
    passing_line = 6 + (MAX_NODES - head_nodes) // per_line + 1  # the line whose values pass the limit
    assert str(caught.value).startswith(f"hotkernel.yaml:{passing_line}: more than {MAX_NODES} keys and values")


@pytest.mark.parametrize("case", ["alias bomb", "5 MB comment line", "5,000-deep flow list", "atol .inf"])
def test_plan_answers_hostile_manifests_with_one_line(case: str, tmp_path: Path) -> None:
    (tmp_path / "hotkernel.yaml").write_text(HOSTILE[case][0], encoding="utf-8")
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "hotkernel", "plan"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1, (done.returncode, done.stderr[-500:])
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr[-500:]
    assert f"hotkernel.yaml:{HOSTILE[case][1]}: " in done.stderr


@pytest.mark.parametrize(
    ("shape", "written", "value"),
    [("0x5", "0x5", 5), ("0o17", "0o17", 15), ("1_000", "1_000", 1000), ("0b11", "0b11", 3), ("0xff", "0xff", 255)],
)
def test_shapes_are_read_as_written_not_as_yaml_numbers(shape: str, written: str, value: int) -> None:
    text = f"version: 1\ntargets:\n  t:\n    from: torch:neg\n    shapes: [{shape}]\n"
    with pytest.raises(HotkernelError) as caught:
        load_manifest_text(text, check_files=False)
    message = str(caught.value)
    assert message.startswith("hotkernel.yaml:5: targets.t.shapes[0]: "), message
    assert f"{written} is read by YAML as the number {value}" in message


def test_a_zero_dimension_written_as_text_is_an_error() -> None:
    text = 'version: 1\ntargets:\n  t:\n    from: torch:neg\n    shapes: ["0x5"]\n'
    with pytest.raises(HotkernelError, match=r"hotkernel.yaml:5: targets.t.shapes\[0\]: '0x5' is not a shape"):
        load_manifest_text(text, check_files=False)


def test_every_plain_shape_is_the_first_inputs_shape_at_that_entry() -> None:
    text = HEAD.replace("[8x8]", "[8x8, 16x8, 8]") + "    extra: [w:8]\n"
    resolved = resolved_target(load_manifest_text(text, check_files=False), "t")
    assert resolved["inputs"] == [
        {"name": "x", "shapes": [[8, 8], [16, 8], [8]]},
        {"name": "w", "shapes": [[8], [8], [8]]},
    ]
    assert resolved["shapes"] == ["8x8", "16x8", "8"]


@pytest.mark.parametrize("name", ["sm\n", "sm\r\n", "a" * 65, "a b", "../x", "x\x00"])
def test_target_names_have_no_trailing_newline_hole(name: str) -> None:
    text = f"version: 1\ntargets:\n  {name!r}:\n    from: torch:neg\n    shapes: [8]\n".replace("'", '"')
    with pytest.raises(HotkernelError, match=r"hotkernel.yaml:3: .*target name is not allowed"):
        load_manifest_text(text, check_files=False)
    with pytest.raises(HotkernelError, match="is not allowed"):
        validate_target_name(name)


def test_a_file_over_the_limit_is_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "hotkernel.yaml"
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(HEAD)
        handle.write("#" * (64 << 20))  # 64 MiB
    with pytest.raises(HotkernelError, match=f"over the limit of {MAX_FILE_BYTES}"):
        load_manifest(path)


def test_errors_quote_at_most_about_200_characters_of_a_bad_value() -> None:
    huge = "q" * 3000
    for text in (
        HEAD.replace("torch:neg", huge),
        HEAD.replace("[8x8]", f"[{huge}]"),
        HEAD + f"    dtype: {huge}\n",
        HEAD + f"    {huge[:3000]}: 1\n",
    ):
        with pytest.raises(HotkernelError) as caught:
            load_manifest_text(text, check_files=False)
        assert len(str(caught.value)) < 700, str(caught.value)[:300]


def test_a_second_read_of_the_same_text_is_a_fresh_copy_and_an_edit_is_read(tmp_path: Path) -> None:
    """``read_document`` keeps the parse of a text in the process: a read after an edit parses the new text, and
    what one read returns is its own (a caller that changes it changes no later read)."""
    path = tmp_path / "hotkernel.yaml"
    path.write_text(HEAD)
    read_document(HEAD, "hotkernel.yaml")["targets"]["t"]["shapes"].append("1x1")
    assert read_document(HEAD, "hotkernel.yaml")["targets"]["t"]["shapes"] == ["8x8"]
    assert load_manifest(path).targets["t"].shapes == ["8x8"]
    path.write_text(HEAD.replace("8x8", "16x16"))
    assert load_manifest(path).targets["t"].shapes == ["16x16"]
    path.write_text(HEAD + "    bogus: 1\n")
    with pytest.raises(HotkernelError, match="hotkernel.yaml:6"):
        load_manifest(path)


def test_an_edit_parses_each_manifest_text_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit reads the old text, splices, validates the new one and reads it back: the new text is parsed once
    and kept for the next edit, so adding N targets parses N + 1 texts (an import of a suite parsed its growing
    manifest four times per target: lab/benchmarks/evidence/performance/import_parse_cpu_20261207.txt)."""
    from hotkernel.manifest import add_target
    from hotkernel.manifest import load as load_module

    path = tmp_path / "hotkernel.yaml"
    path.write_text(HEAD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(load_module, "_READ_DOCUMENTS", {})  # no parse kept from another test
    parsed: list[str] = []
    real = load_module.parse_text
    monkeypatch.setattr(load_module, "parse_text", lambda text, display: parsed.append(text) or real(text, display))
    for index in range(3):
        add_target(path, f"t{index}", {"from": "torch:neg", "shapes": ["4x4"]})
    assert len(parsed) == 4 and len(set(parsed)) == 4, len(parsed)
    assert sorted(load_manifest(path).targets) == ["t", "t0", "t1", "t2"]
