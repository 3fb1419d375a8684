"""``hotkernel new``: add a target to ``hotkernel.yaml`` (creating the manifest if needed) and render it."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer

from hotkernel.errors import HotkernelError
from hotkernel.workspace.paths import MANIFEST_NAME, Workspace, find_workspace, safe_path, validate_target_name


def parse_kwarg(text: str) -> tuple[str, Any]:
    """``eps=1e-6`` -> ``("eps", 1e-06)``: the value is read as a YAML scalar (number, bool, list...)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    name, sep, raw = text.partition("=")
    name = name.strip()
    if not sep or not name.isidentifier():
        raise HotkernelError(f"--kwarg {text!r}: write NAME=VALUE, e.g. --kwarg eps=1e-6 or --kwarg dim=-1")
    try:
        value = YAML(typ="safe").load(raw) if raw.strip() else ""
    except YAMLError:
        value = raw
    if isinstance(value, (dict, set)) or (
        value is not None and not isinstance(value, (str, int, float, list))
    ):
        value = raw
    return name, value


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
            f"{option} {ref!r}: the file is outside the workspace {ws.root}; put it inside the workspace"
        ) from None
    relative = file.relative_to(ws.root.resolve()).as_posix()
    return f"./{relative}:{func}"


def target_fields(
    *,
    from_ref: str,
    shapes: list[str],
    extra: list[str],
    dtype: str | None,
    kwargs: list[str],
    device: str | None,
    input_name: str | None,
    rotate: list[str],
    reference: str | None,
) -> dict[str, Any]:
    """The manifest entry ``hotkernel new`` writes, keys as in the YAML file."""
    fields: dict[str, Any] = {"from": from_ref, "shapes": list(shapes)}
    if input_name and input_name != "x":
        fields["input"] = input_name
    if extra:
        fields["extra"] = list(extra)
    if dtype:
        fields["dtype"] = dtype
    if kwargs:
        fields["kwargs"] = dict(parse_kwarg(item) for item in kwargs)
    if rotate:
        fields["rotate"] = list(rotate)
    if reference:
        fields["reference"] = reference
    if device:
        fields["device"] = device
    return fields


OPTION_OF_KEY = {
    "from": "--from",
    "shapes": "--shape",
    "extra": "--extra",
    "dtype": "--dtype",
    "kwargs": "--kwarg",
    "device": "--device",
    "input": "--input",
    "rotate": "--rotate",
    "reference": "--reference",
}


def check_options(ws: Workspace, name: str, fields: dict[str, Any]) -> None:
    """Validate the entry before touching the manifest; a problem names the command-line option to fix."""
    from hotkernel.manifest import ManifestProblem, check_target_fields

    try:
        check_target_fields(name, fields, ws.root)
    except ManifestProblem as problem:
        key = problem.loc[2] if len(problem.loc) > 2 else None
        option = OPTION_OF_KEY.get(str(key), "hotkernel new")
        raise HotkernelError(f"{option}: {problem.message}") from None


def render_new_target(ws: Workspace, name: str, resolved: dict[str, Any]) -> dict[str, Any] | None:
    """Render the target's files; None while ``hotkernel.run.render`` is not installed yet."""
    try:
        from hotkernel.run.render import render_target
    except ModuleNotFoundError as err:
        if err.name != "hotkernel.run.render":
            raise
        return None
    result = render_target(ws, name, resolved)
    return _as_plain(result)


