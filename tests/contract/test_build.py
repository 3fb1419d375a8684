"""The vendored contract is the build of hotkernel/contract/: one file, stdlib at top level, equal everywhere."""

from __future__ import annotations

import ast
import subprocess
import sys

from hotkernel.contract import build
from hotkernel.run import render


def test_built_file_equals_the_committed_copies() -> None:
    text = build.build_source()
    for path in build.OUTPUTS:
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `python -m hotkernel.contract.build`"
    assert render.contract_source() == text


def test_built_file_has_stdlib_imports_only_and_every_module() -> None:
    text = build.build_source()
    tree = ast.parse(text)
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    modules = {alias.name.split(".")[0] for node in top if isinstance(node, ast.Import) for alias in node.names}
    modules |= {(node.module or "").split(".")[0] for node in top if isinstance(node, ast.ImportFrom)}
    assert modules <= set(sys.stdlib_module_names) | {"__future__"}, modules - set(sys.stdlib_module_names)
    for name in build.MODULES:
        if (build.PACKAGE_DIR / f"{name}.py").is_file():
            assert f" {name}.py " in text
    assert "check_outputs" in text and "tolerances" in text  # correctness.py is part of the build


def test_package_imports_nothing_else_of_hotkernel() -> None:
    for path in build.PACKAGE_DIR.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("hotkernel"):
                raise AssertionError(f"{path.name} imports {node.module}")
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("hotkernel") for a in node.names), path.name


def test_check_mode_reports_a_stale_copy(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    stale = tmp_path / "hk_contract.py"
    stale.write_text("# old\n")
    monkeypatch.setattr(build, "OUTPUTS", (stale,))
    assert build.main(["--check"]) == 1
    assert build.main([]) == 0 and build.main(["--check"]) == 0


def test_the_built_contract_runs_as_a_script() -> None:
    proc = subprocess.run([sys.executable, str(render.contract_path())], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "usage: hk_contract.py" in proc.stderr
