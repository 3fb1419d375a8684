"""Round-trip edits of ``hotkernel.yaml``: add, update and remove a target with a minimal diff (every untouched
byte stays), each under the workspace lock with the manifest re-read inside it, validated before it is written.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from hotkernel._util.fs import atomic_write_text
from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest.load import (
    NAME_RULE,
    ManifestProblem,
    allowed_keys,
    check_values,
    did_you_mean,
    dotted,
    is_target_name,
    load_manifest_text,
    plain,
    read_document,
    read_manifest_text,
    yaml_rt,
)
from hotkernel.manifest.model import MANIFEST_VERSION, TARGET_KEY_ORDER, Manifest, TargetSpec
from hotkernel.workspace.lockfile import workspace_lock
from hotkernel.workspace.paths import MANIFEST_NAME, Workspace

SCHEMA_MODELINE_PREFIX = "# yaml-language-server: $schema="
EDIT_WAIT_S = 60.0  # how long an edit waits for the workspace lock (another edit, or a sync) before it gives up


@dataclass(frozen=True)
class EditOutcome:
    """What an edit did: the manifest after it, whether the entry existed before, whether the file was new."""

    manifest: Manifest
    replaced: bool
    created: bool


# ---------------------------------------------------------------------------------------- YAML text


def _flow(value: Any) -> str:
    """One value as YAML flow text that the loader reads back as exactly ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise HotkernelError(f"cannot write {value} into {MANIFEST_NAME}: give a finite number")
        text = repr(value)
        return text if any(ch in text for ch in ".en") else text + ".0"
    if isinstance(value, str):
        return _flow_string(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow_string(str(key))}: {_flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    raise HotkernelError(f"cannot write {quote(value)} into {MANIFEST_NAME}: use numbers, strings, booleans or lists")


def _flow_string(text: str) -> str:
    """A plain scalar when it reads back as the same string in block and flow context, else double-quoted."""
    if re.fullmatch(r"[A-Za-z0-9_./][A-Za-z0-9_./:+\-×]*", text):
        try:
            parsed = yaml_rt().load(f"k: {text}\nl: [{text}]\n")
            if parsed["k"] == text and isinstance(parsed["k"], str) and parsed["l"][0] == text:
                return text
        except YAMLError:
            pass
    return json.dumps(text, ensure_ascii=False)


def _is_filler(line: str, max_indent: int) -> bool:
    """A blank line, or a comment indented no deeper than ``max_indent`` (it belongs to what follows)."""
    stripped = line.strip()
    if not stripped:
        return True
    return stripped.startswith("#") and (len(line) - len(line.lstrip())) <= max_indent


def _trim_end(lines: list[str], start: int, end: int, max_indent: int) -> int:
    while end > start + 1 and _is_filler(lines[end - 1], max_indent):
        end -= 1
    return end


def _key_col(node: CommentedMap, key: Any) -> int:
    return node.lc.key(key)[1]


def _next_key_line(node: CommentedMap, key: Any, fallback: int) -> int:
    keys = list(node)
    index = keys.index(key)
    return node.lc.key(keys[index + 1])[0] if index + 1 < len(keys) else fallback


def _entry_range(doc: CommentedMap, name: str, lines: list[str]) -> tuple[int, int]:
    """Line range ``[start, end)`` of target ``name``'s entry, less trailing blanks and outer comments."""
    targets = doc["targets"]
    start = targets.lc.key(name)[0]
    end = _next_key_line(targets, name, _next_key_line(doc, "targets", len(lines)))
    return start, _trim_end(lines, start, end, _key_col(targets, name))


def _indents(doc: CommentedMap) -> tuple[int, int]:
    """(column of target names, extra indent of their keys), learnt from the file; (2, 2) when it has none."""
    targets = doc.get("targets")
    if isinstance(targets, CommentedMap) and len(targets) and not targets.fa.flow_style():
        key_col = _key_col(targets, next(iter(targets)))
        for entry_name in targets:
            entry = targets[entry_name]
            if isinstance(entry, CommentedMap) and len(entry) and not entry.fa.flow_style():
                return key_col, max(1, _key_col(entry, next(iter(entry))) - _key_col(targets, entry_name))
        return key_col, 2
    return 2, 2


def ordered(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` in the written key order (TargetSpec's field order)."""
    rank = {key: index for index, key in enumerate(TARGET_KEY_ORDER)}
    return dict(sorted(fields.items(), key=lambda item: rank.get(item[0], len(rank))))


def _entry_text(name: str, fields: dict[str, Any], key_col: int, step: int) -> list[str]:
    lines = [" " * key_col + f"{name}:\n"]
    lines += [" " * (key_col + step) + f"{key}: {_flow(value)}\n" for key, value in fields.items()]
    return lines


def _lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def _splice_add(text: str, name: str, fields: dict[str, Any], *, replace: bool) -> str:
    """``text`` with target ``name`` appended (or its entry replaced in place when ``replace``)."""
    doc = read_document(text, MANIFEST_NAME) if text.strip() else None
    lines = _lines(text)
    if not isinstance(doc, CommentedMap):
        raise HotkernelError(f"{MANIFEST_NAME} is not a mapping; fix it before adding targets")
    key_col, step = _indents(doc)
    entry = _entry_text(name, ordered(fields), key_col, step)
    targets = doc.get("targets")
    if isinstance(targets, CommentedMap) and name in targets:
        if not replace:
            raise HotkernelError(
                f"target {name!r} already exists in {MANIFEST_NAME}; add --force to replace it (MCP: "
                "update_target), or pick another name"
            )
        start, end = _entry_range(doc, name, lines)
        return "".join(lines[:start] + entry + lines[end:])
    if "targets" not in doc:
        return "".join(lines + ["targets:\n"] + entry)
    if targets is None or (isinstance(targets, CommentedMap) and not len(targets)):
        key_line = doc.lc.key("targets")[0]
        lines[key_line] = re.sub(r":\s*\{\s*\}", ":", lines[key_line], count=1)
        return "".join(lines[: key_line + 1] + entry + lines[key_line + 1 :])
    if not isinstance(targets, CommentedMap) or targets.fa.flow_style():
        return _redump(doc, lambda d: d["targets"].__setitem__(name, CommentedMap(fields)))
    _, end = _entry_range(doc, list(targets)[-1], lines)
    return "".join(lines[:end] + entry + lines[end:])


def _splice_add_all(text: str, entries: dict[str, dict[str, Any]]) -> str:
    """``text`` with every target of ``entries`` appended, in their order: one parse where ``targets`` is a block
    mapping with an entry (the entries go after its last one, as ``_splice_add`` puts one), else one
    ``_splice_add`` at a time until it is."""
    pending = list(entries.items())
    while pending:
        doc = read_document(text, MANIFEST_NAME) if text.strip() else None
        targets = doc.get("targets") if isinstance(doc, CommentedMap) else None
        if not isinstance(targets, CommentedMap) or not len(targets) or targets.fa.flow_style():
            name, fields = pending.pop(0)
            text = _splice_add(text, name, fields, replace=False)
            continue
        assert isinstance(doc, CommentedMap)
        clash = [name for name, _ in pending if name in targets]
        if clash:
            raise HotkernelError(f"target {clash[0]!r} already exists in {MANIFEST_NAME}; pick another name")
        key_col, step = _indents(doc)
        lines = _lines(text)
        _, end = _entry_range(doc, list(targets)[-1], lines)
        added = [line for name, fields in pending for line in _entry_text(name, ordered(fields), key_col, step)]
        return "".join(lines[:end] + added + lines[end:])
    return text


def _splice_update(text: str, name: str, fields: dict[str, Any]) -> str:
    """``text`` with the given keys of target ``name`` rewritten (None removes a key), the rest untouched."""
    doc = read_document(text, MANIFEST_NAME)
    lines = _lines(text)
    targets = doc.get("targets") if isinstance(doc, CommentedMap) else None
    if not isinstance(targets, CommentedMap) or name not in targets:
        raise HotkernelError(
            f"no target {name!r} in {MANIFEST_NAME}; add it first (`hotkernel new {name} ...`, MCP add_target)"
        )
    entry = targets[name]
    if not isinstance(entry, CommentedMap) or entry.fa.flow_style() or targets.fa.flow_style() or not len(entry):
        merged = {**plain(entry or {}), **fields}
        return _splice_add(text, name, {k: v for k, v in merged.items() if v is not None}, replace=True)
    entry_start, entry_end = _entry_range(doc, name, lines)
    child_col = _key_col(entry, next(iter(entry)))
    edits: list[tuple[int, int, list[str]]] = []
    appended: list[str] = []
    for key, value in fields.items():
        if key in entry:
            start = entry.lc.key(key)[0]
            end = _trim_end(lines, start, _next_key_line(entry, key, entry_end), child_col)
            replacement = [] if value is None else [" " * child_col + f"{key}: {_flow(value)}\n"]
            edits.append((start, end, replacement))
        elif value is not None:
            appended.append(" " * child_col + f"{key}: {_flow(value)}\n")
    if appended:
        edits.append((entry_end, entry_end, appended))
    for start, end, replacement in sorted(edits, key=lambda edit: edit[0], reverse=True):
        lines[start:end] = replacement
    return "".join(lines)


def _splice_remove(text: str, name: str) -> str:
    doc = read_document(text, MANIFEST_NAME)
    lines = text.splitlines(keepends=True)
    targets = doc.get("targets") if isinstance(doc, CommentedMap) else None
    if not isinstance(targets, CommentedMap) or name not in targets:
        raise HotkernelError(f"no target {name!r} in {MANIFEST_NAME}; nothing to remove")
    if targets.fa.flow_style():
        return _redump(doc, lambda d: d["targets"].pop(name))
    start, end = _entry_range(doc, name, lines)
    return "".join(lines[:start] + lines[end:])


def _redump(doc: CommentedMap, change: Callable[[CommentedMap], Any]) -> str:
    """Fallback for flow-style ``targets``: edit the parsed document and dump it whole."""
    change(doc)
    buffer = io.StringIO()
    yaml_rt().dump(doc, buffer)
    return buffer.getvalue()


# ------------------------------------------------------------------------------------------- edits


def new_manifest_text(schema_ref: str | None) -> str:
    """The text of a fresh manifest: the schema modeline, ``version: 1`` and an empty ``targets:``."""
    head = f"{SCHEMA_MODELINE_PREFIX}{schema_ref}\n" if schema_ref else ""
    return head + f"version: {MANIFEST_VERSION}\ntargets:\n"


def check_entry(name: str, fields: dict[str, Any]) -> None:
    """A target name the manifest allows, and keys and values ``check_fields`` accepts."""
    if not is_target_name(name):
        raise HotkernelError(f"target name {quote(name)} is not allowed: {NAME_RULE}")
    check_fields(fields)


def check_fields(fields: dict[str, Any]) -> None:
    """Keys are target keys; values are of bounded size (checked before any text is built from them)."""
    allowed = allowed_keys(TargetSpec)
    for key in fields:
        if key not in allowed:
            raise HotkernelError(
                f"unknown target key {quote(key)}; {did_you_mean(str(key), allowed)}allowed keys: {', '.join(allowed)}"
            )
    try:
        check_values(fields)
    except ManifestProblem as problem:
        raise HotkernelError(f"{dotted(problem.loc)}: {problem.message}") from None


def _normalise_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """Drop None values; 1-D shapes given as digit strings become integers (``[8]``, not ``["8"]``)."""

    def shape_value(value: Any) -> Any:
        return int(value) if isinstance(value, str) and value.strip().isdigit() else value

    normalised = {key: value for key, value in fields.items() if value is not None}
    if isinstance(normalised.get("shapes"), list):
        normalised["shapes"] = [
            {k: shape_value(v) for k, v in entry.items()} if isinstance(entry, dict) else shape_value(entry)
            for entry in normalised["shapes"]
        ]
    return normalised


def _commit(path: Path, new_text: str, expected: dict[str, dict[str, Any] | None]) -> Manifest:
    """Validate ``new_text`` fully, check each entry reads back as ``expected`` (target name -> its keys; None: the
    target is gone), then write it atomically."""
    manifest = load_manifest_text(new_text, path)
    targets = read_document(new_text, MANIFEST_NAME).get("targets") or {}  # parsed just above: kept
    for name, wanted in expected.items():
        actual = plain(targets.get(name)) if name in targets else None
        if wanted is not None and actual != plain(wanted):
            raise HotkernelError(
                f"editing {MANIFEST_NAME} for {name!r} did not read back as written; the file is unchanged (please "
                "report this)"
            )
        if wanted is None and actual is not None:
            raise HotkernelError(f"removing {name!r} from {MANIFEST_NAME} failed; the file is unchanged")
    write_manifest(path, new_text)
    return manifest


def write_manifest(path: Path, text: str) -> None:
    """Replace the manifest atomically, keeping its permissions (0644 for a new one)."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    atomic_write_text(path, text, overwrite=True)
    os.chmod(path, mode)  # the temp file behind the atomic write is created 0600


EditMode = Literal["add", "replace", "update", "remove"]


def edit_target(
    path: Path | str,
    name: str,
    fields: dict[str, Any] | None = None,
    *,
    mode: EditMode = "add",
    schema_ref: str | None = None,
    command: str = "hotkernel new",
) -> EditOutcome:
    """One edit of target ``name`` under the workspace lock, the manifest re-read inside it.

    ``add`` refuses an existing name, ``replace`` rewrites or adds the entry, ``update`` sets the given keys
    (None removes a key), ``remove`` deletes the entry. A manifest that does not exist yet is created by
    ``add``/``replace`` (with the ``schema_ref`` modeline). Nothing is written unless the result validates.
    """
    path = Path(path)
    given = dict(fields or {})
    check_entry(name, given)
    with workspace_lock(Workspace(path.parent), wait_s=EDIT_WAIT_S, command=command):
        created = not path.exists()
        if created and mode in ("update", "remove"):
            raise HotkernelError(f"{MANIFEST_NAME} not found in {path.parent}: add a target first")
        text = new_manifest_text(schema_ref) if created else read_manifest_text(path)
        doc = read_document(text, MANIFEST_NAME)
        targets = doc.get("targets") if isinstance(doc, CommentedMap) else None
        existed = isinstance(targets, CommentedMap) and name in targets
        if mode == "remove":
            return EditOutcome(_commit(path, _splice_remove(text, name), {name: None}), True, False)
        if mode == "update":
            changes = {**_normalise_fields(given), **{key: None for key, value in given.items() if value is None}}
            new_text = _splice_update(text, name, changes)
            current = plain(targets[name]) if existed else {}
            expected = {k: v for k, v in {**(current or {}), **changes}.items() if v is not None}
            return EditOutcome(_commit(path, new_text, {name: expected}), existed, False)
        entry = _normalise_fields(given)
        new_text = _splice_add(text, name, entry, replace=mode == "replace")
        return EditOutcome(_commit(path, new_text, {name: ordered(entry)}), existed, created)


def add_targets(
    path: Path | str,
    entries: dict[str, dict[str, Any]],
    *,
    schema_ref: str | None = None,
    command: str = "hotkernel import",
) -> EditOutcome:
    """Add every target of ``entries`` (name -> YAML keys) in one edit under the workspace lock: one read, one
    validation of the result, one write, each entry appended as ``edit_target`` appends one. Refuses a name that
    exists; nothing is written unless the whole result validates. A suite's import adds its problems so: an edit
    per problem re-read and re-validated the whole growing manifest each time (``edit_target``), a cost that grows
    with the square of the number of targets."""
    path = Path(path)
    for name, fields in entries.items():
        check_entry(name, dict(fields))
    normalised = {name: _normalise_fields(dict(fields)) for name, fields in entries.items()}
    with workspace_lock(Workspace(path.parent), wait_s=EDIT_WAIT_S, command=command):
        created = not path.exists()
        text = new_manifest_text(schema_ref) if created else read_manifest_text(path)
        new_text = _splice_add_all(text, normalised)
        expected: dict[str, dict[str, Any] | None] = {name: ordered(entry) for name, entry in normalised.items()}
        return EditOutcome(_commit(path, new_text, expected), False, created)


def add_target(path: Path | str, name: str, fields: dict[str, Any], *, replace: bool = False) -> Manifest:
    """Append target ``name`` (YAML keys as in the file: ``from``, ``shapes``...) with a minimal diff.

    ``replace=True`` rewrites an existing entry in place. The result is validated before anything is written.
    """
    return edit_target(path, name, fields, mode="replace" if replace else "add").manifest


def update_target(path: Path | str, name: str, fields: dict[str, Any]) -> Manifest:
    """Set the given keys of target ``name`` (None removes a key); every other line stays byte-identical."""
    return edit_target(path, name, fields, mode="update").manifest


def remove_target(path: Path | str, name: str) -> Manifest:
    """Delete target ``name``'s entry (its lines only; comments above it stay)."""
    return edit_target(path, name, mode="remove").manifest
