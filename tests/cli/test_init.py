"""``hotkernel init``: a manifest whose schema line resolves, .gitignore lines, a CI check; never overwrites."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ruamel.yaml import YAML
from typer.testing import CliRunner

from hotkernel.cli.app import app
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest
from hotkernel.manifest.init import IGNORED, SCHEMA_COPY, WORKFLOW, init_workspace
from hotkernel.manifest.schema import schema_text


def test_init_writes_a_manifest_whose_schema_line_resolves(tmp_path: Path) -> None:
    result = init_workspace(tmp_path)
    assert result.written == ["hotkernel.yaml", SCHEMA_COPY, WORKFLOW, ".gitignore"]
    text = (tmp_path / "hotkernel.yaml").read_text()
    ref = re.match(r"# yaml-language-server: \$schema=(\S+)\n", text)
    assert ref is not None, text
    schema = tmp_path / ref.group(1)  # relative to the manifest, as the YAML language server reads it
    assert schema.is_file() and schema.read_text() == schema_text()
    assert json.loads(schema.read_text())["title"] == "hotkernel.yaml"
    manifest = load_manifest(tmp_path / "hotkernel.yaml")
    assert manifest.targets == {}


def test_init_ignores_scratch_state_and_keeps_an_existing_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("node_modules/\n/.hotkernel/lock")  # no final newline
    result = init_workspace(tmp_path)
    assert ".gitignore" in result.updated and ".gitignore" not in result.written
    lines = (tmp_path / ".gitignore").read_text().splitlines()
    assert lines[:2] == ["node_modules/", "/.hotkernel/lock"]
    assert [line for line in lines if line in IGNORED].count("/.hotkernel/lock") == 1
    assert set(IGNORED) <= set(lines) and "/.hotkernel/tmp/" in lines
    assert not any(SCHEMA_COPY.endswith(line.strip("/")) for line in lines if line.strip("/"))  # committed
    again = init_workspace(tmp_path, force=True)
    assert ".gitignore" not in again.updated + again.written  # nothing missing: left as it is


def test_the_ci_workflow_runs_sync_check(tmp_path: Path) -> None:
    init_workspace(tmp_path)
    workflow = YAML(typ="safe").load((tmp_path / WORKFLOW).read_text())
    runs = [step.get("run") for step in workflow["jobs"]["check"]["steps"]]
    assert "hotkernel sync --check" in runs and "hotkernel leaderboard --check" in runs
    other = tmp_path / "other"
    other.mkdir()
    assert WORKFLOW not in init_workspace(other, ci=False).written and not (other / WORKFLOW).exists()


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    (tmp_path / "hotkernel.yaml").write_text("version: 1\ntargets:\n  mine: {from: 'torch:neg', shapes: [8]}\n")
    with pytest.raises(HotkernelError, match=r"hotkernel.yaml already exists; pass --force") as caught:
        init_workspace(tmp_path)
    assert "\n" not in str(caught.value)
    assert "mine" in (tmp_path / "hotkernel.yaml").read_text()
    assert not (tmp_path / ".hotkernel").exists() and not (tmp_path / ".gitignore").exists()  # nothing written
    init_workspace(tmp_path, force=True)
    assert "mine" not in (tmp_path / "hotkernel.yaml").read_text()
    (tmp_path / "hotkernel.yaml").unlink()
    with pytest.raises(HotkernelError, match=r"hotkernel.yml already exists"):
        init_workspace(tmp_path)  # the workflow is someone's file too


def test_init_command_then_new_keeps_the_schema_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    done = runner.invoke(app, ["init"])
    assert done.exit_code == 0, done.output
    assert "wrote hotkernel.yaml" in done.output and "next: hotkernel new" in done.output
    refused = runner.invoke(app, ["init"])
    assert refused.exit_code != 0 and isinstance(refused.exception, HotkernelError)
    as_json = runner.invoke(app, ["init", "--force", "--json"])
    assert json.loads(as_json.output)["written"][0] == "hotkernel.yaml"
    added = runner.invoke(
        app, ["new", "neg", "--from", "torch:neg", "--shape", "64", "--dtype", "fp32", "--device", "cpu"]
    )
    assert added.exit_code == 0, added.output
    text = (tmp_path / "hotkernel.yaml").read_text()
    assert text.startswith(f"# yaml-language-server: $schema={SCHEMA_COPY}\n") and "  neg:\n" in text


def test_the_example_workspace_ignores_what_init_ignores() -> None:
    lines = (Path(__file__).resolve().parents[2] / ".gitignore").read_text().splitlines()
    assert set(IGNORED) <= set(lines), sorted(set(IGNORED) - set(lines))
