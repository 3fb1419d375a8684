"""The product's tests: the suite-wide rules of tests/suite_rules.py (torch-less skips, Ctrl-C in children), and one
torch.compile cache for the whole run."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest
from suite_rules import pytest_collection_modifyitems  # noqa: F401

INDUCTOR_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
_OWN_CACHE = pytest.StashKey[str]()  # the directory this process made (the controller, or a run without xdist)


def pytest_configure(config: pytest.Config) -> None:
    """Every test that compiles (in this process, in a judge's worker, in a CLI child) shares one Inductor cache,
    made fresh for this run. A workspace's own cache starts cold, and a first compile into a cold cache costs about
    twice one into a warm cache, even of another function (13 s of CPU against 6 s on a 2-core box). The runner
    honours a cache the user set, so the workspaces' caches stay unused; the tests of that cache delete or set
    the variable themselves (tests/run/test_compile_cache.py). xdist's workers inherit this environment."""
    if INDUCTOR_CACHE_ENV in os.environ:  # the user's, or the xdist controller's
        return
    path = tempfile.mkdtemp(prefix="hotkernel-tests-inductor-")
    os.environ[INDUCTOR_CACHE_ENV] = path
    config.stash[_OWN_CACHE] = path


def pytest_unconfigure(config: pytest.Config) -> None:
    path = config.stash.get(_OWN_CACHE, None)
    if path is not None:
        os.environ.pop(INDUCTOR_CACHE_ENV, None)
        shutil.rmtree(path, ignore_errors=True)
