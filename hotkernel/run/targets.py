"""Adding, changing and removing a target, as ``hotkernel new`` and the MCP target tools do it: validate, edit
``hotkernel.yaml`` under the workspace lock, render ``targets/<name>/``; on any failure the manifest is put back
byte for byte. One call sequence and one set of messages; each caller names keys its own way (``--shape`` or
``shapes``) through ``label``.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from hotkernel._util.procs import read_text_tail, run_command
from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest.edit import EDIT_WAIT_S, EditMode, edit_target, write_manifest
from hotkernel.manifest.edit import add_targets as add_entries
from hotkernel.manifest.load import ManifestProblem, check_target_fields, dotted
from hotkernel.manifest.model import MODULE_REF_RE, TargetSpec, case_entry, format_shape, is_problem_source
from hotkernel.manifest.problem_files import calls_of
from hotkernel.manifest.python import user_python
from hotkernel.manifest.resolve import resolve_target
from hotkernel.manifest.resolved import ResolvedTarget
from hotkernel.manifest.schema import schema_reference
from hotkernel.run.render import RenderResult, contract_path, render_target
from hotkernel.workspace.lockfile import workspace_lock
from hotkernel.workspace.paths import MANIFEST_NAME, Workspace, safe_path

PROBE_TIMEOUT_S = 60.0  # start-up (import torch) of the probe
PROBE_PER_FILE_S = 15.0  # and per problem file: meta/fake tensors, a flags run at reduced size (<= 5 s)
PROBE_REAL_RUN_S = 60.0  # and per file that may need one real run (a GPU MODE task: data-dependent shapes)

# How a caller names a manifest key and the rest of its path: ("shapes", "[1]") -> "--shape" or "shapes[1]".
KeyLabel = Callable[[str, str], str]


def yaml_label(key: str, rest: str) -> str:
    return f"{key}{rest}"


class TargetEdit(BaseModel):
    """What an add/update/remove did."""

    target: str = Field(description="target name")
    manifest: str = Field(description="path of the manifest edited")
    created_manifest: bool = Field(description="the manifest did not exist before")
    replaced: bool = Field(description="the target existed before the edit")
    resolved: ResolvedTarget | None = Field(description="the resolved target after the edit (None: removed)")
    correctness: dict[str, Any] | None = Field(
        description="the bounds the contract checks outputs against: atol, rtol, rel_l2_max, min_corr, and "
        "per_output (each output's four) where the target sets output_tolerances"
    )
    render: RenderResult | None = Field(description="files written and kept by rendering (None: removed)")


def _problem_text(problem: ManifestProblem, label: KeyLabel) -> str:
    """``--shape[1]: msg`` / ``shapes[1]: msg`` from a problem at ``targets.NAME.KEY...``."""
    loc = problem.loc
    if len(loc) > 2:
        rest = dotted(("_", *loc[3:]))[1:]
        return f"{label(str(loc[2]), rest)}: {problem.message}"
    return problem.message


def _as_edit_error(message: str, name: str, label: KeyLabel) -> str:
    """A line-numbered error about the entry being edited (whose lines were never written): name the key."""
    place = rf"^\S*{re.escape(MANIFEST_NAME)}:\d+:\s*targets\.{re.escape(name)}\.([A-Za-z_]+)(\S*):\s*"
    match = re.match(place, message)
    if not match:
        return message
    return f"{label(match.group(1), match.group(2))}: {message[match.end() :]} ({MANIFEST_NAME} left as it was)"


def probe_timeout_s(requests: list[dict[str, Any]]) -> float:
    """The probe's limit: its start-up, each file, and one real run for each file given cases (GPU MODE)."""
    real_runs = sum(1 for request in requests if request.get("cases"))
    return PROBE_TIMEOUT_S + PROBE_PER_FILE_S * len(requests) + PROBE_REAL_RUN_S * real_runs


