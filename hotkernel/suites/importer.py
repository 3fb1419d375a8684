"""``import_suite``: one target per problem of a KernelBench level or a GPU MODE task, added through the shared
add flow (``run.targets.add_targets``: each entry validated, one edit of the manifest for them all under the
workspace lock, minimal diffs, rendered).

The problem files are copied into the workspace (``problems/kernelbench/level<L>/``,
``problems/gpumode/<suite>/<task>/``) so every target's sources lie inside it, and probed in one run of the
user's python (the meta device or FakeTensorMode; one real run where the shapes are data dependent). A problem
that cannot become a target is skipped with the reason; one whose output is constant or random is imported with
its flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from hotkernel._util.fs import atomic_write_text
from hotkernel.errors import HotkernelError
from hotkernel.manifest.load import load_manifest
from hotkernel.manifest.model import format_shape
from hotkernel.run.targets import add_targets, case_shapes, probe_problems, problem_fields
from hotkernel.suites import gpumode, kernelbench
from hotkernel.workspace.paths import Workspace

Suite = Literal["kernelbench", "gpumode"]
PROBLEMS_DIR = "problems"
TORCH_DTYPES = {
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
}


class Imported(BaseModel):
    """A problem that became a target."""

    target: str = Field(description="target name")
    problem: str = Field(description="the problem file, relative to the workspace")
    shapes: list[str] = Field(description="the headline inputs' shapes, one per shape entry")
    cases: list[dict[str, Any]] | None = Field(description="the cases written (e.g. a scaled batch_size)")
    flags: list[str] = Field(default_factory=list, description="what the probe found (constant or random output)")


class Skipped(BaseModel):
    """A problem that did not become a target, and why."""

    problem: str = Field(description="the problem as given (file name or task folder)")
    reason: str = Field(description="why it was skipped")


class SuiteImport(BaseModel):
    """What ``import_suite`` did."""

    suite: str = Field(description="kernelbench or gpumode")
    source: str = Field(description="the directory imported from")
    manifest: str = Field(description="path of the manifest edited")
    imported: list[Imported] = Field(default_factory=list, description="targets added, in order")
    skipped: list[Skipped] = Field(default_factory=list, description="problems skipped, with the reason")


def _copy(source: Path, dest: Path) -> None:
    text = source.read_text(encoding="utf-8")
    if not dest.is_file() or dest.read_text(encoding="utf-8") != text:
        atomic_write_text(dest, text)


def _existing(ws: Workspace) -> set[str]:
    return set(load_manifest(ws.manifest).targets) if ws.manifest.is_file() else set()


class Pending(BaseModel):
    """A probed problem on its way to becoming a target (``add_pending`` adds them all in one edit)."""

    name: str
    rel: str = Field(description="the problem file, relative to the workspace")
    shown: str = Field(description="the problem as its skips name it")
    fields: dict[str, Any]
    probe: dict[str, Any]


def pending(name: str, rel: str, probe: dict[str, Any], given: dict[str, Any], shown: str) -> Pending:
    """The probed problem ``rel`` as target ``name``'s manifest keys (``given`` win over the probe's)."""
    fields = problem_fields(probe, {"from": f"./{rel}", **given})
    return Pending(name=name, rel=rel, shown=shown, fields=fields, probe=probe)


def add_pending(ws: Workspace, result: SuiteImport, todo: list[Pending], command: str) -> None:
    """Add every pending problem as a target in one manifest edit (``add_targets``: each is added or refused); one
    that cannot become a target is skipped with its reason, the others go on."""
    outcome = add_targets(ws, {item.name: item.fields for item in todo}, command=command)
    for item in todo:
        if item.name in outcome.refused:
            result.skipped.append(Skipped(problem=item.shown, reason=outcome.refused[item.name]))
            continue
        heads = [head_label(case) for case in item.probe["shapes"]]
        flags = list(item.probe.get("flags") or [])
        imported = Imported(
            target=item.name, problem=item.rel, shapes=heads, cases=item.fields.get("cases"), flags=flags
        )
        result.imported.append(imported)


def head_label(entries: list[dict[str, Any]]) -> str:
    """The headline input of one case: its shape, or what it is (a scalar's value, a structured input)."""
    head = entries[0]
    if "shape" in head:
        return format_shape(head["shape"])
    if head.get("kind") == "scalar":
        return f"{head['name']}={head['value']}"
    if head.get("kind") == "tree":
        leaves = head.get("leaves") or []
        first = f", the first {format_shape(leaves[0]['shape'])}" if leaves and leaves[0].get("shape") else ""
        return f"{head['name']}: {head.get('type', 'tree')} of {len(leaves)} tensors{first}"
    return str(head.get("name"))


def import_suite(
    ws: Workspace,
    suite: Suite,
    directory: Path | str,
    *,
    level: int | None = None,
    problems: list[int] | None = None,
    dtype: str | None = None,
    scale: float | None = None,
    device: str | None = None,
    cases: str = "benchmarks",
    command: str = "hotkernel import",
) -> SuiteImport:
    """Add one target per problem of ``directory`` (a KernelBench level folder; a GPU MODE task, suite or
    ``problems/`` folder); the KernelBench level is ``level``, else read from the folder's name (``level2``),
    else 1. ``cases``: a GPU MODE task's shapes are task.yml's ``benchmarks`` (the timed sizes) or its
    ``tests`` (the smaller sizes its authors check correctness at)."""
    directory = Path(directory).expanduser().resolve()
    if cases not in gpumode.CASE_LISTS:
        raise HotkernelError(f"--cases {cases}: use one of {', '.join(gpumode.CASE_LISTS)}")
    if scale is not None and not 0 < scale <= 1:
        raise HotkernelError(f"--scale {scale}: give a factor in (0, 1], e.g. 0.25")
    result = SuiteImport(suite=suite, source=str(directory), manifest=str(ws.manifest))
    given = {key: value for key, value in (("dtype", dtype), ("device", device)) if value is not None}
    if suite == "gpumode":
        if scale is not None:
            raise HotkernelError(
                "--scale applies to kernelbench; a GPU MODE task's shapes are its benchmarks, or with --cases tests "
                "its smaller tests"
            )
        _import_gpumode(ws, result, directory, given, cases, command)
    else:
        if cases != "benchmarks":
            raise HotkernelError("--cases applies to gpumode; shrink a KernelBench problem with --scale")
        level = level if level is not None else kernelbench.folder_level(directory)
        _import_kernelbench(ws, result, directory, level, problems, {"dtype": "fp32", **given}, scale, command)
    return result


def _import_kernelbench(
    ws: Workspace,
    result: SuiteImport,
    directory: Path,
    level: int,
    numbers: list[int] | None,
    given: dict[str, Any],
    scale: float | None,
    command: str,
) -> None:
    found = kernelbench.problems(directory, level, numbers)
    taken = _existing(ws)
    todo = []
    for problem in found:
        if problem.target in taken:
            result.skipped.append(Skipped(problem=problem.file.name, reason=f"{problem.target} is already a target"))
            continue
        rel = f"{PROBLEMS_DIR}/kernelbench/level{level}/{problem.file.name}"
        _copy(problem.file, ws.root / rel)
        todo.append((problem, rel))
    device = given.get("device")
    replies = probe_problems(
        ws, [{"path": str(ws.root / rel), "scale": scale, "cases": None, "device": device} for _, rel in todo]
    )
    ready: list[Pending] = []
    for (problem, rel), reply in zip(todo, replies, strict=True):
        if not reply["ok"]:
            result.skipped.append(Skipped(problem=problem.file.name, reason=reply["error"]))
            continue
        try:
            ready.append(pending(problem.target, rel, reply["probe"], given, problem.file.name))
        except HotkernelError as err:
            result.skipped.append(Skipped(problem=problem.file.name, reason=str(err)))
    add_pending(ws, result, ready, command)


OUTPUT_BUFFER = (
    "so an output buffer (filled before every call, judged through what the kernel returns, not checked as an input)"
)


def _add_empty_buffers(probe: dict[str, Any], static: tuple[str, ...]) -> None:
    """Make the inputs generate_input leaves uninitialized destinations, with a flag saying which and why: those
    its source shows (``static``: bound to torch.empty and never written) and those the probe saw while it ran
    (``uninitialized``: from an empty factory anywhere, never written), an input or a tensor inside a structured
    input (by its path)."""
    names = [entry["name"] for entry in probe["shapes"][0]]
    taken = set(probe.get("destinations") or [])
    seen = list(probe.get("uninitialized") or [])
    source = [name for name in static if name in names and name not in taken]
    running = [name for name in seen if name in names and name not in taken and name not in source]
    nested = [name for name in seen if name not in names and name not in taken]
    flags = list(probe.get("flags") or [])
    if source:
        flags.append(
            f"{', '.join(source)}: made by torch.empty in generate_input and never written there, {OUTPUT_BUFFER}"
        )
    if running:
        flags.append(
            f"{', '.join(running)}: uninitialized memory (torch.empty, empty_like, new_empty...) that generate_input "
            f"never writes, seen while it ran, {OUTPUT_BUFFER}"
        )
    if nested:
        flags.append(
            f"{', '.join(nested)}: uninitialized memory that generate_input never writes, inside a structured input, "
            f"{OUTPUT_BUFFER}"
        )
    probe["destinations"] = [*(probe.get("destinations") or []), *source, *running, *nested]
    probe["flags"] = flags


def _import_gpumode(
    ws: Workspace, result: SuiteImport, directory: Path, given: dict[str, Any], cases: str, command: str
) -> None:
    """Every task ``directory`` names (a task, a suite or ``problems/``) with the cases of task.yml's ``cases``
    list, probed in one run of the user's python."""
    folders = gpumode.task_folders(directory)
    taken = _existing(ws)
    todo: list[tuple[gpumode.Task, str]] = []
    for folder in folders:
        try:
            task = gpumode.read_task(folder, cases)
        except HotkernelError as err:
            if len(folders) == 1:
                raise
            result.skipped.append(Skipped(problem=str(folder), reason=str(err)))
            continue
        if task.gpus > 1 or task.unfit:
            result.skipped.append(Skipped(problem=str(folder), reason=task.gpus_reason or task.unfit))
        elif task.target in taken:
            result.skipped.append(Skipped(problem=str(folder), reason=f"{task.target} is already a target"))
        else:
            todo.append((task, _copy_task(ws, task)))
            taken.add(task.target)
    requests = [
        {"path": str(ws.root / rel), "scale": None, "cases": task.cases, "device": given.get("device")}
        for task, rel in todo
    ]
    ready: list[Pending] = []
    for (task, rel), reply in zip(todo, probe_problems(ws, requests), strict=True):
        if not reply["ok"]:
            result.skipped.append(Skipped(problem=str(task.folder), reason=reply["error"]))
            continue
        probe = dict(reply["probe"])
        if cases == "tests":
            probe["flags"] = [
                *(probe.get("flags") or []),
                "shapes from task.yml's tests (the sizes its authors check correctness at), not its benchmarks",
            ]
        try:
            ready.append(task_pending(task, rel, probe, given))
        except HotkernelError as err:
            result.skipped.append(Skipped(problem=str(task.folder), reason=str(err)))
    add_pending(ws, result, ready, command)


def _copy_task(ws: Workspace, task: gpumode.Task) -> str:
    """Copy the task's files and its suite's (utils.py and eval.py, which the reference imports) into the
    workspace; the reference's path relative to it."""
    folder = task.folder
    base = Path(PROBLEMS_DIR) / "gpumode" / folder.parent.name
    for source in sorted(folder.parent.glob("*.py")):
        _copy(source, ws.root / base / source.name)
    for source in sorted([*folder.glob("*.py"), folder / "task.yml"]):
        _copy(source, ws.root / base / folder.name / source.name)
    return (base / folder.name / task.reference.name).as_posix()


def task_pending(task: gpumode.Task, rel: str, probe: dict[str, Any], given: dict[str, Any]) -> Pending:
    """The probed task as a target's keys: benchmarks with the same shapes (``case_shapes``) merged, its output
    buffers, dtype and tolerances."""
    seen: dict[str, int] = {}
    merged: list[str] = []
    for index, shapes in enumerate(probe["shapes"]):  # two cases with the same tensor shapes are one shape
        key = repr(sorted(case_shapes(shapes).items()))
        if key in seen and shapes != probe["shapes"][seen[key]]:
            merged.append(f"{index + 1} as {seen[key] + 1}")
        seen.setdefault(key, index)
    keep = sorted(seen.values())
    probe["shapes"] = [probe["shapes"][i] for i in keep]
    probe["cases"] = [probe["cases"][i] for i in keep]
    if merged:
        probe["flags"] = [
            *(probe.get("flags") or []),
            f"benchmarks with the tensor shapes of an earlier one (a manifest keys a case by its shapes) are left "
            f"out: {', '.join(merged)} (they differ only in dtypes or other values, e.g. a mask's)",
        ]
    _add_empty_buffers(probe, task.empty_buffers)
    outputs = probe.get("outputs") or []
    fields = dict(given)
    if "dtype" not in fields:
        fields["dtype"] = next((TORCH_DTYPES[o["dtype"]] for o in outputs if o.get("dtype") in TORCH_DTYPES), "fp32")
    fields.update({key: value for key, value in (("atol", task.atol), ("rtol", task.rtol)) if value is not None})
    note = task.tolerance_note
    if task.output_tolerances and len(task.output_tolerances) <= len(outputs):
        fields["output_tolerances"] = [dict(entry) for entry in task.output_tolerances]
        note = gpumode.per_output_note(task.output_tolerances)
    if note:
        probe["flags"] = [*(probe.get("flags") or []), note]
    return pending(task.target, rel, probe, fields, str(task.folder))
