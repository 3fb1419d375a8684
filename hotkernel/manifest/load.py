"""Reading ``hotkernel.yaml``: bounded before the YAML loader sees it, validated, every problem one line
``FILE:LINE: key: fix``.

Before the round-trip loader runs, the text is checked for size (MAX_FILE_BYTES) and line length (MAX_LINE);
while it runs, each YAML event is checked as the composer takes it (before anything is built or expanded) for
anchors and aliases, explicit tags, directives, scalars over MAX_STRING characters, more than MAX_NODES values
and nesting deeper than MAX_DEPTH. After it, numbers must be finite and written in
plain decimal (``0x5`` is read by YAML as 5, ``1_000`` as 1000: neither is what the text says).
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    DocumentStartEvent,
    MappingEndEvent,
    NodeEvent,
    ScalarEvent,
    SequenceEndEvent,
)
from ruamel.yaml.parser import RoundTripParser
from ruamel.yaml.scalarint import BinaryInt, HexInt, OctalInt, ScalarInt

from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest.model import (
    FUNCTION_REF_HELP,
    MAX_STRING,
    Defaults,
    Manifest,
    TargetSpec,
    is_parameter_name,
    output_input,
    shape_label,
)
from hotkernel.manifest.problem import ManifestProblem, did_you_mean
from hotkernel.manifest.problem_files import check_function_calls, check_function_file, check_problem
from hotkernel.workspace.paths import MANIFEST_NAME, TARGET_NAME_RE

MAX_FILE_BYTES = 512 << 10  # 512 KiB: 100 targets take about 15 KiB
MAX_NODES = 8000  # keys and values in the whole document: 100 targets take about 1,500 (and 60 ms to load)
MAX_LINE = 2 * MAX_STRING  # characters of one line
MAX_DEPTH = 32  # nested mappings/lists
MAX_INT = 2**63  # larger integers are refused (no key needs them; huge digit strings are slow to convert)
NAME_RULE = (
    "use a Python identifier such as rmsnorm (letters, digits, '_'; no '/', '..', spaces or newlines; "
    "at most 64 characters)"
)
NAME_HELP = f"target name is not allowed: {NAME_RULE}"


def yaml_rt() -> YAML:
    """The round-trip loader/dumper (keeps comments, quotes and line numbers)."""
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def display_path(path: Path) -> str:
    """The manifest path as the user most likely typed it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def is_target_name(name: Any) -> bool:
    """The target-name rule, with no trailing-newline hole (``fullmatch``)."""
    return isinstance(name, str) and TARGET_NAME_RE.fullmatch(name) is not None


def plain(value: Any) -> Any:
    """ruamel's round-trip containers and scalars -> plain dict/list/str/int/float/bool/None."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def allowed_keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


# ------------------------------------------------------------------------------------ bounds before parse


def check_bounds(text: str, display: str) -> None:
    """Refuse text the YAML loader would take too long, too much memory or too deep a stack to read."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_FILE_BYTES:
        raise HotkernelError(
            f"{display}:1: the manifest is {size} bytes, over the limit of {MAX_FILE_BYTES}; "
            "a manifest holds target entries only: move data into files"
        )
    start = 0
    line = 1
    while True:
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        if stop - start > MAX_LINE:
            raise HotkernelError(
                f"{display}:{line}: line of {stop - start} characters, over the limit of {MAX_LINE}; "
                "shorten it (or split a long list over several lines)"
            )
        if end < 0:
            break
        start = end + 1
        line += 1