def probe_problems(ws: Workspace, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Probe problem files in one run of the user's python (``hk_contract.probe_main``: meta or fake tensors, one
    real run where those cannot tell the shapes, within the memory check):
    ``[{"ok": True, "probe": {...}} | {"ok": False, "error": "FILE:LINE: ..."}]``. A file that kills the probe
    (exits, crashes, runs past the limit) is its own error, and the files after it go on in a new run.

    ``requests``: ``{"path": absolute file, "scale": float | None, "cases": [...] | None}`` each."""
    replies: list[dict[str, Any]] = []
    while len(replies) < len(requests):
        rest = requests[len(replies) :]
        done, failure = _probe_run(ws, rest)
        replies.extend(done)
        if failure is not None:
            replies.append({"ok": False, "error": f"{rest[len(done)]['path']}: {failure}"})
    return replies


def _probe_run(ws: Workspace, requests: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """One run of the probe over ``requests``: the replies it gave, and why it stopped before the next one (None
    when it answered every request)."""
    code = "import sys; sys.path.insert(0, sys.argv[1]); import hk_contract; hk_contract.probe_main(sys.argv[2:])"
    limit = probe_timeout_s(requests)
    run = run_user_python(ws, [code, str(contract_path().parent), json.dumps(requests)], limit, "probe")
    if not run.lines or json.loads(run.lines[0]) != {"ready": True}:  # it died before any file: no file's fault
        raise HotkernelError(f"the probe ({run.python}) {run.why} before it imported a problem file: {run.said}")
    replies = [json.loads(line) for line in run.lines[1 : len(requests) + 1]]
    if len(replies) == len(requests):
        return replies, None
    if run.timed_out:
        return replies, f"the probe ran past its {limit:.0f} s limit while probing this file"
    return replies, f"the probe's python exited ({run.returncode}) while probing this file: {run.said}"


class UserPythonRun(BaseModel):
    """What one ``python -c CODE ARGS...`` in the user's interpreter printed: its stdout's lines, and how it ended."""

    python: str
    lines: list[str]  # not blank; each caller parses the ones it expects
    timed_out: bool
    returncode: int | None
    limit_s: float
    said: str  # its stderr's last line

    @property
    def why(self) -> str:
        return f"ran past its {self.limit_s:.0f} s limit" if self.timed_out else f"exited ({self.returncode})"


def run_user_python(ws: Workspace, args: list[str], limit_s: float, name: str) -> UserPythonRun:
    """``python -c args[0] args[1:]`` in the user's interpreter from the workspace root, within ``limit_s``: its
    stdout's lines (blank ones skipped) and how it ended."""
    python = user_python(ws)
    with tempfile.TemporaryDirectory(prefix=f"hotkernel-{name}-") as out:
        result = run_command([python, "-c", *args], timeout_s=limit_s, cwd=ws.root, out_dir=out, name=name)
        text = result.stdout_path.read_text(encoding="utf-8")
        tail = read_text_tail(result.stderr_path, 600).strip().splitlines()
    return UserPythonRun(
        python=python,
        lines=[line for line in text.splitlines() if line.strip()],
        timed_out=result.timed_out,
        returncode=result.returncode,
        limit_s=limit_s,
        said=tail[-1] if tail else "no output",
    )


def _is_tensor(entry: dict[str, Any]) -> bool:
    """A top-level tensor input of a probe entry (the probe's ``kind``; entries without one are tensors)."""
    return entry.get("kind", "tensor") == "tensor"


def _shaped(entry: dict[str, Any]) -> bool:
    """A tensor input with at least one dimension: what a manifest shape can name (a 0-d tensor, such as
    GPU MODE's scalar output buffer, has none to write; the problem file makes it)."""
    return _is_tensor(entry) and len(entry.get("shape") or ()) > 0


def _extra_item(entry: dict[str, Any]) -> str:
    """``name:shape`` for a tensor with dimensions; a bare ``name`` for a 0-d tensor, a scalar, a structured
    input or ``state`` (made by the problem file)."""
    return f"{entry['name']}:{format_shape(entry['shape'])}" if _shaped(entry) else str(entry["name"])


def case_shapes(case: list[dict[str, Any]]) -> dict[str, str]:
    """The shapes that name one case in a manifest: ``{name: shape}`` of its tensor inputs with dimensions; a case
    with none (every input structured: a dict, a list of tuples) is named by the first tensor leaf of each
    structured input. Two cases alike here are one case to the manifest."""
    plain = {e["name"]: format_shape(e["shape"]) for e in case if _shaped(e)}
    if plain:
        return plain
    return {
        e["name"]: format_shape(leaf["shape"])
        for e in case
        if e.get("kind") == "tree"
        for leaf in (e.get("leaves") or [])[:1]
        if leaf.get("shape")
    }


