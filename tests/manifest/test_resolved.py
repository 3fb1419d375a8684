"""The typed resolved target: the SPEC dict, fingerprints and renders it makes are the ones the example
workspace's records vouch for, and a SPEC read back renders as it was written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hotkernel.contract.correctness import CORRECTNESS_DEFAULT_TOLERANCES
from hotkernel.errors import HotkernelError
from hotkernel.manifest import ResolvedTarget, load_manifest, load_manifest_text, resolve_target, resolved_target
from hotkernel.run import render
from hotkernel.run.targets import TargetEdit
from hotkernel.workspace.lockfile import read_lock
from hotkernel.workspace.paths import Workspace

REPO = Path(__file__).resolve().parents[2]
SPEC_KEYS = [
    "name",
    "from",
    "reference",
    "derive",
    "derived_inputs",
    "inputs",
    "shapes",
    "dtype",
    "kwargs",
    "rotate",
    "flops",
    "bytes",
    "min_bytes",
    "atol",
    "rtol",
    "seed",
    "iters",
    "device",
]
VARIED = """\
version: 1
defaults: {seed: 3, threads: 2}
targets:
  plain:
    from: torch.nn.functional:rms_norm
    shapes: [64x128, {x: 8x128, w: 128}]
    extra: [w:128]
    kwargs: {eps: 1.0e-6}
    flops: 5
    atol: 1
  derived:
    from: ./k.py:f
    shapes: [16x16]
    extra: [w:16x16]
    derive: ./k.py:d
    inputs: [a, b]
    dtype: fp32
    device: cpu
    outputs: [b]
  kb:
    from: ./problems/kb.py
    input: a
    shapes: [{a: 4x4}]
    extra: [n, state]
    cases: [{batch_size: 4}]
    dtype: fp16
"""


@pytest.fixture(scope="module")
def varied() -> dict[str, ResolvedTarget]:
    manifest = load_manifest_text(VARIED, check_files=False)
    return {name: resolve_target(manifest, name) for name in manifest.targets}


def test_example_workspace_renders_what_its_lock_vouches_for() -> None:
    ws = Workspace(REPO)
    manifest, lock = load_manifest(ws.manifest), read_lock(ws)
    current = 0
    for name in manifest.targets:
        target = resolve_target(manifest, name)
        baseline = ws.target_dir(name) / "baseline.py"
        for entry in lock.entries(name).values():
            if entry.manifest != target.fingerprint():
                continue  # hotkernel.yaml changed since this record: plan reports it out of date
            current += 1
            assert entry.baseline_sha256 == render.expected_baseline_sha256(target)
            assert baseline.read_text(encoding="utf-8") == render.expected_baseline(target)
            assert render.contract_module().read_spec(str(baseline)) == target.spec()
    assert current >= 1, "no example target is recorded against the current hotkernel.yaml"


def test_a_committed_spec_read_back_renders_byte_for_byte() -> None:
    baselines = sorted((REPO / "targets").glob("*/baseline.py"))
    assert baselines
    for baseline in baselines:
        spec = render.contract_module().read_spec(str(baseline))
        assert render.expected_baseline(spec) == baseline.read_text(encoding="utf-8"), baseline


def test_spec_keys_in_the_order_written(varied: dict[str, ResolvedTarget]) -> None:
    assert list(varied["plain"].spec()) == SPEC_KEYS
    assert list(varied["derived"].spec()) == [*SPEC_KEYS, "outputs", "threads"]
    assert list(varied["kb"].spec()) == ["cases", *SPEC_KEYS]
    assert varied["kb"].spec()["inputs"][-1] == {"name": "state", "shapes": None}
    assert varied["plain"].spec()["inputs"][1] == {"name": "w", "shapes": [[128], [128]]}


def test_defaults_are_filled_once(varied: dict[str, ResolvedTarget]) -> None:
    plain, derived, kb = varied["plain"], varied["derived"], varied["kb"]
    assert (plain.atol, plain.rtol) == (1.0, CORRECTNESS_DEFAULT_TOLERANCES["bf16"][1])
    assert (derived.atol, derived.rtol) == CORRECTNESS_DEFAULT_TOLERANCES["fp32"]
    assert plain.bounds()["atol"] == 1.0 and kb.bounds()["rtol"] == CORRECTNESS_DEFAULT_TOLERANCES["fp16"][1]
    assert (plain.seed, plain.device, plain.threads, derived.threads) == (3, "cuda", None, 2)
    assert plain.rotate == ["x"] and derived.call_names == ["a", "b"] and kb.is_problem and not plain.is_problem


def test_every_dump_is_the_spec(varied: dict[str, ResolvedTarget]) -> None:
    for target in varied.values():
        assert ResolvedTarget.from_spec(target.spec()) == target
        edit = TargetEdit(
            target=target.name,
            manifest="m",
            created_manifest=False,
            replaced=False,
            resolved=target,
            correctness=target.bounds(),
            render=None,
        )
        assert json.dumps(edit.model_dump(mode="json")["resolved"]) == json.dumps(target.spec())
    manifest = load_manifest_text(VARIED, check_files=False)
    assert resolved_target(manifest, "kb") == varied["kb"].spec()


def test_a_spec_from_another_version_keeps_its_keys(varied: dict[str, ResolvedTarget]) -> None:
    newer = {**varied["plain"].spec(), "future_key": 1}
    assert '"future_key": 1' in render.expected_baseline(newer)
    assert render.expected_baseline(varied["plain"]) != render.expected_baseline(newer)
    assert render.call_names(newer) == ["x", "w"]


def test_render_refuses_a_spec_that_is_not_a_target(tmp_path: Path, varied: dict[str, ResolvedTarget]) -> None:
    ws = Workspace(tmp_path)
    with pytest.raises(HotkernelError, match="is not a resolved target"):
        render.render_target(ws, "plain", {"name": "plain", "dtype": "bf16"})
    with pytest.raises(HotkernelError, match="asked to render 'other'"):
        render.render_target(ws, "other", varied["plain"])
