"""The workspace manifest ``hotkernel.yaml``: pydantic models, a loader whose errors name ``FILE:LINE``, the
render context of a target (``resolved_target``), and round-trip edits that keep every untouched byte.

Every key is documented in ``docs/manifest.md``; ``schemas/hotkernel.schema.json`` is generated from them.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import io
import json
import keyword
import math
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    WithJsonSchema,
)
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from hotkernel.errors import HotkernelError
from hotkernel.workspace.paths import MANIFEST_NAME, TARGET_NAME_RE

MANIFEST_VERSION = 1
SCHEMA_MODELINE_PREFIX = "# yaml-language-server: $schema="
DTYPES = ("bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2")
DTYPE_ALIASES = {
    "bfloat16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "float32": "fp32",
    "float": "fp32",
    "float8_e4m3fn": "fp8_e4m3",
    "float8_e5m2": "fp8_e5m2",
}
# Default (atol, rtol) against the fp32 reference (fp64 for fp32 targets): about 2.5 units in the last place
# of the dtype at 1.0 for bf16/fp16, tight enough to catch TF32 shortcuts for fp32, one ulp for fp8.
DEFAULT_TOLERANCES = {
    "bf16": (0.02, 0.02),
    "fp16": (2.5e-3, 2.5e-3),
    "fp32": (1e-4, 1e-4),
    "fp8_e4m3": (0.125, 0.125),
    "fp8_e5m2": (0.25, 0.25),
}
DEVICES = ("cuda", "cpu")
SHAPE_PATTERN = r"^\s*[1-9][0-9]*(\s*[x×]\s*[1-9][0-9]*)*\s*$"
IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MODULE_REF_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
FILE_REF_RE = re.compile(r"^(?P<path>[^:]+\.py):(?P<func>[A-Za-z_][A-Za-z0-9_]*)$")
FUNCTION_REF_HELP = "write module:function (e.g. torch.nn.functional:rms_norm) or ./file.py:function"
# Canonical key order of a target entry: new entries are written in this order.
TARGET_KEY_ORDER = (
    "from",
    "input",
    "shapes",
    "extra",
    "dtype",
    "kwargs",
    "rotate",
    "derive",
    "inputs",
    "reference",
    "flops",
    "bytes",
    "min_bytes",
    "atol",
    "rtol",
    "seed",
    "iters",
    "device",
)


# --------------------------------------------------------------------------------------- value parsing


def parse_shape(value: Any) -> tuple[int, ...]:
    """``"4096x8192"`` (or the integer ``8192``) -> ``(4096, 8192)``; anything else raises ValueError."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{value!r} is not a shape; write dimensions separated by 'x', e.g. 4096x8192")
    text = str(value)
    if not re.match(SHAPE_PATTERN, text):
        raise ValueError(
            f"{text!r} is not a shape; write positive dimensions separated by 'x', e.g. 4096x8192 "
            "(a 1-D shape is just 8192)"
        )
    return tuple(int(part) for part in re.split(r"[x×]", text.replace(" ", "")))


def format_shape(dims: tuple[int, ...] | list[int]) -> str:
    """``(4096, 8192)`` -> ``"4096x8192"``."""
    return "x".join(str(dim) for dim in dims)


