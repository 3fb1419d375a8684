"""Wheel build hook: the wheel carries the contract built from ``hotkernel/contract/`` (never committed)."""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

BUILT = "hotkernel/templates/hk_contract.py"


class ContractBuildHook(BuildHookInterface):  # type: ignore[misc]
    """Adds ``hotkernel/templates/hk_contract.py`` and its sources stamp to the wheel."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        # build.py is stdlib-only: load it by path, so the build needs none of hotkernel's dependencies
        spec = importlib.util.spec_from_file_location(
            "hk_contract_build", Path(self.root) / "hotkernel/contract/build.py"
        )
        assert spec is not None and spec.loader is not None
        builder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(builder)
        out = Path(tempfile.mkdtemp(prefix="hotkernel-wheel-"))
        (out / "hk_contract.py").write_text(builder.build_source(), encoding="utf-8", newline="\n")
        (out / "stamp").write_text(builder.sources_sha256() + "\n", encoding="utf-8")
        build_data["force_include"][str(out / "hk_contract.py")] = BUILT
        build_data["force_include"][str(out / "stamp")] = BUILT + builder.STAMP_SUFFIX
