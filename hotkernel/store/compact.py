"""The compact record file (``schema_version`` 2): the same record in about a sixth of the bytes.

What took the space in a schema-1 record (about 54 KB for a 10-round verify on one shape): every run's JSON line
in full (its contract fields, tolerances and script hash repeated in each run, the per-phase wall times, the
checks' prose, per-call samples printed with 17 digits), ``per_shape`` repeated from the last run of each side,
and two-space indentation. A schema-2 file keeps every run, and in each run what can differ:

* ``result.runs`` becomes a table: ``rows`` (role, index, status, reason, ms, wall_s: the per-round times
  exactly, for the verdict's recomputation), ``common`` (per role: the run fields every run of that role
  reported alike, written once; ``*``: what every run reported alike) and ``columns`` / ``data`` (the rest,
  one row per run, ``key@j`` for shape j's fields). Floats inside the runs' data are kept to 6 significant
  digits (the timer resolves less); the per-phase wall times and an ok check's prose are not kept.
* ``result.per_shape`` is not written: it is the last ok run of each side's ``per_shape``, rebuilt on load.
* no indentation.

``decode`` turns a schema-2 file back into the record's plain JSON (``Record.model_validate`` reads it);
schema-1 files are read as they are.
"""

from __future__ import annotations

import json
from typing import Any

COMPACT_SCHEMA = 2
DIGITS = 6  # significant digits kept of a float inside a run's data
DROPPED = frozenset({"phases_s", "ms", "role", "status", "reason", "wall_s"})  # diagnostic, or in the run's row
ROW = ("role", "index", "status", "reason", "ms", "wall_s")


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, list):
        return [_round(v) for v in value]
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    return value


def _checks(checks: Any) -> Any:
    if not isinstance(checks, list):
        return checks
    return [
        {k: v for k, v in c.items() if not (k == "detail" and c.get("ok") is True)} if isinstance(c, dict) else c
        for c in checks
    ]


def _flatten(data: dict[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in DROPPED:
            continue
        if key == "per_shape" and isinstance(value, list) and all(isinstance(s, dict) for s in value):
            flat["per_shape@n"] = len(value)
            for j, shape in enumerate(value):
                flat.update({f"{k}@{j}": _round(v) for k, v in shape.items()})
        else:
            flat[key] = _round(_checks(value) if key == "checks" else value)
    return flat


def _unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    count = flat.get("per_shape@n")
    shapes: list[dict[str, Any]] = [{} for _ in range(count if isinstance(count, int) else 0)]
    for key, value in flat.items():
        name, at, index = key.rpartition("@")[0], "@" in key, key.rpartition("@")[2]
        if not at:
            data[key] = value
        elif index.isdigit() and int(index) < len(shapes):
            shapes[int(index)][name] = value
    if isinstance(count, int):
        data["per_shape"] = shapes
    return data


def _same(values: list[Any]) -> bool:
    first = json.dumps(values[0], sort_keys=True)
    return all(json.dumps(v, sort_keys=True) == first for v in values[1:])


def _common(flats: list[dict[str, Any]]) -> dict[str, Any]:
    """The keys every one of ``flats`` (two or more) has with one value."""
    if len(flats) < 2:
        return {}
    keys = set.intersection(*(set(f) for f in flats))
    return {k: flats[0][k] for k in sorted(keys) if _same([f[k] for f in flats])}


def encode_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """A result's ``runs`` (their plain JSON) as the compact table."""
    flats = [_flatten(r.get("data") or {}) if r.get("data") is not None else None for r in runs]
    shared = _common([f for f in flats if f is not None])
    common: dict[str, dict[str, Any]] = {"*": shared}
    for role in sorted({r["role"] for r in runs}):
        mine = [f for r, f in zip(runs, flats, strict=True) if r["role"] == role and f is not None]
        common[role] = {k: v for k, v in _common(mine).items() if k not in shared}
    columns = sorted(
        {k for r, f in zip(runs, flats, strict=True) if f for k in f if k not in shared and k not in common[r["role"]]}
    )
    data = [None if f is None else [f.get(k) for k in columns] for r, f in zip(runs, flats, strict=True)]
    missing = [None if f is None else [k for k in columns if k not in f] or None for f in flats]
    table: dict[str, Any] = {
        "rows": [[r.get(k) for k in ROW] for r in runs],
        "common": common,
        "columns": columns,
        "data": data,
    }
    if any(missing):
        table["absent"] = missing
    return table


def decode_runs(table: dict[str, Any]) -> list[dict[str, Any]]:
    """The plain JSON of every run from the compact table."""
    runs = []
    columns = table.get("columns") or []
    absent = table.get("absent") or [None] * len(table["rows"])
    for row, values, gone in zip(table["rows"], table["data"], absent, strict=True):
        run = dict(zip(ROW, row, strict=True))
        if values is not None:
            flat = {**table["common"].get("*", {}), **table["common"].get(run["role"], {})}
            flat.update({k: v for k, v in zip(columns, values, strict=True) if k not in (gone or [])})
            run["data"] = _unflatten(flat)
        else:
            run["data"] = None
        runs.append(run)
    return runs


def encode(record: dict[str, Any]) -> str:
    """The text of a schema-2 record file for a record's plain JSON (``Record.model_dump(mode="json")``)."""
    data = {**record, "schema_version": COMPACT_SCHEMA}
    result = {k: v for k, v in record["result"].items() if k != "per_shape"}
    result["runs"] = encode_runs(record["result"].get("runs") or [])
    data["result"] = result
    return json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n"


def decode(data: dict[str, Any]) -> dict[str, Any]:
    """A record file's JSON as the record's plain JSON (schema-2 decoded; anything else unchanged)."""
    if data.get("schema_version") != COMPACT_SCHEMA or not isinstance(data.get("result"), dict):
        return data
    result = dict(data["result"])
    table = result.get("runs")
    if not isinstance(table, dict):
        return data
    try:
        runs = decode_runs(table)
    except (KeyError, TypeError, ValueError, AttributeError):
        return {**data, "result": {**result, "runs": "damaged compact runs table"}}  # fails validation, by name
    result["runs"] = runs
    result["per_shape"] = {
        role: next(
            (
                list(r["data"].get("per_shape") or [])
                for r in reversed(runs)
                if r["role"] == role and r["data"] and r["status"] == "ok"
            ),
            [],
        )
        for role in ("baseline", "candidate")
    }
    return {**data, "result": result}