def normalise_dtype(value: Any) -> str:
    """Canonical dtype name; aliases such as ``bfloat16`` map to ``bf16``."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in DTYPES:
            return lowered
        if lowered in DTYPE_ALIASES:
            return DTYPE_ALIASES[lowered]
    raise ValueError(f"{value!r} is not allowed; use one of {', '.join(DTYPES)}")


def _shape_entry(value: Any) -> str | dict[str, str]:
    """A ``shapes`` item: a shape of the first input, or a mapping input name -> shape."""
    if isinstance(value, dict):
        if not value:
            raise ValueError("an empty mapping is not a shape; write input: shape pairs, e.g. {x: 1024x8192}")
        entry: dict[str, str] = {}
        for key, shape in value.items():
            if not is_parameter_name(key):
                raise ValueError(f"{key!r} is not an input name; use the name of an input, e.g. x or w")
            entry[key] = format_shape(parse_shape(shape))
        return entry
    return format_shape(parse_shape(value))


def _extra_entry(value: Any) -> str:
    """An ``extra`` item ``name:shape``, normalised."""
    if isinstance(value, str) and ":" in value:
        name, _, shape = value.partition(":")
        name = name.strip()
        if is_parameter_name(name):
            return f"{name}:{format_shape(parse_shape(shape.strip()))}"
    raise ValueError(f"{value!r} is not an extra input; write name:shape, e.g. w:8192 (a name that is not a "
                     "Python keyword)")


def _function_ref(value: Any) -> str:
    """``module:function`` or ``path/file.py:function``; the file is checked by the loader."""
    if isinstance(value, str):
        text = value.strip()
        if MODULE_REF_RE.match(text) or FILE_REF_RE.match(text):
            return text
    raise ValueError(f"{value!r} is not a function reference; {FUNCTION_REF_HELP}")


def is_parameter_name(name: Any) -> bool:
    """A name usable as a Python parameter: an identifier that is not a keyword (``lambda``, ``class``)."""
    return isinstance(name, str) and bool(IDENTIFIER_RE.match(name)) and not keyword.iskeyword(name)


def _identifier(value: Any) -> str:
    if is_parameter_name(value):
        return value
    raise ValueError(f"{value!r} is not a valid name; use a Python identifier that is not a keyword, such as x or w")


ShapeEntry = Annotated[
    str | dict[str, str],
    BeforeValidator(_shape_entry),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": SHAPE_PATTERN},
                {"type": "integer", "minimum": 1},
                {
                    "type": "object",
                    "additionalProperties": {
                        "anyOf": [
                            {"type": "string", "pattern": SHAPE_PATTERN},
                            {"type": "integer", "minimum": 1},
                        ]
                    },
                    "minProperties": 1,
                },
            ],
            "description": "A shape such as 4096x8192 (of the first input), or a mapping input name -> shape "
            "(inputs it does not name keep their headline shape).",
        }
    ),
]
ExtraEntry = Annotated[
    str,
    BeforeValidator(_extra_entry),
    WithJsonSchema({"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*:" + SHAPE_PATTERN[1:]}),
]
FunctionRef = Annotated[
    str,
    BeforeValidator(_function_ref),
    WithJsonSchema({"type": "string", "pattern": r"^[^:\s]+:[A-Za-z_][A-Za-z0-9_]*$"}),
]
Dtype = Annotated[
    str,
    BeforeValidator(normalise_dtype),
    WithJsonSchema({"type": "string", "enum": [*DTYPES, *DTYPE_ALIASES]}),
]
Identifier = Annotated[
    str, BeforeValidator(_identifier), WithJsonSchema({"type": "string", "pattern": IDENTIFIER_RE.pattern})
]
KwargValue = Annotated[
    Any,
    WithJsonSchema({"type": ["string", "number", "integer", "boolean", "null", "array", "object"]}),
]


# ---------------------------------------------------------------------------------------------- models


class Defaults(BaseModel):
    """Workspace-wide settings; a target inherits dtype, device, seed and iters from here."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(
        7, ge=1, le=1000, description="Runs per side for `hotkernel verify` and `sync` (default 7)."
    )
    warmup: int = Field(1, ge=0, le=100, description="Untimed warm-up runs before bench/verify (default 1).")
    device: Literal["cuda", "cpu"] = Field("cuda", description="Device of targets that do not set one.")
    dtype: Dtype = Field("bf16", description="dtype of targets that do not set one (default bf16).")
    python: str | None = Field(
        None,
        description="Interpreter that has torch (absolute, relative to the workspace, or a name on PATH). "
        "HOTKERNEL_PYTHON overrides it; unset = the first python/python3 on PATH that imports torch.",
    )
    timeout_s: float = Field(300.0, gt=0, description="Wall-clock limit of one run in seconds (default 300).")
    seed: int | None = Field(
        None, ge=0, description="Seed of targets that do not set one; null = a fresh random seed every run."
    )
    iters: int | None = Field(
        None,
        ge=1,
        description="Timed calls per repetition of targets that do not set one; null = sized by the timer.",
    )


