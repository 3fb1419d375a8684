"""``hotkernel new``: add a target to ``hotkernel.yaml`` (creating the manifest if needed) and render it.

Its options are generated from the target keys' metadata (``hotkernel.manifest.model``): one per key.
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from hotkernel.errors import HotkernelError
from hotkernel.manifest.keys import fields_from_cli
from hotkernel.manifest.model import TargetKey, target_keys
from hotkernel.run.signature import inputs_note
from hotkernel.run.targets import TargetEdit, change_target, describe_bounds
from hotkernel.workspace.paths import MANIFEST_NAME, Workspace, find_workspace, safe_path

__all__ = ["new_target", "register", "workspace_for_new"]


def workspace_for_new() -> Workspace:
    """The workspace holding the nearest manifest, else the current directory (or ``HOTKERNEL_WORKSPACE``)."""
    try:
        return find_workspace()
    except HotkernelError:
        return Workspace(Path(os.environ.get("HOTKERNEL_WORKSPACE") or os.getcwd()).resolve())


def workspace_function_ref(ws: Workspace, ref: str, option: str) -> str:
    """A ``path.py:function`` typed relative to the cwd, rewritten as ``./path.py:function`` from the root."""
    path, sep, func = ref.rpartition(":")
    if not sep or not path.endswith(".py"):
        return ref
    try:
        file = safe_path(ws.root, Path.cwd() / path, what=option)
    except HotkernelError:
        raise HotkernelError(
            f"{option} {ref[:200]!r}: the file is outside the workspace {ws.root}; put it inside the workspace"
        ) from None
    relative = file.relative_to(ws.root.resolve()).as_posix()
    return f"./{relative}:{func}"


def _cli_label(key: str, rest: str) -> str:
    """A manifest key as the option that sets it (the bad value is quoted in the message itself)."""
    for target_key in target_keys():
        if target_key.yaml == key:
            return target_key.key.cli
    return "hotkernel new"


def new_target(name: str, fields: dict[str, Any], *, force: bool = False, ws: Workspace | None = None) -> TargetEdit:
    """Create the manifest if absent, add (``force``: replace) the entry, render it."""
    ws = ws or workspace_for_new()
    return change_target(
        ws, name, fields, mode="replace" if force else "add", label=_cli_label, command="hotkernel new"
    )


METAVARS = {
    "text": "TEXT",
    "ref": "MODULE:FUNC|FILE.py:FUNC",
    "texts": "TEXT",
    "kwargs": "NAME=VALUE",
    "int": "INTEGER",
    "float": "NUMBER",
}


def _option(key: TargetKey) -> inspect.Parameter:
    """The typer parameter of one target key: its flag, its help, its type and whether it is required."""
    kind = key.key.kind
    help_text = key.help + (f" One of: {', '.join(key.key.choices)}." if key.key.choices else "")
    if kind in ("texts", "kwargs"):
        help_text += " Repeatable."
    if kind == "kwargs":
        help_text += f" Write NAME=VALUE, e.g. {key.key.cli} eps=1e-6."
    if kind == "ref":
        help_text += " A FILE.py path is relative to the current directory."
    base: Any = {"int": int, "float": float, "texts": list[str], "kwargs": list[str]}.get(kind, str)
    metavar = "|".join(key.key.choices) or METAVARS[kind]
    option = typer.Option(key.key.cli, help=help_text, show_default=False, metavar=metavar)
    if key.required:
        return inspect.Parameter(key.field, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[base, option])
    return inspect.Parameter(
        key.field, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[base | None, option], default=None
    )


def _command_signature() -> inspect.Signature:
    name = inspect.Parameter(
        "name",
        inspect.Parameter.KEYWORD_ONLY,
        annotation=Annotated[
            str, typer.Argument(help="Target name: a Python identifier, e.g. rmsnorm.", metavar="NAME")
        ],
    )
    force = inspect.Parameter(
        "force",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[bool, typer.Option("--force", help="Replace an existing entry of the same name.")],
    )
    as_json = inspect.Parameter(
        "as_json",
        inspect.Parameter.KEYWORD_ONLY,
        default=False,
        annotation=Annotated[bool, typer.Option("--json", help="Print a machine-readable result.")],
    )
    return inspect.Signature([name, *(_option(key) for key in target_keys()), force, as_json])


def _new_command(**values: Any) -> None:
    """Add a target to hotkernel.yaml (created if absent) and render targets/NAME/."""
    name, force, as_json = values.pop("name"), values.pop("force"), values.pop("as_json")
    ws = workspace_for_new()
    fields = fields_from_cli(values)
    for key in target_keys():
        if key.key.kind == "ref" and isinstance(fields.get(key.yaml), str):
            fields[key.yaml] = workspace_function_ref(ws, fields[key.yaml], key.key.cli)
    result = new_target(name, fields, force=force, ws=ws)
    if as_json:
        typer.echo(json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True))
        return
    verb = "replaced" if result.replaced else "added"
    made = f" (created {MANIFEST_NAME})" if result.created_manifest else ""
    typer.echo(f"{verb} target {name} in {result.manifest}{made}")
    typer.echo(describe_bounds(result))
    if result.resolved is not None:
        typer.echo(inputs_note(result.resolved))
    typer.echo(f"rendered {ws.target_dir(name)}; edit candidate.py, then run: hotkernel sync {name}")


_new_command.__signature__ = _command_signature()  # type: ignore[attr-defined]
_new_command.__annotations__ = {p.name: p.annotation for p in _new_command.__signature__.parameters.values()}  # type: ignore[attr-defined]


def register(app: typer.Typer) -> None:
    """Add the ``new`` command to the CLI."""
    app.command("new")(_new_command)
