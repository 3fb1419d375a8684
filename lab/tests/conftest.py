"""The lab's tests: the suite-wide rules of tests/suite_rules.py (torch-less skips, Ctrl-C in children)."""

from suite_rules import pytest_collection_modifyitems  # noqa: F401