class TargetSpec(BaseModel):
    """One target: the function to beat, the inputs it is called with, and how results are checked."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: FunctionRef = Field(
        alias="from",
        description="The baseline: module:function (importable in the user's python) or ./file.py:function "
        "(relative to the workspace root).",
    )
    shapes: list[ShapeEntry] = Field(
        min_length=1,
        description="One or more shapes; the first is the headline. A string is the first input's shape; a "
        "mapping gives input name -> shape (unnamed inputs keep their headline shape). Correctness is "
        "checked and timing "
        "reported at every shape.",
    )
    input: Identifier = Field("x", description="Name of the first input (default x).")
    dtype: Dtype | None = Field(
        None, description="Element type of every input; default: defaults.dtype (bf16)."
    )
    extra: list[ExtraEntry] = Field(
        default_factory=list,
        description="Further random inputs after the first, in call order, as name:shape (e.g. w:8192).",
    )
    kwargs: dict[str, KwargValue] = Field(
        default_factory=dict,
        description="Constants passed as keyword arguments to baseline, candidate, reference and derive "
        "(e.g. dim: -1).",
    )
    rotate: list[Identifier] | None = Field(
        None,
        description="Inputs that stream through memory: each gets K distinct copies so timed calls do not "
        "hit in cache. Default: the first input.",
    )
    flops: float | None = Field(
        None, ge=0, description="Floating-point operations of one call (for the roofline)."
    )
    bytes_: int | None = Field(
        None,
        alias="bytes",
        ge=0,
        description="Bytes one call moves; default: inputs + outputs, computed at run time.",
    )
    min_bytes: int | None = Field(
        None,
        ge=0,
        description="Bytes any correct implementation must move; a time below min_bytes / measured bandwidth "
        "is invalid. Default: bytes.",
    )
    reference: FunctionRef | None = Field(
        None,
        description="Function computing the right answer in fp32 (fp64 for fp32 targets) when the baseline "
        "cannot; default: the baseline itself run on upcast inputs.",
    )
    derive: FunctionRef | None = Field(
        None,
        description="Hook derive(*raw_inputs, **kwargs) turning the raw random tensors into the call's "
        "inputs (e.g. a quantized, packed weight); needs `inputs`.",
    )
    inputs: list[Identifier] | None = Field(
        None, description="Names of the tensors `derive` returns, in call order (required with derive)."
    )
    atol: float | None = Field(
        None, ge=0, description="Absolute tolerance; default by dtype (docs/manifest.md)."
    )
    rtol: float | None = Field(
        None, ge=0, description="Relative tolerance; default by dtype (docs/manifest.md)."
    )
    seed: int | None = Field(
        None,
        ge=0,
        description="Fixed seed for the random inputs; default: a fresh seed every run (recommended).",
    )
    iters: int | None = Field(
        None, ge=1, description="Timed calls per repetition; default: sized by the timer."
    )
    device: Literal["cuda", "cpu"] | None = Field(None, description="cuda or cpu; default: defaults.device.")


class Manifest(BaseModel):
    """The whole ``hotkernel.yaml``."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = Field(description="Manifest format version; 1.")
    defaults: Defaults = Field(default_factory=Defaults, description="Workspace-wide settings.")
    targets: dict[str, TargetSpec] = Field(
        default_factory=dict, description="Target name (a Python identifier) -> target."
    )
    _root: Path | None = PrivateAttr(default=None)

    @property
    def root(self) -> Path | None:
        """The workspace directory the manifest was loaded from (None when validated from bare text)."""
        return self._root

    @property
    def python(self) -> str | None:
        """``defaults.python`` with a relative path made absolute against the workspace root."""
        value = self.defaults.python
        if value and self._root is not None and ("/" in value or os.sep in value):
            candidate = Path(os.path.expanduser(value))
            return str(candidate if candidate.is_absolute() else self._root / candidate)
        return value


# --------------------------------------------------------------------------------------------- loading


def _yaml() -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    return yaml


def _display(path: Path) -> str:
    """The manifest path as the user most likely typed it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _plain(value: Any) -> Any:
    """ruamel's round-trip containers and scalars -> plain dict/list/str/int/float/bool/None."""
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def _loc_line(node: Any, loc: tuple[Any, ...]) -> int:
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


