"""hotkernel.yaml: loading, one-line FILE:LINE errors, the render context, and minimal-diff edits."""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.manifest import (
    DEFAULT_TOLERANCES,
    add_target,
    load_manifest,
    load_manifest_text,
    manifest_fingerprint,
    remove_target,
    resolved_target,
    update_target,
)

REPO = Path(__file__).resolve().parents[2]

GOOD = """\
# yaml-language-server: $schema=schemas/hotkernel.schema.json
version: 1
# workspace defaults
defaults:
  n: 5

targets:
  # the headline target
  rmsnorm:
    from: ./kernels/rms.py:rms_norm   # the baseline
    shapes: [4096x8192, {x: 1x8192}]
    extra: [w:8192]
    dtype: bfloat16
    kwargs: {eps: 1e-6}

  softmax:
    from: torch:softmax
    shapes: [64x128]
    kwargs:
      dim: -1
    device: cpu
# trailing comment
"""


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # errors name the manifest relative to the cwd
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "rms.py").write_text(
        "import torch\n\n\ndef rms_norm(x, w, *, eps=1e-6):\n    return x\n", encoding="utf-8"
    )
    (tmp_path / "hotkernel.yaml").write_text(GOOD, encoding="utf-8")
    return tmp_path


def error_of(text: str, root: Path) -> str:
    (root / "hotkernel.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(HotkernelError) as caught:
        load_manifest(root / "hotkernel.yaml")
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def test_good_manifest_loads_with_aliases_normalised(workspace: Path) -> None:
    manifest = load_manifest(workspace / "hotkernel.yaml")
    assert list(manifest.targets) == ["rmsnorm", "softmax"]
    assert manifest.targets["rmsnorm"].dtype == "bf16"
    assert manifest.defaults.n == 5
    assert manifest.root == workspace.resolve()


BAD_CASES = [
    # (replace this, with that, expected line, expected text)
    (
        "dtype: bfloat16",
        "dtype: bf17",
        13,
        "targets.rmsnorm.dtype: 'bf17' is not allowed; use one of bf16, fp16, fp32, fp8_e4m3, fp8_e5m2",
    ),
    ("dtype: bfloat16", "dtyp: bf16", 13, "targets.rmsnorm.dtyp: unknown key; did you mean 'dtype'?"),
    (
        "[4096x8192, {x",
        "[4096xx, {x",
        11,
        "targets.rmsnorm.shapes[0]: '4096xx' is not a shape; write positive "
        "dimensions separated by 'x', e.g. 4096x8192",
    ),
    (
        "rms.py:rms_norm",
        "missing.py:rms_norm",
        10,
        "targets.rmsnorm.from: file './kernels/missing.py' not found",
    ),
    (
        "rms.py:rms_norm",
        "rms.py:rms_nrom",
        10,
        "./kernels/rms.py defines no function 'rms_nrom'; did you mean 'rms_norm'?",
    ),
    ("  softmax:", "  a/b:", 16, "targets.a/b: target name is not allowed"),
    ("  softmax:", "  ..:", 16, "targets...: target name is not allowed"),
    (
        "from: torch:softmax",
        "from: torch softmax",
        17,
        "targets.softmax.from: 'torch softmax' is not a function reference; write module:function",
    ),
    (
        "extra: [w:8192]",
        "extra: [w8192]",
        12,
        "targets.rmsnorm.extra: 'w8192' is not an extra input; write name:shape, e.g. w:8192",
    ),
    (
        "shapes: [64x128]",
        "shapes: 64x128",
        18,
        "targets.softmax.shapes: expected a list, got '64x128'; write shapes: [64x128]",
    ),
    ("device: cpu", "device: tpu", 21, "targets.softmax.device: 'tpu' is not allowed; use one of cuda, cpu"),
    ("version: 1", "version: 2", 2, "version: 2 is not allowed; use 1"),
    ("  n: 5", "  n: 0", 5, "defaults.n: Input should be greater than or equal to 1"),
    (
        "    kwargs:\n      dim: -1",
        "    rotate: [y]",
        19,
        "targets.softmax.rotate[0]: 'y' is not an input of this target; inputs: x",
    ),
    ("    from: torch:softmax\n", "", 16, "targets.softmax.from: 'from' is required"),
    ("{x: 1x8192}", "{q: 1x8192}", 11, "targets.rmsnorm.shapes[1]: 'q' is not an input of this target"),
    ("{x: 1x8192}", "4096x8192", 11, "targets.rmsnorm.shapes[1]: shape 4096x8192 is listed twice"),
    (
        "    device: cpu",
        "    derive: torch:foo",
        21,
        "targets.softmax.derive: derive and inputs go together; add 'inputs'",
    ),
    (
        "  n: 5",
        "  n: [5",
        7,
        "YAML syntax error: expected ',' or ']', but got ':' (while parsing a flow sequence at line 5)",
    ),
]


@pytest.mark.parametrize(("old", "new", "line", "expected"), BAD_CASES)
def test_bad_input_is_one_line_naming_file_line_key_and_fix(
    workspace: Path, old: str, new: str, line: int, expected: str
) -> None:
    assert old in GOOD
    message = error_of(GOOD.replace(old, new, 1), workspace)
    assert re.match(rf"^hotkernel\.yaml:{line}: ", message), message
    assert expected in message


def test_error_path_is_relative_to_cwd_when_inside(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workspace)
    with pytest.raises(HotkernelError, match=r"^sub/hotkernel\.yaml:2: version"):
        (workspace / "sub").mkdir()
        (workspace / "sub" / "hotkernel.yaml").write_text("targets: {}\nversion: 3\n", encoding="utf-8")
        load_manifest("sub/hotkernel.yaml")


def test_several_problems_report_the_first_and_count_the_rest(workspace: Path) -> None:
    text = GOOD.replace("dtype: bfloat16", "dtype: bf17").replace("device: cpu", "device: tpu")
    message = error_of(text, workspace)
    assert message.startswith("hotkernel.yaml:13: targets.rmsnorm.dtype") and "(and 1 more problem)" in message


def test_missing_and_empty_manifest(tmp_path: Path) -> None:
    with pytest.raises(HotkernelError, match="not found: run `hotkernel new"):
        load_manifest(tmp_path / "hotkernel.yaml")
    (tmp_path / "hotkernel.yaml").write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(HotkernelError, match="manifest is empty"):
        load_manifest(tmp_path / "hotkernel.yaml")


def test_resolved_target_fills_every_default(workspace: Path) -> None:
    manifest = load_manifest(workspace / "hotkernel.yaml")
    resolved = resolved_target(manifest, "rmsnorm")
    assert resolved == {
        "name": "rmsnorm",
        "from": "./kernels/rms.py:rms_norm",
        "reference": None,
        "derive": None,
        "derived_inputs": None,
        "inputs": [
            {"name": "x", "shapes": [[4096, 8192], [1, 8192]]},
            {"name": "w", "shapes": [[8192], [8192]]},
        ],
        "shapes": ["4096x8192", "1x8192"],
        "dtype": "bf16",
        "kwargs": {"eps": 1e-6},
        "rotate": ["x"],
        "flops": None,
        "bytes": None,
        "min_bytes": None,
        "atol": 0.02,
        "rtol": 0.02,
        "seed": None,
        "iters": None,
        "device": "cuda",
    }
    assert json.loads(json.dumps(resolved)) == resolved
    softmax = resolved_target(manifest, "softmax")
    assert softmax["device"] == "cpu" and softmax["kwargs"] == {"dim": -1}
    assert type(softmax["kwargs"]["dim"]) is int


def test_defaults_are_inherited_and_tolerances_follow_dtype() -> None:
    manifest = load_manifest_text(
        "version: 1\ndefaults: {dtype: fp16, device: cpu, seed: 7, iters: 50}\n"
        "targets:\n  a: {from: 'torch:neg', shapes: [8]}\n  b: {from: 'torch:neg', shapes: [8], dtype: fp32,"
        " atol: 0.5, seed: 1}\n",
        check_files=False,
    )
    a, b = resolved_target(manifest, "a"), resolved_target(manifest, "b")
    assert (a["dtype"], a["device"], a["seed"], a["iters"]) == ("fp16", "cpu", 7, 50)
    assert (a["atol"], a["rtol"]) == DEFAULT_TOLERANCES["fp16"]
    assert (b["dtype"], b["atol"], b["rtol"], b["seed"]) == ("fp32", 0.5, DEFAULT_TOLERANCES["fp32"][1], 1)


def test_shape_mapping_labels_and_derive_context() -> None:
    manifest = load_manifest_text(
        "version: 1\ntargets:\n  q4:\n    from: m:f\n    shapes: [1x64, {w: 32x64, x: 1x32}, {w: 16x64}]\n"
        "    extra: [w:64x64]\n    derive: m:pack\n    inputs: [x, wq, sz]\n    rotate: [w]\n",
        check_files=False,
    )
    resolved = resolved_target(manifest, "q4")
    assert resolved["shapes"] == ["1x64", "x=1x32,w=32x64", "w=16x64"]
    assert resolved["inputs"] == [
        {"name": "x", "shapes": [[1, 64], [1, 32], [1, 64]]},
        {"name": "w", "shapes": [[64, 64], [32, 64], [16, 64]]},
    ]
    assert resolved["derive"] == "m:pack" and resolved["derived_inputs"] == ["x", "wq", "sz"]
    assert resolved["rotate"] == ["w"]


def test_unknown_target_names_the_known_ones(workspace: Path) -> None:
    manifest = load_manifest(workspace / "hotkernel.yaml")
    with pytest.raises(HotkernelError, match="no target 'rmsnrom'.*did you mean 'rmsnorm'"):
        resolved_target(manifest, "rmsnrom")


def test_fingerprint_changes_with_the_entry_only(workspace: Path) -> None:
    path = workspace / "hotkernel.yaml"
    before = load_manifest(path)
    prints = {name: manifest_fingerprint(before, name) for name in before.targets}
    assert all(re.fullmatch(r"[0-9a-f]{64}", value) for value in prints.values())
    path.write_text(GOOD.replace("# the baseline", "# reworded").replace("n: 5", "n: 9"), encoding="utf-8")
    assert manifest_fingerprint(load_manifest(path), "rmsnorm") == prints["rmsnorm"]
    path.write_text(GOOD.replace("eps: 1e-6", "eps: 1e-5"), encoding="utf-8")
    after = load_manifest(path)
    assert manifest_fingerprint(after, "rmsnorm") != prints["rmsnorm"]
    assert manifest_fingerprint(after, "softmax") == prints["softmax"]


def changed_lines(before: str, after: str) -> list[str]:
    """The lines a unified diff marks as removed or added."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def test_add_target_appends_only_the_new_entry(workspace: Path) -> None:
    path = workspace / "hotkernel.yaml"
    add_target(
        path,
        "gemv",
        {
            "from": "torch:mv",
            "input": "w",
            "shapes": ["256x256"],
            "extra": ["x:256"],
            "kwargs": {"note": "a: b # c"},
        },
    )
    after = path.read_text(encoding="utf-8")
    assert after.startswith(GOOD.rstrip("\n").removesuffix("# trailing comment"))
    assert changed_lines(GOOD, after) == [
        "+  gemv:",
        "+    from: torch:mv",
        "+    input: w",
        "+    shapes: [256x256]",
        "+    extra: [x:256]",
        '+    kwargs: {note: "a: b # c"}',
    ]
    assert after.endswith("# trailing comment\n")
    spec = load_manifest(path).targets["gemv"]
    assert spec.kwargs == {"note": "a: b # c"} and spec.input == "w"


def test_update_target_rewrites_only_the_touched_keys(workspace: Path) -> None:
    path = workspace / "hotkernel.yaml"
    update_target(path, "rmsnorm", {"dtype": "fp16", "atol": 0.01, "kwargs": None})
    after = path.read_text(encoding="utf-8")
    assert changed_lines(GOOD, after) == [
        "-    dtype: bfloat16",
        "-    kwargs: {eps: 1e-6}",
        "+    dtype: fp16",
        "+    atol: 0.01",
    ]
    resolved = resolved_target(load_manifest(path), "rmsnorm")
    assert resolved["dtype"] == "fp16" and resolved["atol"] == 0.01 and resolved["kwargs"] == {}


def test_update_of_a_block_value_replaces_all_its_lines(workspace: Path) -> None:
    path = workspace / "hotkernel.yaml"
    update_target(path, "softmax", {"kwargs": {"dim": 0}})
    assert changed_lines(GOOD, path.read_text(encoding="utf-8")) == [
        "-    kwargs:",
        "-      dim: -1",
        "+    kwargs: {dim: 0}",
    ]


def test_replace_and_remove_keep_the_rest_byte_identical(workspace: Path) -> None:
    path = workspace / "hotkernel.yaml"
    add_target(path, "softmax", {"from": "torch:softmax", "shapes": [32]}, replace=True)
    assert changed_lines(GOOD, path.read_text(encoding="utf-8")) == [
        "-    shapes: [64x128]",
        "-    kwargs:",
        "-      dim: -1",
        "-    device: cpu",
        "+    shapes: [32]",
    ]
    remove_target(path, "softmax")
    after = path.read_text(encoding="utf-8")
    assert "softmax" not in after and "# trailing comment" in after and "# the headline target" in after
    assert all(line.startswith("-") for line in changed_lines(GOOD, after))
    remove_target(path, "rmsnorm")
    assert load_manifest(path).targets == {}
    add_target(path, "again", {"from": "torch:neg", "shapes": ["8"]})
    assert list(load_manifest(path).targets) == ["again"]


def test_existing_name_without_replace_is_refused(workspace: Path) -> None:
    with pytest.raises(HotkernelError, match="already exists.*add --force"):
        add_target(workspace / "hotkernel.yaml", "rmsnorm", {"from": "torch:neg", "shapes": ["8"]})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"from": "torch:neg", "shapes": ["8x"]}, "'8x' is not a shape"),
        ({"from": "./kernels/nope.py:f", "shapes": ["8"]}, "'./kernels/nope.py' not found"),
        (
            {"from": "torch:neg", "shapes": ["8"], "dtyp": "bf16"},
            "unknown target key 'dtyp'; did you mean 'dtype'",
        ),
    ],
)
def test_invalid_edit_leaves_the_manifest_untouched(workspace: Path, fields: dict, expected: str) -> None:
    path = workspace / "hotkernel.yaml"
    with pytest.raises(HotkernelError, match=re.escape(expected)):
        add_target(path, "bad", fields)
    assert path.read_text(encoding="utf-8") == GOOD
    assert [p.name for p in workspace.iterdir() if p.name.startswith(".hotkernel.yaml")] == []


def test_target_name_with_path_parts_is_refused_on_edit(workspace: Path) -> None:
    for name in ("../evil", "a/b", "..", "x y"):
        with pytest.raises(HotkernelError, match="not allowed"):
            add_target(workspace / "hotkernel.yaml", name, {"from": "torch:neg", "shapes": ["8"]})
    assert (workspace / "hotkernel.yaml").read_text(encoding="utf-8") == GOOD


def test_edits_work_on_flow_style_and_empty_targets(tmp_path: Path) -> None:
    path = tmp_path / "hotkernel.yaml"
    path.write_text("version: 1\ntargets: {}  # none yet\n", encoding="utf-8")
    add_target(path, "a", {"from": "torch:neg", "shapes": ["8"]})
    assert path.read_text(encoding="utf-8") == (
        "version: 1\ntargets:  # none yet\n  a:\n    from: torch:neg\n    shapes: [8]\n"
    )
    path.write_text("version: 1\ntargets:\n    a: {from: 'torch:neg', shapes: [8]}\n", encoding="utf-8")
    update_target(path, "a", {"dtype": "fp32"})
    add_target(path, "b", {"from": "torch:abs", "shapes": ["4"]})
    manifest = load_manifest(path)
    assert manifest.targets["a"].dtype == "fp32" and list(manifest.targets) == ["a", "b"]
    assert "    b:\n" in path.read_text(encoding="utf-8")  # follows the file's own indentation


def test_repository_manifest_is_valid_and_has_a_cpu_target() -> None:
    manifest = load_manifest(REPO / "hotkernel.yaml")
    assert (
        (REPO / "hotkernel.yaml")
        .read_text(encoding="utf-8")
        .startswith("# yaml-language-server: $schema=schemas/hotkernel.schema.json\n")
    )
    expected = {"rmsnorm", "softmax", "gemv", "decode_attention", "int4_gemv"}
    assert expected <= set(manifest.targets)
    assert any(resolved_target(manifest, name)["device"] == "cpu" for name in manifest.targets)
    for name in expected:
        resolved = resolved_target(manifest, name)
        assert resolved["dtype"] == "bf16" and resolved["flops"] and resolved["bytes"]
    int4 = resolved_target(manifest, "int4_gemv")
    assert int4["derive"] and int4["reference"] and int4["derived_inputs"] == ["x", "w_int4", "scales_and_zeros"]


def test_repository_byte_counts_match_the_shapes() -> None:
    """bytes in the root manifest = inputs + outputs at 2 bytes per element (the YAML comments say how)."""
    manifest = load_manifest(REPO / "hotkernel.yaml")

    def elements(shape: list[int]) -> int:
        total = 1
        for dim in shape:
            total *= dim
        return total

    for name, output_shape in (
        ("rmsnorm", [4096, 8192]),
        ("softmax", [4096, 8192]),
        ("gemv", [8192]),
        ("decode_attention", [1, 32, 1, 128]),
    ):
        resolved = resolved_target(manifest, name)
        inputs = sum(elements(item["shapes"][0]) for item in resolved["inputs"])
        assert resolved["bytes"] == 2 * (inputs + elements(output_shape)), name
    int4 = resolved_target(manifest, "int4_gemv")
    n = k = 8192
    assert int4["bytes"] == n * k // 2 + (k // 128) * n * 2 * 2 + 2 * k + 2 * n


def test_no_file_a_candidate_can_write_changes_the_loaded_manifest(workspace: Path) -> None:
    """A cache under .hotkernel/ (the old manifest-cache.json, identity and all) is never read: the yaml rules."""
    import hashlib

    import hotkernel.manifest as manifest_module

    path = workspace / "hotkernel.yaml"
    text = path.read_text(encoding="utf-8")
    first = load_manifest(path)
    assert not (workspace / ".hotkernel" / "tmp" / "manifest-cache.json").exists()
    data = first.model_dump(mode="json", by_alias=True, exclude_unset=True)
    for spec in data["targets"].values():
        spec["atol"] = spec["rtol"] = 1000.0
    module = Path(manifest_module.__file__).stat()
    forged = {
        "identity": {
            "format": 1,
            "module": [module.st_mtime_ns, module.st_size],
            "manifest_sha256": hashlib.sha256(text.encode()).hexdigest(),
            "root": str(workspace.resolve()),
        },
        "files": {},
        "data": data,
    }
    cache = workspace / ".hotkernel" / "tmp" / "manifest-cache.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(forged), encoding="utf-8")
    again = load_manifest(path)
    for name in first.targets:
        assert resolved_target(again, name)["atol"] == resolved_target(first, name)["atol"] != 1000.0
        assert manifest_fingerprint(again, name) == manifest_fingerprint(first, name)


def test_python_keywords_are_refused_as_names(tmp_path) -> None:
    from hotkernel.errors import HotkernelError
    from hotkernel.manifest import load_manifest

    (tmp_path / "k.py").write_text("def f(x):\n    return x\n")
    for line in ("    kwargs: {lambda: 1}", "    extra: [class:8]", "    input: def"):
        (tmp_path / "hotkernel.yaml").write_text(
            "version: 1\ntargets:\n  t:\n    from: ./k.py:f\n    shapes: [8x8]\n    dtype: fp32\n" + line + "\n"
        )
        with pytest.raises(HotkernelError, match=r"hotkernel.yaml:7: .*keyword"):
            load_manifest(tmp_path / "hotkernel.yaml")
