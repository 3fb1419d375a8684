"""The JSON schema of ``hotkernel.yaml``, generated from the pydantic models in ``manifest.py``.

The committed copy lives at ``schemas/hotkernel.schema.json`` (shipped in the wheel as
``hotkernel/schemas/hotkernel.schema.json``); a test fails when it is stale. Regenerate it with
``python -m hotkernel.manifest.schema``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from hotkernel.manifest.model import Manifest

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
SCHEMA_FILE_NAME = "hotkernel.schema.json"
PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the hotkernel package


def manifest_json_schema() -> dict[str, Any]:
    """The schema editors use for completion and validation of ``hotkernel.yaml``."""
    schema = Manifest.model_json_schema(by_alias=True, mode="validation")
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": "https://hotkernel.dev/schemas/hotkernel.schema.json",
        "title": "hotkernel.yaml",
        **{key: value for key, value in schema.items() if key != "title"},
    }


def schema_text() -> str:
    """The exact bytes of the committed schema file: sorted keys, two-space indent, trailing newline."""
    return json.dumps(manifest_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schema(path: str | os.PathLike[str]) -> Path:
    """Write the schema to ``path`` (normally ``schemas/hotkernel.schema.json``) and return the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(schema_text(), encoding="utf-8")
    return target


def packaged_schema_path() -> Path:
    """Where the installed schema file is: in the wheel's package, else the checkout's ``schemas/``."""
    in_package = PACKAGE_DIR / "schemas" / SCHEMA_FILE_NAME
    if in_package.is_file():
        return in_package
    return PACKAGE_DIR.parent / "schemas" / SCHEMA_FILE_NAME


WORKSPACE_SCHEMA = Path("schemas") / SCHEMA_FILE_NAME
INIT_SCHEMA = Path(".hotkernel") / SCHEMA_FILE_NAME  # the copy `hotkernel init` writes


def schema_reference(workspace_root: str | os.PathLike[str]) -> str | None:
    """The modeline path of the schema for a manifest in ``workspace_root``: the workspace's own
    ``schemas/hotkernel.schema.json`` or the copy ``hotkernel init`` wrote (``.hotkernel/hotkernel.schema.json``)
    when it has one, else None (no path into wherever hotkernel is installed: the manifest is committed and read
    on other machines)."""
    for path in (WORKSPACE_SCHEMA, INIT_SCHEMA):
        if (Path(workspace_root) / path).is_file():
            return path.as_posix()
    return None


if __name__ == "__main__":
    written = write_schema(sys.argv[1] if len(sys.argv) > 1 else PACKAGE_DIR.parent / "schemas" / SCHEMA_FILE_NAME)
    print(f"wrote {written}")