class _EventBounds:
    """The checks on each YAML event as it is consumed (before the composer builds or expands anything)."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.depth = 0
        self.nodes = 0

    def check(self, event: Any) -> None:
        display = self.display
        line = event.start_mark.line + 1 if event.start_mark is not None else 1
        if isinstance(event, DocumentStartEvent) and (event.version or event.tags):
            raise HotkernelError(f"{display}:{line}: YAML directives (%YAML, %TAG) are not allowed; remove the line")
        if isinstance(event, AliasEvent):
            raise HotkernelError(
                f"{display}:{line}: YAML aliases (*{event.anchor}) are not allowed; write the value out"
            )
        if not isinstance(event, NodeEvent):
            if isinstance(event, (MappingEndEvent, SequenceEndEvent)):
                self.depth -= 1
            return
        if event.anchor is not None:
            raise HotkernelError(f"{display}:{line}: YAML anchors (&{event.anchor}) are not allowed; remove the anchor")
        tag = getattr(event, "tag", None)
        if tag is not None and not _implicit(event):
            raise HotkernelError(
                f"{display}:{line}: YAML tags ({quote(str(tag))}) are not allowed; write a plain value"
            )
        if isinstance(event, ScalarEvent) and len(event.value) > MAX_STRING:
            raise HotkernelError(
                f"{display}:{line}: a value of {len(event.value)} characters, over the limit of {MAX_STRING}; "
                "shorten it"
            )
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise HotkernelError(
                f"{display}:{line}: more than {MAX_NODES} keys and values; split the workspace (a target takes "
                "about 15)"
            )
        if isinstance(event, CollectionStartEvent):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise HotkernelError(
                    f"{display}:{line}: nested more than {MAX_DEPTH} levels deep; a manifest needs a few"
                )


def bounded_yaml(display: str) -> YAML:
    """The round-trip loader with every event checked as the composer takes it: one pass over the text."""
    bounds = _EventBounds(display)

    class BoundedParser(RoundTripParser):
        def get_event(self) -> Any:
            event = super().get_event()
            bounds.check(event)
            return event

    yaml = yaml_rt()
    yaml.Parser = BoundedParser
    return yaml


def check_events(text: str, display: str) -> None:
    """The event checks alone, over a whole text (for a small YAML snippet that another loader reads)."""
    bounds = _EventBounds(display)
    try:
        for event in YAML(typ="rt").parse(text):
            bounds.check(event)
    except MarkedYAMLError as err:
        raise _syntax_error(err, display) from None
    except YAMLError as err:
        raise HotkernelError(f"{display}: not valid YAML ({err.__class__.__name__}); fix the file") from None


def _implicit(event: NodeEvent) -> bool:
    """A tag the scanner filled in (plain/quoted scalars report the default), not one the text wrote."""
    implicit = getattr(event, "implicit", None)
    if isinstance(implicit, tuple):
        return bool(implicit[0] or implicit[1])
    return bool(implicit)


def _syntax_error(err: MarkedYAMLError, display: str) -> HotkernelError:
    mark = err.problem_mark or err.context_mark
    line = mark.line + 1 if mark is not None else 1
    problem = (err.problem or err.context or "not valid YAML").strip()
    if err.context and err.context_mark is not None and err.problem_mark is not None:
        problem += f" ({err.context.strip()} at line {err.context_mark.line + 1})"
    return HotkernelError(
        f"{display}:{line}: YAML syntax error: {problem}; fix the indentation or quoting there "
        "(quote values that contain ': ' or '#')"
    )


def parse_text(text: str, display: str) -> Any:
    """The round-trip document of ``text``, after the bounds; errors are ``FILE:LINE`` lines."""
    check_bounds(text, display)
    try:
        return bounded_yaml(display).load(text)
    except MarkedYAMLError as err:
        raise _syntax_error(err, display) from None
    except YAMLError as err:
        raise HotkernelError(f"{display}: not valid YAML ({err.__class__.__name__}); fix the file") from None


_READ_DOCUMENTS: dict[str, Any] = {}  # text -> the document it parses to (``display`` only names a failed parse)
READ_DOCUMENTS_KEPT = 4


def read_document(text: str, display: str) -> Any:
    """``parse_text`` of a manifest text, from the parse of an earlier call with the same text where this process
    kept it: the caller's own deep copy, so an edit may change it. A sync reads the manifest again for every
    record it writes, and an edit reads the old text, then validates and reads back the new one. A text that fails
    to parse is never kept; the checks after the parse run on every read."""
    document = _READ_DOCUMENTS.get(text)
    if document is None:
        document = parse_text(text, display)
        while len(_READ_DOCUMENTS) >= READ_DOCUMENTS_KEPT:
            _READ_DOCUMENTS.pop(next(iter(_READ_DOCUMENTS)))
        _READ_DOCUMENTS[text] = document
    return copy.deepcopy(document)


# ------------------------------------------------------------------------------------- checks after parse


def _as_written(value: ScalarInt) -> str | None:
    """How a non-decimal integer was written (``0x5``), None for a plain decimal one."""
    if isinstance(value, HexInt):
        return f"0x{int(value):x}"
    if isinstance(value, OctalInt):
        return f"0o{int(value):o}"
    if isinstance(value, BinaryInt):
        return f"0b{int(value):b}"
    if getattr(value, "_underscore", None):
        return f"{int(value):_}"
    return None


def check_values(node: Any, loc: tuple[Any, ...] = ()) -> None:
    """Values as the text says, of bounded size: finite floats, plain decimal integers under 2**63, strings and
    keys of at most MAX_STRING characters, at most MAX_DEPTH levels (iterative: no recursion)."""
    stack = [(node, loc)]
    while stack:
        item, where = stack.pop()
        if len(where) > MAX_DEPTH + 2:
            raise ManifestProblem(where[:MAX_DEPTH], f"nested more than {MAX_DEPTH} levels deep; flatten it")
        if isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and len(key) > MAX_STRING:
                    raise ManifestProblem(where, f"a key of {len(key)} characters: {quote(key)}; shorten it")
            stack.extend((value, (*where, key)) for key, value in item.items())
        elif isinstance(item, list):
            stack.extend((value, (*where, index)) for index, value in enumerate(item))
        elif isinstance(item, str) and len(item) > MAX_STRING:
            raise ManifestProblem(
                where, f"a value of {len(item)} characters, over the limit of {MAX_STRING}: {quote(item)}; shorten it"
            )
        elif isinstance(item, float) and not math.isfinite(item):
            raise ManifestProblem(where, f"{item} is not a finite number; write a finite value")
        elif isinstance(item, int) and not isinstance(item, bool):
            written = _as_written(item) if isinstance(item, ScalarInt) else None
            if written is not None:
                raise ManifestProblem(
                    where,
                    f"{written} is read by YAML as the number {int(item)}, not as written; write plain decimal "
                    "digits (a shape is dimensions of at least 1 separated by 'x', e.g. 4096x8192)",
                )
            if abs(item) >= MAX_INT:
                raise ManifestProblem(where, f"{quote(int(item))} is too large; use a number under 2**63")


def loc_line(node: Any, loc: tuple[Any, ...]) -> int:
    """1-based line of the deepest node on ``loc`` that exists in the parsed document."""
    line = 1
    for part in loc:
        if isinstance(node, CommentedMap) and part in node:
            line = node.lc.key(part)[0] + 1
            node = node[part]
        elif isinstance(node, CommentedSeq) and isinstance(part, int) and 0 <= part < len(node):
            line = node.lc.item(part)[0] + 1
            node = node[part]
        else:
            break
    return line


def dotted(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel]:
    """The model whose keys are valid at ``loc`` (the parent of an unknown key)."""
    if len(loc) >= 2 and loc[0] == "targets":
        return TargetSpec
    if loc and loc[0] == "defaults":
        return Defaults
    return Manifest


def describe_pydantic_error(error: dict[str, Any]) -> tuple[tuple[Any, ...], str]:
    """(key path, message) of one pydantic error; a bad value is quoted to at most ~200 characters."""
    loc = tuple(error["loc"])
    kind = error["type"]
    given = error.get("input")
    if kind == "extra_forbidden":
        key = str(loc[-1])
        allowed = allowed_keys(_model_at(loc[:-1]))
        return loc, f"unknown key; {did_you_mean(key, allowed)}allowed keys: {', '.join(allowed)}"
    if kind == "missing":
        key = str(loc[-1])
        hint = {
            "from": f" ({FUNCTION_REF_HELP})",
            "shapes": " (e.g. shapes: [4096x8192])",
            "version": " (add version: 1)",
        }
        return loc, f"{key!r} is required{hint.get(key, '')}"
    if kind == "value_error":
        return loc, str(error.get("ctx", {}).get("error", error["msg"]))
    if kind in ("literal_error", "enum"):
        choices = str(error.get("ctx", {}).get("expected", "")).replace(" or ", ", ").replace("'", "")
        one = "," not in choices
        return loc, f"{quote(given)} is not allowed; use {'' if one else 'one of '}{choices}"
    if kind == "list_type":
        key = str(loc[-1])
        shown = (str(given) if len(str(given)) <= 80 else "...") if given is not None else "..."
        return loc, f"expected a list, got {quote(given)}; write {key}: [{shown}]"
    if kind == "too_short":
        return loc, "must not be empty; give at least one item"
    if kind == "too_long":
        return loc, f"too many items; at most {error.get('ctx', {}).get('max_length')}"
    if kind in ("dict_type", "model_type"):
        return loc, f"expected a mapping of key: value pairs, got {quote(given)}"
    return loc, f"{error['msg'].rstrip('.')} (got {quote(given)})"


def check_target(name: str, spec: TargetSpec, root: Path | None) -> None:
    """Cross-field rules pydantic cannot place on a line: names, shape mappings, rotate, derive, files."""
    base: tuple[Any, ...] = ("targets", name)
    if not is_target_name(name):
        raise ManifestProblem(base, NAME_HELP)
    names = [spec.input]
    for index, item in enumerate(spec.extra):
        extra_name = item.partition(":")[0]
        if extra_name in names:
            raise ManifestProblem((*base, "extra", index), f"input {extra_name!r} is listed twice; rename one")
        names.append(extra_name)
    labels: set[str] = set()
    for index, entry in enumerate(spec.shapes):
        loc = (*base, "shapes", index)
        if isinstance(entry, dict):
            unknown = [key for key in entry if key not in names]
            if unknown:
                raise ManifestProblem(
                    loc,
                    f"{quote(unknown[0])} is not an input of this target; "
                    f"{did_you_mean(unknown[0], names)}inputs: {', '.join(names)}",
                )
            if index == 0 and spec.input not in entry and spec.input not in spec.structured:
                raise ManifestProblem(loc, f"the headline shape must give the first input {spec.input!r}")
        label = shape_label(spec, entry)
        if label in labels:
            shown = label if len(label) <= 80 else quote(label)
            raise ManifestProblem(loc, f"shape {shown} is listed twice; remove one")
        labels.add(label)
    for key, listed in (("rotate", spec.rotate or []), ("structured", spec.structured)):
        for index, item in enumerate(listed):
            if item not in names:
                raise ManifestProblem(
                    (*base, key, index),
                    f"{quote(item)} is not an input of this target; "
                    f"{did_you_mean(item, names)}inputs: {', '.join(names)}",
                )
    called = list(spec.inputs) if spec.inputs is not None else names  # what the kernel receives
    for index, item in enumerate(spec.outputs):
        if output_input(item) not in called:
            raise ManifestProblem(
                (*base, "outputs", index),
                f"{quote(item)} names no input of the kernel; "
                f"{did_you_mean(output_input(item), called)}inputs: {', '.join(called)}",
            )
    for key in spec.kwargs:
        if not is_parameter_name(str(key)):
            raise ManifestProblem(
                (*base, "kwargs", key),
                f"{quote(key)} is not a keyword argument name; use a Python identifier that is not a keyword",
            )
        if key in names:
            raise ManifestProblem((*base, "kwargs", key), f"{key!r} is also an input name; rename one")
    try:
        check_values(plain(spec.kwargs), (*base, "kwargs"))
    except ManifestProblem:
        raise ManifestProblem(
            (*base, "kwargs"),
            "values must be plain numbers, strings, booleans, null or lists/mappings of them (no nan/inf)",
        ) from None
    if (spec.derive is None) != (spec.inputs is None):
        missing = "inputs" if spec.inputs is None else "derive"
        raise ManifestProblem(
            (*base, "derive" if spec.derive else "inputs"),
            f"derive and inputs go together; add {missing!r} (docs/manifest.md, 'derive')",
        )
    if spec.inputs is not None and len(set(spec.inputs)) != len(spec.inputs):
        raise ManifestProblem((*base, "inputs"), "a derived input is listed twice; rename one")
    check_problem(spec, base, root)
    if root is not None:
        refs = (("from", spec.from_), ("reference", spec.reference), ("derive", spec.derive))
        defs = {key: check_function_file(root, ref, (*base, key)) for key, ref in refs if ref is not None}
        check_function_calls(spec, defs, base)


def check_target_fields(name: str, fields: dict[str, Any], root: Path | None) -> TargetSpec:
    """Validate one entry on its own; raises ManifestProblem whose ``loc`` starts ``("targets", name)``."""
    base = ("targets", name)
    if not is_target_name(name):
        raise ManifestProblem(base, f"target name {quote(name)} is not allowed: {NAME_RULE}")
    check_values(fields, base)
    try:
        spec = TargetSpec.model_validate(plain(fields))
    except ValidationError as err:
        first = dict(err.errors()[0])
        first["loc"] = (*base, *first["loc"])
        raise ManifestProblem(*describe_pydantic_error(first)) from None
    check_target(name, spec, root)
    return spec


def _validate_document(doc: Any, display: str, root: Path | None) -> Manifest:
    if doc is None:
        raise HotkernelError(
            f"{display}:1: the manifest is empty; start it with `version: 1` and a `targets:` "
            "mapping (or run `hotkernel new NAME --from FILE.py:FUNC --shape ...`)"
        )
    if not isinstance(doc, CommentedMap):
        raise HotkernelError(f"{display}:1: the manifest must be a mapping with version, defaults and targets")
    try:
        check_values(doc)
        data = plain(doc)
        if data.get("targets") is None and "targets" in data:
            data["targets"] = {}
        if isinstance(data.get("targets"), dict):
            for name in data["targets"]:
                if not is_target_name(name):
                    raise ManifestProblem(("targets", name), NAME_HELP)
        try:
            manifest = Manifest.model_validate(data)
        except ValidationError as err:
            errors = sorted(err.errors(), key=lambda e: loc_line(doc, tuple(e["loc"])))
            loc, message = describe_pydantic_error(errors[0])
            more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
            raise ManifestProblem(loc, message + more) from None
        for name, spec in manifest.targets.items():
            check_target(name, spec, root)
    except ManifestProblem as problem:
        line = loc_line(doc, problem.loc)
        raise HotkernelError(f"{display}:{line}: {quote_loc(problem.loc)}: {problem.message}") from None
    return manifest


def quote_loc(loc: tuple[Any, ...]) -> str:
    """The dotted key path, each part cut short (a key can be as long as any string)."""
    return dotted(tuple(part if len(str(part)) <= 80 else quote(str(part))[:80] + "..." for part in loc))


def load_manifest_text(text: str, path: Path | str = MANIFEST_NAME, *, check_files: bool = True) -> Manifest:
    """Validate manifest ``text`` as if read from ``path`` (``./x.py:fn`` files are checked under its dir)."""
    path = Path(path)
    display = display_path(path)
    doc = read_document(text, display)
    manifest = _validate_document(doc, display, path.parent if check_files else None)
    manifest._root = path.parent.resolve()
    return manifest


def read_manifest_text(path: Path) -> str:
    """The manifest's text, bounded in size before it is read whole; a missing file says how to make one."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise HotkernelError(
            f"{display_path(path)} not found: run `hotkernel new NAME --from FILE.py:FUNC --shape ...` to create it"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise HotkernelError(f"{display_path(path)}: cannot read ({err.__class__.__name__}); check the file") from None
    return text


def load_manifest(path: Path | str, *, check_files: bool = True) -> Manifest:
    """Read and validate ``hotkernel.yaml`` itself (its text read every time, its parse kept: ``read_document``);
    a problem is one line ``FILE:LINE: key: fix``."""
    path = Path(path)
    return load_manifest_text(read_manifest_text(path), path, check_files=check_files)
