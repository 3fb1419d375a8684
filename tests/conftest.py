"""Suite-wide rules: tests that run the user's interpreter with torch skip, with the reason, where torch is absent."""

from __future__ import annotations

import importlib.util

import pytest

TORCH_MISSING = importlib.util.find_spec("torch") is None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.slow`` means 'runs subprocesses of this python with torch': skip those without torch."""
    if not TORCH_MISSING:
        return
    skip = pytest.mark.skip(reason="needs torch in this interpreter (pip install torch==2.13.0)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
