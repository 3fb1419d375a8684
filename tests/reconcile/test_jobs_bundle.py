"""A lane's private copy: a bundle of the workspace's job files unpacks whole, with tarfile's extraction filter or,
on a Python without the filters (before 3.10.12 / 3.11.4), with the same rule checked by hand."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.reconcile.jobs import bundle, unpack
from hotkernel.workspace.paths import Workspace


def _workspace(root: Path) -> Workspace:
    (root / "targets" / "t").mkdir(parents=True)
    (root / "hotkernel.yaml").write_text("version: 1\ntargets: {}\n", encoding="utf-8")
    (root / "targets" / "t" / "candidate.py").write_text("def kernel(x):\n    return x\n", encoding="utf-8")
    return Workspace(root)


def _escaping_bundle() -> bytes:
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:gz") as tar:
        body = b"x = 1\n"
        info = tarfile.TarInfo("../outside.py")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    return data.getvalue()


@pytest.mark.parametrize("filters", [True, False], ids=["with_filters", "without_filters"])
def test_a_bundle_unpacks_whole_and_an_escaping_name_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, filters: bool
) -> None:
    if not filters:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    ws = _workspace(tmp_path / "ws")
    copy = tmp_path / "copy"
    copy.mkdir()
    unpack(bundle(ws, ["hotkernel.yaml", "targets/t/candidate.py"]), copy)
    assert (copy / "targets" / "t" / "candidate.py").read_text() == "def kernel(x):\n    return x\n"
    with pytest.raises((HotkernelError, tarfile.TarError)):
        unpack(_escaping_bundle(), copy)
    assert not (tmp_path / "outside.py").exists()


def test_a_lane_import_failure_names_the_fix_only_for_a_module_the_workspace_has(tmp_path: Path) -> None:
    from store.record_factory import synthetic_result

    from hotkernel.reconcile.jobs import LaneRun, copy_hint

    (tmp_path / "helpers").mkdir()
    lane = LaneRun(result=synthetic_result("t", "invalid"), facts={"device": "NVIDIA H100 80GB HBM3"})
    inline = LaneRun(result=synthetic_result("t", "invalid"), facts=None)
    reason = "import_failed: candidate.py: ModuleNotFoundError: No module named 'helpers.fast'"
    hinted = copy_hint(reason, lane, tmp_path)
    assert hinted is not None and hinted.startswith(reason) and "lacks helpers" in hinted and "--serial" in hinted
    assert copy_hint(reason, inline, tmp_path) == reason  # in this process the whole workspace was there
    missing = "import_failed: candidate.py: ModuleNotFoundError: No module named 'einops'"
    assert copy_hint(missing, lane, tmp_path) == missing  # not in the workspace either: nothing to move
    assert copy_hint(None, lane, tmp_path) is None