def _shape_entries(shapes: list[list[dict[str, Any]]]) -> list[Any]:
    """``shapes`` of the manifest: the first input's shape per case, or ``{name: shape}`` (``case_shapes``) when
    there are several cases or the first input is not such a tensor."""
    head = shapes[0]
    if len(shapes) == 1 and _shaped(head[0]):
        return [format_shape(head[0]["shape"])]
    entries = [case_shapes(case) for case in shapes]
    if not all(entries):
        raise HotkernelError(
            f"{head[0]['name']}: no input of this problem holds a tensor with dimensions (scalars and 0-d tensors "
            "only); hotkernel names a case by a tensor's shape: make generate_input return one, or list the shapes "
            "by hand (shapes: [...])"
        )
    if head[0]["name"] not in entries[0] and head[0].get("kind") != "tree":
        raise HotkernelError(
            f"{head[0]['name']}: the first input is a {head[0].get('kind', 'tensor')} without dimensions, and a "
            "manifest names a case by its first input: make generate_input return a tensor or a structure first"
        )
    return entries


def problem_fields(probe: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Manifest keys of a module problem from its probe: input, shapes, extra (the rest of its inputs: tensors
    as ``name:shape``, scalars, structured inputs and a KernelBench Model's ``state`` as a bare name), structured
    (the structures a shape names by a tensor inside them, and a first input that is a structure), rotate
    (the problem's own inputs), outputs (the inputs the reference writes into and returns) and cases; keys in
    ``given`` win. Entries without ``kind`` (an older probe: Model tensors marked ``param``) still map."""
    shapes = probe["shapes"]
    head = shapes[0]
    fields: dict[str, Any] = {"input": head[0]["name"], "shapes": _shape_entries(shapes)}
    # structures the shapes name (by a tensor inside them: a label; the file makes the value), and a first input
    # that is a structure the shapes do not name (a config dict before the tensors)
    trees = [e["name"] for e in head if e.get("kind") == "tree"]
    named = fields["shapes"][0] if isinstance(fields["shapes"][0], dict) else {}
    structured = [name for name in trees if name in named or name == fields["input"]]
    if structured:
        fields["structured"] = structured
    fields["extra"] = [_extra_item(entry) for entry in head[1:]]
    fields["rotate"] = [e["name"] for e in head if "param" not in e and e.get("kind") != "state"]
    # inputs the reference writes into and returns, by name, or tensors inside a structured input by path
    outputs = list(probe.get("destinations") or [])
    if outputs:
        fields["outputs"] = outputs
    if probe.get("cases"):
        fields["cases"] = probe["cases"]
    fields.update({key: value for key, value in given.items() if value is not None})
    if not fields["extra"]:
        del fields["extra"]
    return fields


def fill_problem(ws: Workspace, fields: dict[str, Any], label: KeyLabel = yaml_label) -> dict[str, Any]:
    """``fields`` with a module problem's inputs and shapes read from its file (when ``from`` is ./problem.py
    and no shapes are given); other fields are returned as they are."""
    source = fields.get("from")
    if not isinstance(source, str) or not is_problem_source(source.strip()) or fields.get("shapes"):
        return fields
    path = safe_path(ws.root, source.strip(), what=label("from", ""))
    if not path.is_file():
        raise HotkernelError(f"{label('from', '')}: problem file {quote(source)} not found in {ws.root}")
    cases = fields.get("cases")
    if isinstance(cases, list):
        try:
            cases = [case_entry(case) for case in cases]
        except ValueError as err:
            raise HotkernelError(f"{label('cases', '')}: {err}") from None
        fields = {**fields, "cases": cases}
    reply = probe_problems(ws, [{"path": str(path), "scale": None, "cases": cases}])[0]
    if not reply["ok"]:
        raise HotkernelError(f"{label('from', '')}: {reply['error']}")
    return problem_fields(reply["probe"], fields)


def restore_manifest(ws: Workspace, before: str | None) -> None:
    """Put hotkernel.yaml back as it was before a failed edit: ``before`` its text, None: there was none."""
    if before is None:
        ws.manifest.unlink(missing_ok=True)
    elif not ws.manifest.is_file() or ws.manifest.read_text(encoding="utf-8") != before:
        write_manifest(ws.manifest, before)


def new_entry(ws: Workspace, name: str, fields: dict[str, Any], label: KeyLabel = yaml_label) -> dict[str, Any]:
    """The keys of a target being added or replaced: filled from its problem file (``fill_problem``), checked as
    the loader checks an entry, and its module functions checked in the user's python (``check_module_calls``);
    a one-line HotkernelError with the fix otherwise. Nothing is written."""
    fields = fill_problem(ws, fields, label)
    try:
        spec = check_target_fields(name, fields, ws.root)
    except ManifestProblem as problem:
        raise HotkernelError(_problem_text(problem, label)) from None
    check_module_calls(ws, spec, label)
    return fields


class TargetsAdded(BaseModel):
    """What ``add_targets`` did."""

    added: list[TargetEdit] = Field(description="the targets added, in the order given")
    refused: dict[str, str] = Field(description="target name -> why it was not added (one line, with the fix)")


def add_targets(
    ws: Workspace, entries: dict[str, dict[str, Any]], *, command: str = "hotkernel import"
) -> TargetsAdded:
    """Add many targets (name -> manifest keys) in one edit of the manifest, then render each: what
    ``change_target`` does for one, with one read, validation and write of hotkernel.yaml for them all
    (``manifest.edit.add_targets``). Each entry is checked before the lock as there (``new_entry``); one that
    fails is refused with its reason and the others go on. A target whose render fails is taken out of the
    manifest again and refused; any other failure leaves the manifest as it was and raises."""
    refused: dict[str, str] = {}
    ready: dict[str, dict[str, Any]] = {}
    for name, fields in entries.items():
        try:
            ready[name] = new_entry(ws, name, dict(fields))
        except HotkernelError as err:
            refused[name] = str(err)
    added: list[TargetEdit] = []
    if not ready:
        return TargetsAdded(added=added, refused=refused)
    with workspace_lock(ws, wait_s=EDIT_WAIT_S, command=command):
        before = ws.manifest.read_text(encoding="utf-8") if ws.manifest.is_file() else None
        try:
            outcome = add_entries(ws.manifest, ready, schema_ref=schema_reference(ws.root), command=command)
            for name in ready:
                try:
                    resolved = resolve_target(outcome.manifest, name)
                    bounds, rendered = resolved.bounds(), render_target(ws, name, resolved)
                except HotkernelError as err:
                    refused[name] = str(err)
                    edit_target(ws.manifest, name, mode="remove", command=command)
                    continue
                added.append(
                    TargetEdit(
                        target=name,
                        manifest=str(ws.manifest),
                        created_manifest=outcome.created,
                        replaced=False,
                        resolved=resolved,
                        correctness=bounds,
                        render=rendered,
                    )
                )
        except BaseException:
            restore_manifest(ws, before)
            raise
    return TargetsAdded(added=added, refused=refused)


def change_target(
    ws: Workspace,
    name: str,
    fields: dict[str, Any] | None = None,
    *,
    mode: EditMode = "add",
    label: KeyLabel = yaml_label,
    command: str = "hotkernel new",
) -> TargetEdit:
    """Validate ``fields`` (manifest keys), edit the manifest (``add``/``replace``/``update``/``remove``) and
    render the target under the workspace lock; the manifest is restored when any step fails. A new entry's
    module functions are checked before the lock (a run of the user's python, seconds where it imports torch), so
    edits from many threads or processes queue only for the write; an update that changes the calls is checked
    under it (its entry is the merge of the manifest's and ``fields``)."""
    fields = dict(fields or {})
    if mode in ("add", "replace"):
        fields = new_entry(ws, name, fields, label)
    with workspace_lock(ws, wait_s=EDIT_WAIT_S, command=command):
        before = ws.manifest.read_text(encoding="utf-8") if ws.manifest.is_file() else None
        try:
            outcome = edit_target(
                ws.manifest, name, fields, mode=mode, schema_ref=schema_reference(ws.root), command=command
            )
            if mode == "remove":
                resolved = bounds = rendered = None
            else:
                if mode == "update" and CALL_KEYS & set(fields):
                    check_module_calls(ws, outcome.manifest.targets[name], label)
                resolved = resolve_target(outcome.manifest, name)
                bounds = resolved.bounds()
                rendered = render_target(ws, name, resolved)
        except BaseException as err:
            restore_manifest(ws, before)
            if isinstance(err, HotkernelError):
                raise HotkernelError(_as_edit_error(str(err), name, label)) from None
            raise
    return TargetEdit(
        target=name,
        manifest=str(ws.manifest),
        created_manifest=outcome.created,
        replaced=outcome.replaced,
        resolved=resolved,
        correctness=bounds,
        render=rendered,
    )


# Run in the user's python for the module:function refs of a target being added or changed (the loader, which is
# torch-free, reads only files): each imports, and ``inspect.signature`` accepts the contract's call. Nothing is said
# where Python has no signature to read (many of torch's builtins). One JSON line per ref: null or [kind, problem].
MODULE_CALL_CHECK = r"""
import importlib, inspect, json, sys
for ref, positional, keywords in json.loads(sys.argv[1]):
    module, _, name = ref.partition(":")
    problem = None
    try:
        value = importlib.import_module(module)
        for part in name.split("."):
            value = getattr(value, part)
    except Exception as err:
        problem = ["import", "cannot import %s in %s (%s: %s)" % (ref, sys.executable, type(err).__name__, err)]
    else:
        try:
            signature = inspect.signature(value)
        except (TypeError, ValueError):
            signature = None
        try:
            if signature is not None:
                signature.bind(*range(positional), **dict.fromkeys(keywords))
        except TypeError as err:
            problem = ["call", "%s cannot take %d input(s)%s: %s" % (
                ref, positional, " and kwargs " + ", ".join(keywords) if keywords else "", err)]
    print(json.dumps(problem), flush=True)
"""
CALL_KEYS = {"from", "reference", "derive", "input", "extra", "inputs", "kwargs"}  # what an update must touch to
# change how the contract calls a target's functions (else its module-function check is not run again)
MODULE_CHECK_TIMEOUT_S = 120.0  # the python's start and the modules' imports (torch: seconds on a loaded box)


def check_module_calls(ws: Workspace, spec: TargetSpec, label: KeyLabel) -> None:
    """Each ``module:function`` the target names (``from``, ``reference``, ``derive``) imports in the user's
    python and accepts the contract's call (``calls_of``), checked in one run of that python; a one-line error
    with the fix otherwise. A file function is checked by the loader (``check_call``) without running it."""
    calls = [(key, ref, positional) for key, ref, positional in calls_of(spec) if MODULE_REF_RE.fullmatch(ref)]
    if not calls:
        return
    payload = json.dumps([[ref, positional, sorted(spec.kwargs)] for _, ref, positional in calls])
    run = run_user_python(ws, [MODULE_CALL_CHECK, payload], MODULE_CHECK_TIMEOUT_S, "check")
    if len(run.lines) < len(calls):
        key, ref, _ = calls[len(run.lines)]
        raise HotkernelError(f"{label(key, '')}: checking {ref} in {run.python}, it {run.why}: {run.said}")
    fixes = {
        "import": "fix the name, or set HOTKERNEL_PYTHON to the python that has it",
        "call": f"give what it needs as an input ({label('extra', '')} NAME:SHAPE) or a constant "
        f"({label('kwargs', '')} NAME=VALUE)",
    }
    for (key, _, _), line in zip(calls, run.lines, strict=False):
        problem = json.loads(line)
        if problem:
            raise HotkernelError(f"{label(key, '')}: {problem[1]}; {fixes[problem[0]]}")


def describe_bounds(edit: TargetEdit) -> str:
    """One line: the tolerances the contract will apply, and where they came from."""
    if edit.resolved is None or edit.correctness is None:
        return ""
    bounds = edit.correctness
    dtype = edit.resolved.dtype
    each = "".join(
        f"; output {index}: atol {entry['atol']:g}, rtol {entry['rtol']:g}, relative L2 error <= "
        f"{entry['rel_l2_max']:g}, correlation >= {entry['min_corr']:g}"
        for index, entry in enumerate(bounds.get("per_output") or [])
    )
    return (
        f"correctness ({dtype}): |out - ref| <= {bounds['atol']:g} + {bounds['rtol']:g} * |ref| elementwise, "
        f"relative L2 error <= {bounds['rel_l2_max']:g}, correlation with the reference >= {bounds['min_corr']:g}"
        + (f" (outputs without an entry of their own){each}" if each else "")
        + " (set atol/rtol in hotkernel.yaml to change the first two, output_tolerances to set any per output)"
    )
