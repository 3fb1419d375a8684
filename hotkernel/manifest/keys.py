"""The CLI and MCP views of the target keys, generated from the metadata on ``TargetSpec``'s fields.

``hotkernel new`` gets one option per key (``cli_value`` reads its strings); the MCP target tools get one
parameter per key (``mcp_annotation``: a type whose schema carries the length limits); ``fields_from_mcp`` and
``fields_from_cli`` turn either back into manifest keys. Nothing here names a key: add one in ``model.py``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest.load import check_bounds, check_events
from hotkernel.manifest.model import MAX_ITEMS, MAX_STRING, TargetKey, is_parameter_name, target_keys

ShortText = Annotated[str, Field(max_length=MAX_STRING)]
Shape = ShortText | int | dict[Annotated[str, Field(max_length=64)], ShortText | int]
KwargsValue = dict[Annotated[str, Field(max_length=64)], Any]
Case = ShortText | dict[Annotated[str, Field(max_length=64)], bool | int | float | ShortText]
Bounds = ShortText | dict[Annotated[str, Field(max_length=64)], float] | None


def parse_kwarg(text: str, option: str = "--kwarg") -> tuple[str, Any]:
    """``eps=1e-6`` -> ``("eps", 1e-06)``: the value is read as a YAML scalar (number, bool, list...)."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not is_parameter_name(name):
        raise HotkernelError(f"{option} {quote(text)}: write NAME=VALUE, e.g. {option} eps=1e-6 or {option} dim=-1")
    if len(raw) > MAX_STRING:
        raise HotkernelError(f"{option} {name}=: a value of {len(raw)} characters, over the limit of {MAX_STRING}")
    check_bounds(raw, f"{option} {name}")
    check_events(raw, f"{option} {name}")
    try:
        value = YAML(typ="safe").load(raw) if raw.strip() else ""
    except YAMLError:
        value = raw
    if isinstance(value, (dict, set)) or (value is not None and not isinstance(value, (str, int, float, list))):
        value = raw
    return name, value


def cli_value(key: TargetKey, raw: Any) -> Any:
    """The manifest value of an option as typer handed it over (``texts``/``kwargs``: a list of strings)."""
    if key.key.kind == "kwargs":
        return dict(parse_kwarg(item, key.key.cli) for item in raw)
    if key.key.kind == "texts":
        return list(raw)
    return raw


def fields_from_cli(values: dict[str, Any]) -> dict[str, Any]:
    """Manifest keys from ``{field name: option value}`` (None and empty repeatables mean not given)."""
    fields: dict[str, Any] = {}
    for key in target_keys():
        raw = values.get(key.field)
        if raw is None or (key.key.kind in ("texts", "kwargs") and not raw):
            continue
        fields[key.yaml] = cli_value(key, raw)
    return fields


def mcp_annotation(key: TargetKey, *, required: bool) -> Any:
    """The MCP parameter type of a key: a JSON-friendly type with the manifest's limits in its schema."""
    kind = key.key.kind
    base: Any
    if key.key.choices:
        base = Literal[key.key.choices]  # type: ignore[valid-type]
    elif key.yaml == "shapes":
        base = list[Shape]
    elif key.yaml == "cases":
        base = list[Case]
    elif key.yaml == "output_tolerances":
        base = list[Bounds]
    elif kind == "texts":
        base = list[ShortText]
    elif kind == "kwargs":
        base = KwargsValue
    elif kind == "int":
        base = int
    elif kind == "float":
        base = float
    else:
        base = ShortText
    limits: dict[str, Any] = {}
    if kind in ("texts", "kwargs"):
        limits["max_length"] = MAX_ITEMS
    if kind in ("int", "float"):
        limits["ge"] = 0
    help_text = f"manifest key '{key.yaml}': {key.help}"
    if required:
        return Annotated[base, Field(description=help_text, **limits)]
    return Annotated[base | None, Field(description=help_text + " Default None = not given.", **limits)]


def mcp_parameter_names() -> dict[str, str]:
    """MCP parameter -> manifest key, for every target key."""
    return {key.key.mcp: key.yaml for key in target_keys()}


def fields_from_mcp(arguments: dict[str, Any]) -> dict[str, Any]:
    """Manifest keys from MCP arguments (parameters left None are not given)."""
    names = mcp_parameter_names()
    return {names[param]: value for param, value in arguments.items() if param in names and value is not None}


def mcp_parameter_of(yaml_key: str) -> str:
    """The MCP parameter that sets a manifest key (``from`` -> ``source``)."""
    for key in target_keys():
        if key.yaml == yaml_key:
            return key.key.mcp
    return yaml_key