def _dotted(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _allowed_keys(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel]:
    """The model whose keys are valid at ``loc`` (the parent of an unknown key)."""
    if len(loc) >= 2 and loc[0] == "targets":
        return TargetSpec
    if loc and loc[0] == "defaults":
        return Defaults
    return Manifest


def _did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


class ManifestProblem(Exception):
    """A problem at a place in the document: ``loc`` is the key path, ``message`` says what to fix."""

    def __init__(self, loc: tuple[Any, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


def _describe_pydantic_error(error: dict[str, Any]) -> tuple[tuple[Any, ...], str]:
    loc = tuple(error["loc"])
    kind = error["type"]
    given = error.get("input")
    if kind == "extra_forbidden":
        key = str(loc[-1])
        allowed = _allowed_keys(_model_at(loc[:-1]))
        return loc, f"unknown key; {_did_you_mean(key, allowed)}allowed keys: {', '.join(allowed)}"
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
        return loc, f"{given!r} is not allowed; use {'' if one else 'one of '}{choices}"
    if kind == "list_type":
        key = str(loc[-1])
        return loc, f"expected a list, got {given!r}; write {key}: [{given if given is not None else '...'}]"
    if kind == "too_short":
        return loc, "must not be empty; give at least one item"
    if kind in ("dict_type", "model_type"):
        return loc, f"expected a mapping of key: value pairs, got {given!r}"
    return loc, f"{error['msg'].rstrip('.')} (got {given!r})"


def _check_function_file(root: Path, ref: str, loc: tuple[Any, ...]) -> None:
    """For ``./file.py:function``: the file is inside the workspace and defines ``function`` at top level."""
    match = FILE_REF_RE.match(ref)
    if not match:
        return
    rel, func = match["path"], match["func"]
    root_resolved = root.resolve()
    file = (root_resolved / rel).resolve()
    if file != root_resolved and root_resolved not in file.parents:
        raise ManifestProblem(loc, f"{rel!r} is outside the workspace; put the file inside {root_resolved}")
    if not file.is_file():
        raise ManifestProblem(
            loc, f"file {rel!r} not found (relative to {root_resolved}); create it or fix the path"
        )
    try:
        tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    except (SyntaxError, UnicodeDecodeError, ValueError) as err:
        line = getattr(err, "lineno", None)
        raise ManifestProblem(
            loc,
            f"{rel}{':' + str(line) if line else ''} does not parse ({err.__class__.__name__}); fix the file",
        ) from None
    defined = _top_level_names(tree)
    if func not in defined:
        hint = _did_you_mean(func, sorted(defined))
        raise ManifestProblem(
            loc, f"{rel} defines no function {func!r}; {hint}define it at the top level of {rel}"
        )


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def raw_inputs(spec: TargetSpec) -> list[tuple[str, str]]:
    """The random tensors generated for a target, in call order: ``[(name, headline shape), ...]``."""
    first = spec.shapes[0]
    head = first if isinstance(first, str) else first.get(spec.input, "")
    pairs = [(spec.input, head)]
    for item in spec.extra:
        name, _, shape = item.partition(":")
        pairs.append((name, shape))
    return pairs


def _check_target(name: str, spec: TargetSpec, root: Path | None) -> None:
    """Cross-field rules pydantic cannot place on a line: names, shape mappings, rotate, derive, files."""
    base: tuple[Any, ...] = ("targets", name)
    if not TARGET_NAME_RE.match(name):
        raise ManifestProblem(
            base,
            "target name is not allowed: use a Python identifier such as rmsnorm (letters, digits, '_'; "
            "no '/', '..' or spaces; at most 64 characters)",
        )
    names = [spec.input]
    for index, item in enumerate(spec.extra):
        extra_name = item.partition(":")[0]
        if extra_name in names:
            raise ManifestProblem(
                (*base, "extra", index), f"input {extra_name!r} is listed twice; rename one"
            )
        names.append(extra_name)
    labels: set[str] = set()
    for index, entry in enumerate(spec.shapes):
        loc = (*base, "shapes", index)
        if isinstance(entry, dict):
            unknown = [key for key in entry if key not in names]
            if unknown:
                raise ManifestProblem(
                    loc,
                    f"{unknown[0]!r} is not an input of this target; "
                    f"{_did_you_mean(unknown[0], names)}inputs: {', '.join(names)}",
                )
            if index == 0 and spec.input not in entry:
                raise ManifestProblem(loc, f"the headline shape must give the first input {spec.input!r}")
        label = shape_label(spec, entry)
        if label in labels:
            raise ManifestProblem(loc, f"shape {label} is listed twice; remove one")
        labels.add(label)
    for index, rotated in enumerate(spec.rotate or []):
        if rotated not in names:
            raise ManifestProblem(
                (*base, "rotate", index),
                f"{rotated!r} is not an input of this target; "
                f"{_did_you_mean(rotated, names)}inputs: {', '.join(names)}",
            )
    for key in spec.kwargs:
        if not is_parameter_name(str(key)):
            raise ManifestProblem(
                (*base, "kwargs", key), f"{key!r} is not a keyword argument name; use a Python identifier "
                "that is not a keyword"
            )
        if key in names:
            raise ManifestProblem((*base, "kwargs", key), f"{key!r} is also an input name; rename one")
    try:
        json.dumps(_plain(spec.kwargs), allow_nan=False)
    except (TypeError, ValueError):
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
    if root is not None:
        for key, ref in (("from", spec.from_), ("reference", spec.reference), ("derive", spec.derive)):
            if ref is not None:
                _check_function_file(root, ref, (*base, key))


def check_target_fields(name: str, fields: dict[str, Any], root: Path | None) -> TargetSpec:
    """Validate one entry on its own; raises ManifestProblem whose ``loc`` starts ``("targets", name)``."""
    base = ("targets", name)
    try:
        spec = TargetSpec.model_validate(_plain(fields))
    except ValidationError as err:
        first = dict(err.errors()[0])
        first["loc"] = (*base, *first["loc"])
        raise ManifestProblem(*_describe_pydantic_error(first)) from None
    _check_target(name, spec, root)
    return spec


def shape_label(spec: TargetSpec, entry: str | dict[str, str]) -> str:
    """How a ``shapes`` entry is named in results: the shape itself, or ``name=shape,...`` for a mapping."""
    if isinstance(entry, str):
        return entry
    if list(entry) == [spec.input]:
        return entry[spec.input]
    order = [name for name, _ in raw_inputs(spec)]
    return ",".join(f"{key}={entry[key]}" for key in sorted(entry, key=order.index))


def _parse_text(text: str, display: str) -> Any:
    try:
        return _yaml().load(text)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = (err.problem or err.context or "not valid YAML").strip()
        if err.context and err.context_mark is not None and err.problem_mark is not None:
            problem += f" ({err.context.strip()} at line {err.context_mark.line + 1})"
        raise HotkernelError(
            f"{display}:{line}: YAML syntax error: {problem}; fix the indentation or quoting there "
            "(quote values that contain ': ' or '#')"
        ) from None
    except YAMLError as err:
        raise HotkernelError(f"{display}: not valid YAML ({err.__class__.__name__}); fix the file") from None


def _validate_document(doc: Any, display: str, root: Path | None) -> Manifest:
    if doc is None:
        raise HotkernelError(
            f"{display}:1: the manifest is empty; start it with `version: 1` and a `targets:` "
            "mapping (or run `hotkernel new NAME --from FILE.py:FUNC --shape ...`)"
        )
    if not isinstance(doc, CommentedMap):
        raise HotkernelError(
            f"{display}:1: the manifest must be a mapping with version, defaults and targets"
        )
    data = _plain(doc)
    if data.get("targets") is None and "targets" in data:
        data["targets"] = {}
    try:
        if isinstance(data.get("targets"), dict):
            for name in data["targets"]:
                if not TARGET_NAME_RE.match(name):
                    raise ManifestProblem(
                        ("targets", name),
                        "target name is not allowed: use a Python identifier "
                        "such as rmsnorm (letters, digits, '_'; no '/', '..' or spaces)",
                    )
        try:
            manifest = Manifest.model_validate(data)
        except ValidationError as err:
            errors = sorted(err.errors(), key=lambda e: _loc_line(doc, tuple(e["loc"])))
            loc, message = _describe_pydantic_error(errors[0])
            more = (
                f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
                if len(errors) > 1
                else ""
            )
            raise ManifestProblem(loc, message + more) from None
        for name, spec in manifest.targets.items():
            _check_target(name, spec, root)
    except ManifestProblem as problem:
        line = _loc_line(doc, problem.loc)
        raise HotkernelError(f"{display}:{line}: {_dotted(problem.loc)}: {problem.message}") from None
    return manifest


def load_manifest_text(text: str, path: Path | str = MANIFEST_NAME, *, check_files: bool = True) -> Manifest:
    """Validate manifest ``text`` as if read from ``path`` (``./x.py:fn`` files are checked under its dir)."""
    path = Path(path)
    display = _display(path)
    doc = _parse_text(text, display)
    manifest = _validate_document(doc, display, path.parent if check_files else None)
    manifest._root = path.parent.resolve()
    return manifest


def load_manifest(path: Path | str, *, check_files: bool = True) -> Manifest:
    """Read and validate ``hotkernel.yaml``; a problem is one HotkernelError line ``FILE:LINE: key: fix``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HotkernelError(
            f"{_display(path)} not found: run `hotkernel new NAME --from FILE.py:FUNC --shape ...` "
            "to create it"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise HotkernelError(
            f"{_display(path)}: cannot read ({err.__class__.__name__}); check the file"
        ) from None
    cached = _cached_manifest(path, text) if check_files else None
    if cached is not None:
        return cached
    manifest = load_manifest_text(text, path, check_files=check_files)
    if check_files:
        _write_manifest_cache(path, text, manifest)
    return manifest


# A validated manifest is remembered in the workspace's scratch directory, keyed by the manifest's bytes and
# the stat of every ./file.py it names and of this module: `hotkernel plan` then skips the (slow) YAML parse.
CACHE_RELATIVE = Path(".hotkernel") / "tmp" / "manifest-cache.json"


def _file_refs(manifest: Manifest) -> list[str]:
    refs = set()
    for spec in manifest.targets.values():
        for ref in (spec.from_, spec.reference, spec.derive):
            match = FILE_REF_RE.match(ref) if ref else None
            if match:
                refs.add(match["path"])
    return sorted(refs)


def _stat_key(path: Path) -> list[int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return [stat.st_mtime_ns, stat.st_size]


def _cache_identity(path: Path, text: str) -> dict[str, Any]:
    return {
        "format": 1,
        "module": _stat_key(Path(__file__)),
        "manifest_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "root": str(path.parent.resolve()),
    }


def _cached_manifest(path: Path, text: str) -> Manifest | None:
    """The manifest as validated last time, when nothing it depends on changed; else None."""
    root = path.parent.resolve()
    try:
        cached = json.loads((root / CACHE_RELATIVE).read_text(encoding="utf-8"))
        if cached.get("identity") != _cache_identity(path, text):
            return None
        for rel, key in cached["files"].items():
            if _stat_key(root / rel) != key:
                return None
        manifest = Manifest.model_validate(cached["data"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    manifest._root = root
    return manifest


def _write_manifest_cache(path: Path, text: str, manifest: Manifest) -> None:
    """Best effort: a workspace that cannot be written to just re-parses next time."""
    root = path.parent.resolve()
    entry = {
        "identity": _cache_identity(path, text),
        "files": {rel: _stat_key(root / rel) for rel in _file_refs(manifest)},
        "data": manifest.model_dump(mode="json", by_alias=True, exclude_unset=True),
    }
    try:
        (root / CACHE_RELATIVE).parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(root / CACHE_RELATIVE, json.dumps(entry))
    except OSError:
        pass


# ---------------------------------------------------------------------------------- the render context


def target_names(manifest: Manifest) -> list[str]:
    return list(manifest.targets)


def get_target(manifest: Manifest, name: str) -> TargetSpec:
    """The spec of ``name`` or a HotkernelError listing the targets."""
    if name not in manifest.targets:
        known = list(manifest.targets)
        hint = _did_you_mean(name, known)
        listing = ", ".join(known) if known else "none yet"
        raise HotkernelError(f"no target {name!r} in {MANIFEST_NAME}; {hint}targets: {listing}")
    return manifest.targets[name]


def resolved_target(manifest: Manifest, name: str) -> dict[str, Any]:
    """The render context of ``name``: every default filled in, JSON-serialisable (docs/architecture.md)."""
    spec = get_target(manifest, name)
    defaults = manifest.defaults
    dtype = spec.dtype or defaults.dtype
    default_atol, default_rtol = DEFAULT_TOLERANCES[dtype]
    pairs = raw_inputs(spec)
    inputs = []
    for input_name, headline in pairs:
        shapes = []
        for entry in spec.shapes:
            if isinstance(entry, dict) and input_name in entry:
                shapes.append(list(parse_shape(entry[input_name])))
            else:
                shapes.append(list(parse_shape(headline)))
        inputs.append({"name": input_name, "shapes": shapes})
    return {
        "name": name,
        "from": spec.from_,
        "reference": spec.reference,
        "derive": spec.derive,
        "derived_inputs": list(spec.inputs) if spec.inputs is not None else None,
        "inputs": inputs,
        "shapes": [shape_label(spec, entry) for entry in spec.shapes],
        "dtype": dtype,
        "kwargs": _plain(spec.kwargs),
        "rotate": list(spec.rotate) if spec.rotate is not None else [spec.input],
        "flops": spec.flops,
        "bytes": spec.bytes_,
        "min_bytes": spec.min_bytes,
        "atol": spec.atol if spec.atol is not None else default_atol,
        "rtol": spec.rtol if spec.rtol is not None else default_rtol,
        "seed": spec.seed if spec.seed is not None else defaults.seed,
        "iters": spec.iters if spec.iters is not None else defaults.iters,
        "device": spec.device or defaults.device,
    }


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces: the byte string fingerprints are taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def manifest_fingerprint(manifest: Manifest, name: str) -> str:
    """sha256 of the canonical JSON of ``resolved_target(manifest, name)`` (what the reconciler compares)."""
    return hashlib.sha256(canonical_json(resolved_target(manifest, name)).encode()).hexdigest()


# ------------------------------------------------------------------------------------ round-trip edits


def _flow(value: Any) -> str:
    """One value as YAML flow text that the loader reads back as exactly ``value``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        return text if any(ch in text for ch in ".en") else text + ".0"
    if isinstance(value, str):
        return _flow_string(value)
    if isinstance(value, dict):
        return (
            "{" + ", ".join(f"{_flow_string(str(key))}: {_flow(item)}" for key, item in value.items()) + "}"
        )
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    raise HotkernelError(
        f"cannot write {value!r} into {MANIFEST_NAME}: use numbers, strings, booleans or lists"
    )


def _flow_string(text: str) -> str:
    """A plain scalar when it reads back as the same string in block and flow context, else double-quoted."""
    if re.match(r"^[A-Za-z0-9_./][A-Za-z0-9_./:+\-×]*$", text):
        try:
            parsed = _yaml().load(f"k: {text}\nl: [{text}]\n")
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


def _targets_block_end(doc: CommentedMap, total: int) -> int:
    return _next_key_line(doc, "targets", total)


def _entry_range(doc: CommentedMap, name: str, lines: list[str]) -> tuple[int, int]:
    """Line range ``[start, end)`` of target ``name``'s entry, less trailing blanks and outer comments."""
    targets = doc["targets"]
    start = targets.lc.key(name)[0]
    end = _next_key_line(targets, name, _targets_block_end(doc, len(lines)))
    return start, _trim_end(lines, start, end, _key_col(targets, name))


def _indents(doc: CommentedMap) -> tuple[int, int]:
    """(column of target names, extra indent of their keys), learnt from the file; (2, 2) when it has none."""
    targets = doc.get("targets")
    if isinstance(targets, CommentedMap) and len(targets) and not targets.fa.flow_style():
        first = next(iter(targets))
        key_col = _key_col(targets, first)
        for entry_name in targets:
            entry = targets[entry_name]
            if isinstance(entry, CommentedMap) and len(entry) and not entry.fa.flow_style():
                return key_col, max(1, _key_col(entry, next(iter(entry))) - _key_col(targets, entry_name))
        return key_col, 2
    return 2, 2


def _ordered(fields: dict[str, Any]) -> dict[str, Any]:
    rank = {key: index for index, key in enumerate(TARGET_KEY_ORDER)}
    return dict(sorted(fields.items(), key=lambda item: rank.get(item[0], len(rank))))


def _entry_text(name: str, fields: dict[str, Any], key_col: int, step: int) -> list[str]:
    lines = [" " * key_col + f"{name}:\n"]
    lines += [" " * (key_col + step) + f"{key}: {_flow(value)}\n" for key, value in fields.items()]
    return lines


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


def _check_field_keys(fields: dict[str, Any]) -> None:
    allowed = _allowed_keys(TargetSpec)
    for key in fields:
        if key not in allowed:
            raise HotkernelError(
                f"unknown target key {key!r}; {_did_you_mean(str(key), allowed)}"
                f"allowed keys: {', '.join(allowed)}"
            )


def _splice_add(text: str, name: str, fields: dict[str, Any], *, replace: bool) -> str:
    """``text`` with target ``name`` appended (or its entry replaced in place when ``replace``)."""
    doc = _parse_text(text, MANIFEST_NAME) if text.strip() else None
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    if not isinstance(doc, CommentedMap):
        raise HotkernelError(f"{MANIFEST_NAME} is not a mapping; fix it before adding targets")
    key_col, step = _indents(doc)
    entry = _entry_text(name, _ordered(fields), key_col, step)
    targets = doc.get("targets")
    if isinstance(targets, CommentedMap) and name in targets:
        if not replace:
            raise HotkernelError(
                f"target {name!r} already exists in {MANIFEST_NAME}; add --force to replace it, "
                "or pick another name"
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
    last = list(targets)[-1]
    _, end = _entry_range(doc, last, lines)
    return "".join(lines[:end] + entry + lines[end:])


def _splice_update(text: str, name: str, fields: dict[str, Any]) -> str:
    """``text`` with the given keys of target ``name`` rewritten (None removes a key), the rest untouched."""
    doc = _parse_text(text, MANIFEST_NAME)
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    targets = doc.get("targets") if isinstance(doc, CommentedMap) else None
    if not isinstance(targets, CommentedMap) or name not in targets:
        raise HotkernelError(f"no target {name!r} in {MANIFEST_NAME}; add it with `hotkernel new {name} ...`")
    entry = targets[name]
    if (
        not isinstance(entry, CommentedMap)
        or entry.fa.flow_style()
        or targets.fa.flow_style()
        or not len(entry)
    ):
        merged = {**_plain(entry or {}), **fields}
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
    doc = _parse_text(text, MANIFEST_NAME)
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
    _yaml().dump(doc, buffer)
    return buffer.getvalue()


def _atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory and a rename."""
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _commit_edit(path: Path, new_text: str, name: str, expected: dict[str, Any] | None) -> Manifest:
    """Validate ``new_text`` fully, check the entry reads back as ``expected``, then write it atomically."""
    manifest = load_manifest_text(new_text, path)
    doc = _yaml().load(new_text)
    targets = doc.get("targets") or {}
    actual = _plain(targets.get(name)) if name in targets else None
    if expected is not None and actual != _plain(expected):
        raise HotkernelError(
            f"editing {MANIFEST_NAME} for {name!r} did not read back as written; the file is "
            "unchanged (please report this)"
        )
    if expected is None and actual is not None:
        raise HotkernelError(f"removing {name!r} from {MANIFEST_NAME} failed; the file is unchanged")
    _atomic_write(path, new_text)
    return manifest


def new_manifest_text(schema_ref: str | None) -> str:
    """The text of a fresh manifest: the schema modeline, ``version: 1`` and an empty ``targets:``."""
    head = f"{SCHEMA_MODELINE_PREFIX}{schema_ref}\n" if schema_ref else ""
    return head + f"version: {MANIFEST_VERSION}\ntargets:\n"


def add_target(path: Path | str, name: str, fields: dict[str, Any], *, replace: bool = False) -> Manifest:
    """Append target ``name`` (YAML keys as in the file: ``from``, ``shapes``...) with a minimal diff.

    ``replace=True`` rewrites an existing entry in place. The result is validated before anything is written.
    """
    path = Path(path)
    _check_field_keys(fields)
    fields = _normalise_fields(fields)
    text = path.read_text(encoding="utf-8") if path.exists() else new_manifest_text(None)
    if not TARGET_NAME_RE.match(name):
        raise HotkernelError(
            f"target name {name!r} is not allowed: use a Python identifier such as 'rmsnorm' "
            "(letters, digits, '_'; no '/', '..' or spaces)"
        )
    new_text = _splice_add(text, name, fields, replace=replace)
    return _commit_edit(path, new_text, name, _ordered(fields))


def update_target(path: Path | str, name: str, fields: dict[str, Any]) -> Manifest:
    """Set the given keys of target ``name`` (None removes a key); every other line stays byte-identical."""
    path = Path(path)
    _check_field_keys(fields)
    fields = {**_normalise_fields(fields), **{key: None for key, value in fields.items() if value is None}}
    text = path.read_text(encoding="utf-8")
    new_text = _splice_update(text, name, fields)
    current = _plain(_yaml().load(text)["targets"][name]) or {}
    expected = {**current, **fields}
    return _commit_edit(path, new_text, name, {k: v for k, v in expected.items() if v is not None})


def remove_target(path: Path | str, name: str) -> Manifest:
    """Delete target ``name``'s entry (its lines only; comments above it stay)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    return _commit_edit(path, _splice_remove(text, name), name, None)
