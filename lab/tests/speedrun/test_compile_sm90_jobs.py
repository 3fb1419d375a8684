"""lab/speedrun/compile_sm90.py has a job for every speedrun variant, and none for a variant that no longer exists.

Only the job list is compared with `check_variants.variant_index` of every target; nothing is compiled (that is
`python lab/speedrun/compile_sm90.py`, about a minute on CPU). A variant that cannot have a job must be named, with the
reason, in `compile_sm90.NO_JOB`.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("triton")  # compile_sm90 imports triton at the top

REPO = Path(__file__).resolve().parents[3]
SPEEDRUN = REPO / "lab" / "speedrun"


def _compile_sm90() -> ModuleType:
    """lab/speedrun/compile_sm90.py, imported as the script runs it: with lab/speedrun/ on sys.path while it imports
    check_variants (taken off again, so that lab/speedrun/<target>/ cannot shadow other imports)."""
    spec = importlib.util.spec_from_file_location("speedrun_compile_sm90", SPEEDRUN / "compile_sm90.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(SPEEDRUN))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(SPEEDRUN))
    return module


CS = _compile_sm90()
CV = sys.modules["check_variants"]
VARIANTS = {(target, name) for target in CV.TARGETS for name in CV.variant_index(target)}
JOBS = {(target, variant) for target, variant, *_ in CS.JOBS}


def test_every_variant_has_a_job_or_a_stated_reason() -> None:
    missing = sorted(VARIANTS - JOBS - CS.NO_JOB.keys())
    assert not missing, f"no compile_sm90 job (add one to JOBS, or the reason to NO_JOB): {missing}"


def test_no_job_names_a_variant_that_does_not_exist() -> None:
    unknown = sorted(JOBS - VARIANTS)
    assert not unknown, f"compile_sm90 jobs for variants no module has: {unknown}"
    unknown = sorted(CS.NO_JOB.keys() - VARIANTS)
    assert not unknown, f"compile_sm90.NO_JOB names variants no module has: {unknown}"


def test_no_job_entries_have_a_reason_and_no_job() -> None:
    for key, reason in CS.NO_JOB.items():
        assert key not in JOBS, f"{key} is in NO_JOB and has a job"
        assert len(reason.split()) >= 3, f"{key}: NO_JOB needs the reason"
