"""The committed JSON schema is generated from the models, is valid 2020-12, and accepts the root manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from ruamel.yaml import YAML

from hotkernel.manifest.schema import (
    manifest_json_schema,
    packaged_schema_path,
    schema_reference,
    schema_text,
    write_schema,
)

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "schemas" / "hotkernel.schema.json"


def test_committed_schema_is_up_to_date() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == schema_text(), (
        "schemas/hotkernel.schema.json is stale: run `python -m hotkernel.manifest.schema` and commit the result"
    )


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = manifest_json_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    target = schema["$defs"]["TargetSpec"]
    assert target["additionalProperties"] is False
    assert {"from", "shapes", "bytes"} <= set(target["properties"])
    assert all(prop.get("description") for prop in target["properties"].values())


def validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(COMMITTED.read_text(encoding="utf-8")))


def test_root_manifest_validates_against_the_schema() -> None:
    document = json.loads(json.dumps(YAML(typ="safe").load((REPO / "hotkernel.yaml").read_text(encoding="utf-8"))))
    errors = sorted(validator().iter_errors(document), key=str)
    assert errors == []


@pytest.mark.parametrize(
    "target",
    [
        {"from": "torch:neg", "shapes": ["8"], "dtyp": "bf16"},
        {"from": "torch:neg", "shapes": ["8"], "dtype": "bf17"},
        {"from": "torch:neg", "shapes": ["4096xx"]},
        {"from": "torch:neg", "shapes": []},
        {"shapes": ["8"]},
        {"from": "torch:neg", "shapes": ["8"], "extra": ["w:81x"]},
    ],
)
def test_schema_rejects_what_the_loader_rejects(target: dict) -> None:
    assert list(validator().iter_errors({"version": 1, "targets": {"t": target}}))


def test_schema_accepts_aliases_and_shape_forms() -> None:
    document = {
        "version": 1,
        "targets": {
            "t": {
                "from": "./k.py:f",
                "shapes": [8192, "4x8", {"x": "2x8", "w": 8}],
                "extra": ["w:8"],
                "dtype": "bfloat16",
            }
        },
    }
    assert list(validator().iter_errors(document)) == []


def test_write_schema_and_reference(tmp_path: Path) -> None:
    written = write_schema(tmp_path / "out" / "s.json")
    assert written.read_text(encoding="utf-8") == schema_text()
    assert packaged_schema_path().is_file()
    assert schema_reference(REPO) == "schemas/hotkernel.schema.json"
    assert schema_reference(tmp_path) is None  # no path into the install location


def test_pyproject_ships_the_schema_in_the_wheel() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"schemas/hotkernel.schema.json" = "hotkernel/schemas/hotkernel.schema.json"' in pyproject


def test_schema_reference_finds_the_copy_init_writes(tmp_path: Path) -> None:
    from hotkernel.manifest.schema import schema_reference

    assert schema_reference(tmp_path) is None
    (tmp_path / ".hotkernel").mkdir()
    (tmp_path / ".hotkernel" / "hotkernel.schema.json").write_text("{}")
    assert schema_reference(tmp_path) == ".hotkernel/hotkernel.schema.json"
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "hotkernel.schema.json").write_text("{}")
    assert schema_reference(tmp_path) == "schemas/hotkernel.schema.json"
