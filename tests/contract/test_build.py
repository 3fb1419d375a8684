"""The vendored contract is the build of hotkernel/contract/: one file, stdlib at top level, equal everywhere."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest

from hotkernel.contract import build
from hotkernel.errors import HotkernelError
from hotkernel.run import render


def test_built_file_equals_the_committed_copies() -> None:
    text = build.build_source()
    assert render.contract_source() == text  # the tool's copy, built on first use
    for path in build.OUTPUTS:
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `python -m hotkernel.contract.build`"


def test_the_tools_copy_is_built_not_committed() -> None:
    root = build.REPO_ROOT
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "templates/"], cwd=root, capture_output=True, text=True).stdout
    assert "hk_contract" not in tracked
    ignored = subprocess.run(["git", "check-ignore", "-q", "templates/hk_contract.py"], cwd=root)
    assert ignored.returncode == 0


def test_ensure_built_rebuilds_only_when_the_modules_change(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "templates" / "hk_contract.py"
    assert build.ensure_built(out) == out and out.read_text(encoding="utf-8") == build.build_source()
    stamp = out.with_name(out.name + build.STAMP_SUFFIX)
    assert stamp.read_text(encoding="utf-8").strip() == build.sources_sha256()
    out.write_text("# a working copy patched on purpose\n")
    build.ensure_built(out)  # the stamp still matches the modules: the file is left as it is
    assert out.read_text(encoding="utf-8") == "# a working copy patched on purpose\n"
    monkeypatch.setattr(build, "sources_sha256", lambda: "0" * 64)  # the modules changed
    build.ensure_built(out)
    assert out.read_text(encoding="utf-8") == build.build_source()
    assert stamp.read_text(encoding="utf-8").strip() == "0" * 64


def test_an_unwritable_tools_copy_is_one_named_error(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def refuse(path):  # type: ignore[no-untyped-def]
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(build, "ensure_built", refuse)
    with pytest.raises(HotkernelError, match="cannot build hotkernel's contract at .*hk_contract.py"):
        render.contract_path()


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
