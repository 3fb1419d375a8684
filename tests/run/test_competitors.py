"""Competitor scripts: names, who, the rendered text, and re-rendering a stale or edited copy."""

from __future__ import annotations

import ast
from pathlib import Path

from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.manifest.model import COMPETITOR_WORDS
from hotkernel.run.competitors import (
    COMPILE_MODES,
    competitor_path,
    competitor_slug,
    competitor_sources_sha256,
    competitor_who,
    expected_competitor,
    expected_competitor_sha256,
    render_competitor,
)
from hotkernel.workspace.paths import Workspace

MANIFEST = "version: 1\ntargets:\n  t:\n    from: ./k.py:f\n    shapes: [8x8]\n    dtype: fp32\n    device: cpu\n"


def _ws(root: Path) -> tuple[Workspace, dict]:
    (root / "lib").mkdir(parents=True)
    (root / "k.py").write_text("def f(x):\n    return x\n", encoding="utf-8")
    (root / "lib" / "other.py").write_text("def g(x):\n    return x\n", encoding="utf-8")
    (root / "hotkernel.yaml").write_text(MANIFEST, encoding="utf-8")
    ws = Workspace(root)
    return ws, resolved_target(load_manifest(ws.manifest), "t")


def test_every_compile_word_has_a_mode_and_names() -> None:
    assert set(COMPILE_MODES) == set(COMPETITOR_WORDS)
    assert competitor_slug("compile-max-autotune") == "compile_max_autotune"
    assert competitor_slug("./lib/other.py:g") == "lib_other_py_g"
    long_a, long_b = "./" + "a" * 60 + ".py:f", "./" + "a" * 60 + ".py:g"
    assert len(competitor_slug(long_a)) <= 48 and competitor_slug(long_a) != competitor_slug(long_b)
    assert competitor_who("compile-reduce-overhead") == "torch.compile (reduce-overhead)"
    assert competitor_who("./lib/other.py:g") == "./lib/other.py:g"


def test_rendered_scripts_compile_the_baseline_or_load_the_function(tmp_path: Path) -> None:
    ws, resolved = _ws(tmp_path / "ws")
    compiled = expected_competitor(resolved, "compile-max-autotune")
    ast.parse(compiled)
    assert 'torch.compile(hk_contract.load_function("./k.py:f"' in compiled and 'mode="max-autotune"' in compiled
    assert 'WHO = "torch.compile (max-autotune)"' in compiled and "hk_contract.main(__file__)" in compiled
    function = expected_competitor(resolved, "./lib/other.py:g")
    ast.parse(function)
    assert 'kernel = hk_contract.load_function("./lib/other.py:g"' in function and "torch.compile(" not in function
    assert competitor_path(ws, "t", "compile") == ws.root / "targets" / "t" / "competitor_compile.py"


def test_render_rewrites_an_edited_copy_and_hashes_follow_the_sources(tmp_path: Path) -> None:
    ws, resolved = _ws(tmp_path / "ws")
    path = render_competitor(ws, "t", resolved, "compile")
    text = path.read_text()
    path.write_text(text + "# edited\n")
    assert render_competitor(ws, "t", resolved, "compile").read_text() == text
    modes = {expected_competitor_sha256(resolved, word) for word in COMPETITOR_WORDS}
    assert len(modes) == len(COMPETITOR_WORDS)
    before = competitor_sources_sha256(ws, resolved, "./lib/other.py:g")
    compiled_before = competitor_sources_sha256(ws, resolved, "compile")
    (ws.root / "lib" / "other.py").write_text("def g(x):\n    return x + 0\n", encoding="utf-8")
    assert competitor_sources_sha256(ws, resolved, "./lib/other.py:g") != before
    assert competitor_sources_sha256(ws, resolved, "compile") == compiled_before  # lib/ is not the baseline's
