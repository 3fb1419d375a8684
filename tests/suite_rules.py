"""Rules for every test suite of the repository (tests/ and lab/tests/): tests that run the user's interpreter
with torch skip, with the reason, where torch is absent;
Ctrl-C works in the processes the tests start even when the suite itself was started with SIGINT ignored."""

from __future__ import annotations

import importlib.util
import signal

import pytest

TORCH_MISSING = importlib.util.find_spec("torch") is None

# A shell without job control starts background commands with SIGINT ignored, and an ignored signal is inherited
# across exec: the children that the Ctrl-C tests interrupt would then never see it. A handler is not inherited
# (exec resets it to the default), so installing Python's own gives every child the default disposition back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``@pytest.mark.slow`` means 'runs subprocesses of this python with torch': skip those without torch."""
    if not TORCH_MISSING:
        return
    skip = pytest.mark.skip(reason="needs torch in this interpreter (pip install torch==2.13.0)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
