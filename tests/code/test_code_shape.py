"""The package's shape: no module past 600 lines (split a cohesive part into a module of its own instead)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "hotkernel"
MAX_MODULE_LINES = 600


def test_no_module_is_over_600_lines() -> None:
    sizes = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in PACKAGE.rglob("*.py")}
    assert len(sizes) > 50  # the package itself was found
    over = {str(path.relative_to(PACKAGE.parent)): n for path, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not over, f"modules over {MAX_MODULE_LINES} lines: {over}"