def _as_plain(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json.loads(json.dumps(dataclasses.asdict(value), default=str))
    return json.loads(json.dumps(value, default=str))


def new_target(
    name: str,
    fields: dict[str, Any],
    *,
    force: bool = False,
    ws: Workspace | None = None,
) -> dict[str, Any]:
    """Create the manifest if absent, add (``force``: replace) the entry, render it; return a summary."""
    from hotkernel.manifest import add_target, new_manifest_text, resolved_target
    from hotkernel.manifest.schema import schema_reference

    validate_target_name(name)
    ws = ws or workspace_for_new()
    check_options(ws, name, fields)
    created = not ws.manifest.exists()
    if created:
        ws.root.mkdir(parents=True, exist_ok=True)
        original = None
        ws.manifest.write_text(new_manifest_text(schema_reference(ws.root)), encoding="utf-8")
    else:
        original = ws.manifest.read_text(encoding="utf-8")
    try:
        from hotkernel.manifest import load_manifest

        replaced = name in load_manifest(ws.manifest, check_files=False).targets
        manifest = add_target(ws.manifest, name, fields, replace=force)
    except BaseException:
        if created:
            ws.manifest.unlink(missing_ok=True)
        elif original is not None and ws.manifest.read_text(encoding="utf-8") != original:
            ws.manifest.write_text(original, encoding="utf-8")
        raise
    resolved = resolved_target(manifest, name)
    rendered = render_new_target(ws, name, resolved)
    return {
        "target": name,
        "manifest": str(ws.manifest),
        "created_manifest": created,
        "replaced": replaced,
        "resolved": resolved,
        "render": rendered,
        "rendered": rendered is not None,
    }


def register(app: typer.Typer) -> None:
    """Add the ``new`` command to the CLI."""

    @app.command("new")
    def new_command(
        name: Annotated[str, typer.Argument(help="Target name: a Python identifier, e.g. rmsnorm.")],
        from_ref: Annotated[
            str,
            typer.Option("--from", help="The baseline: FILE.py:FUNC (relative to here) or module:function."),
        ],
        shape: Annotated[
            list[str],
            typer.Option(
                "--shape",
                help="Shape of the first input, e.g. 4096x8192; repeat for more (first = headline).",
            ),
        ],
        extra: Annotated[
            list[str] | None,
            typer.Option("--extra", help="A further input NAME:SHAPE in call order; repeatable."),
        ] = None,
        dtype: Annotated[
            str | None,
            typer.Option("--dtype", help="bf16 | fp16 | fp32 | fp8_e4m3 | fp8_e5m2 (default bf16)."),
        ] = None,
        kwarg: Annotated[
            list[str] | None,
            typer.Option("--kwarg", help="A constant keyword argument NAME=VALUE; repeatable."),
        ] = None,
        device: Annotated[str | None, typer.Option("--device", help="cuda (default) or cpu.")] = None,
        input_name: Annotated[
            str | None, typer.Option("--input", help="Name of the first input (default x).")
        ] = None,
        rotate: Annotated[
            list[str] | None,
            typer.Option("--rotate", help="An input that streams through memory; repeatable."),
        ] = None,
        reference: Annotated[
            str | None,
            typer.Option("--reference", help="FILE.py:FUNC or module:function computing the answer."),
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="Replace an existing entry of the same name.")
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Print a machine-readable result.")] = False,
    ) -> None:
        """Add a target to hotkernel.yaml (created if absent) and render targets/NAME/."""
        ws = workspace_for_new()
        fields = target_fields(
            from_ref=workspace_function_ref(ws, from_ref, "--from"),
            shapes=shape,
            extra=extra or [],
            dtype=dtype,
            kwargs=kwarg or [],
            device=device,
            input_name=input_name,
            rotate=rotate or [],
            reference=workspace_function_ref(ws, reference, "--reference") if reference else None,
        )
        result = new_target(name, fields, force=force, ws=ws)
        if as_json:
            typer.echo(json.dumps(result, indent=2, sort_keys=True))
            return
        verb = "replaced" if result["replaced"] else "added"
        made = f" (created {MANIFEST_NAME})" if result["created_manifest"] else ""
        typer.echo(f"{verb} target {name} in {result['manifest']}{made}")
        if result["rendered"]:
            typer.echo(f"rendered {ws.target_dir(name)}; edit candidate.py, then run: hotkernel sync {name}")
        else:
            typer.echo("rendering skipped: hotkernel.run.render is not available in this install")
