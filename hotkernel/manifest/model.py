"""The pydantic models of ``hotkernel.yaml`` and the metadata every other view of a target key is generated from.

Each ``TargetSpec`` field carries a :class:`Key` (its CLI flag, its MCP parameter, how a CLI string is read);
its ``description`` is the help text of all three. The fields are declared in the order new entries are written.
Adding a key means adding a field here and a line in ``docs/manifest.md``: the CLI ``new`` options, the MCP
target tools and the written key order follow.
"""

from __future__ import annotations

import keyword
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
)
from pydantic.fields import FieldInfo

from hotkernel.contract.correctness import CORRECTNESS_DEFAULT_TOLERANCES
from hotkernel.errors import quote
from hotkernel.manifest.tolerance import OutputTolerance

MANIFEST_VERSION = 1
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
# Default (atol, rtol) against the fp32 reference, by dtype: the contract's own table (it applies them).
DEFAULT_TOLERANCES = CORRECTNESS_DEFAULT_TOLERANCES
DEVICES = ("cuda", "cpu")
# Limits on what a manifest (or a CLI/MCP edit of it) may hold.
MAX_STRING = 4096  # characters of one scalar (a string, a number as written, a key)
MAX_ITEMS = 64  # items of one list or mapping a user gives for a key (shapes, extra, kwargs...)
SHAPE_PATTERN = r"^\s*[1-9][0-9]*(\s*[x×]\s*[1-9][0-9]*)*\s*$"
IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# an input, or a tensor inside a structured one by its path: [index], ['key'] and .field steps (x0[1][2])
OUTPUT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\]|\['[^'\\]*'\]|\.[A-Za-z_][A-Za-z0-9_]*)*$")
MODULE_REF_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
FILE_REF_RE = re.compile(r"^(?P<path>[^:\n]+\.py):(?P<func>[A-Za-z_][A-Za-z0-9_]*)$")
PROBLEM_REF_RE = re.compile(r"^(?P<path>[^:\n]+\.py)$")  # a module problem: the file itself (docs/suites.md)
FUNCTION_REF_HELP = "write module:function (e.g. torch.nn.functional:rms_norm) or ./file.py:function"
SOURCE_REF_HELP = FUNCTION_REF_HELP + ", or ./problem.py for a module problem (KernelBench or GPU MODE layout)"
CASE_VALUE_TYPES = (bool, int, float, str)


# --------------------------------------------------------------------------------------- value parsing


def parse_shape(value: Any) -> tuple[int, ...]:
    """``"4096x8192"`` (or the integer ``8192``) -> ``(4096, 8192)``; anything else raises ValueError."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(f"{quote(value)} is not a shape; write dimensions separated by 'x', e.g. 4096x8192")
    text = str(value)
    if len(text) > MAX_STRING or not re.fullmatch(SHAPE_PATTERN, text):
        raise ValueError(
            f"{quote(text)} is not a shape; write positive dimensions separated by 'x', e.g. 4096x8192 "
            "(a 1-D shape is just 8192)"
        )
    return tuple(int(part) for part in re.split(r"[x×]", re.sub(r"\s", "", text)))


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
    raise ValueError(f"{quote(value)} is not allowed; use one of {', '.join(DTYPES)}")


def is_parameter_name(name: Any) -> bool:
    """A name usable as a Python parameter: an identifier that is not a keyword (``lambda``, ``class``)."""
    return isinstance(name, str) and bool(IDENTIFIER_RE.fullmatch(name)) and not keyword.iskeyword(name)


def output_input(value: str) -> str:
    """The input an ``outputs`` entry names: the entry up to its path (``x0`` of ``x0[1][2]``)."""
    return re.split(r"[\[.]", value, maxsplit=1)[0]


def _output(value: Any) -> str:
    if isinstance(value, str) and OUTPUT_RE.fullmatch(value) and not keyword.iskeyword(output_input(value)):
        return value
    raise ValueError(
        f"{quote(value)} is not an input name or a path inside one; write an input's name (out) or the path of a "
        "tensor inside a structured input (x0[1][2], data['out'], cfg.out)"
    )


def _shape_entry(value: Any) -> str | dict[str, str]:
    """A ``shapes`` item: a shape of the first input, or a mapping input name -> shape."""
    if isinstance(value, dict):
        if not value:
            raise ValueError("an empty mapping is not a shape; write input: shape pairs, e.g. {x: 1024x8192}")
        entry: dict[str, str] = {}
        for key, shape in value.items():
            if not is_parameter_name(key):
                raise ValueError(f"{quote(key)} is not an input name; use the name of an input, e.g. x or w")
            entry[key] = format_shape(parse_shape(shape))
        return entry
    return format_shape(parse_shape(value))


def _extra_entry(value: Any) -> str:
    """An ``extra`` item ``name:shape``, normalised, or a bare ``name``: a problem file's input that is not a
    plain tensor (a scalar, a structured input, a Model's ``state``), whose value the problem file makes."""
    if isinstance(value, str) and ":" not in value and is_parameter_name(value.strip()):
        return value.strip()
    if isinstance(value, str) and ":" in value:
        name, _, shape = value.partition(":")
        name = name.strip()
        if is_parameter_name(name):
            return f"{name}:{format_shape(parse_shape(shape.strip()))}"
    raise ValueError(
        f"{quote(value)} is not an extra input; write name:shape, e.g. w:8192 (a name that is not a Python keyword)"
    )


def _function_ref(value: Any) -> str:
    """``module:function`` or ``path/file.py:function``; the file is checked by the loader."""
    if isinstance(value, str):
        text = value.strip()
        if MODULE_REF_RE.fullmatch(text) or FILE_REF_RE.fullmatch(text):
            return text
        if PROBLEM_REF_RE.fullmatch(text):
            raise ValueError(
                f"{quote(value)} names a file but no function; write {text}:function (only `from` takes a "
                "whole problem file)"
            )
    raise ValueError(f"{quote(value)} is not a function reference; {FUNCTION_REF_HELP}")


def _source_ref(value: Any) -> str:
    """``from``: a function reference, or ``./problem.py`` (a module problem; the file is checked by the loader)."""
    if isinstance(value, str) and PROBLEM_REF_RE.fullmatch(value.strip()):
        return value.strip()
    try:
        return _function_ref(value)
    except ValueError:
        raise ValueError(f"{quote(value)} is not a function reference; {SOURCE_REF_HELP}") from None


def is_problem_source(ref: str) -> bool:
    """True when ``from`` names a module problem file (no ``:function``)."""
    return bool(PROBLEM_REF_RE.fullmatch(ref))


def _case_value(text: str) -> Any:
    """A ``k=v`` value typed as written: an integer, a number, true/false, else the text."""
    lowered = text.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def case_entry(value: Any) -> dict[str, Any]:
    """A ``cases`` item: a mapping name -> number/string/bool, or ``"name=value,name=value"``."""
    if isinstance(value, str):
        pairs = [part.partition("=") for part in value.split(",") if part.strip()]
        if not pairs or any(not sep for _, sep, _ in pairs):
            raise ValueError(f"{quote(value)} is not a case; write name=value pairs, e.g. batch_size=64,dim=128")
        value = {name.strip(): _case_value(raw) for name, _, raw in pairs}
    if not isinstance(value, dict):
        raise ValueError(f"{quote(value)} is not a case; write a mapping name: value, e.g. {{batch_size: 64}}")
    for name, item in value.items():
        if not is_parameter_name(name):
            raise ValueError(f"{quote(name)} is not a name; use a Python identifier, e.g. batch_size")
        if not isinstance(item, CASE_VALUE_TYPES) or (isinstance(item, float) and item != item):
            raise ValueError(f"{name}: {quote(item)} is not a plain number, string or boolean")
    return dict(value)


COMPETITOR_WORDS = ("compile", "compile-max-autotune", "compile-reduce-overhead")  # torch.compile(baseline, mode)


def _competitor(value: Any) -> str:
    """A ``competitors`` item: a torch.compile mode word, or a function reference like ``from``."""
    if isinstance(value, str) and value.strip() in COMPETITOR_WORDS:
        return value.strip()
    try:
        return _function_ref(value)
    except ValueError:
        raise ValueError(
            f"{quote(value)} is not a competitor; write one of {', '.join(COMPETITOR_WORDS)} (torch.compile of "
            f"the baseline) or a function reference ({FUNCTION_REF_HELP})"
        ) from None


def _identifier(value: Any) -> str:
    if is_parameter_name(value):
        return value
    raise ValueError(
        f"{quote(value)} is not a valid name; use a Python identifier that is not a keyword, such as x or w"
    )


ShapeEntry = Annotated[
    str | dict[str, str],
    BeforeValidator(_shape_entry),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": SHAPE_PATTERN, "maxLength": MAX_STRING},
                {"type": "integer", "minimum": 1},
                {
                    "type": "object",
                    "additionalProperties": {
                        "anyOf": [
                            {"type": "string", "pattern": SHAPE_PATTERN, "maxLength": MAX_STRING},
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
    WithJsonSchema(
        {
            "type": "string",
            "pattern": r"^[A-Za-z_][A-Za-z0-9_]*(:" + SHAPE_PATTERN[1:-1] + ")?$",
            "maxLength": MAX_STRING,
        }
    ),
]
FunctionRef = Annotated[
    str,
    BeforeValidator(_function_ref),
    WithJsonSchema({"type": "string", "pattern": r"^[^:\s]+:[A-Za-z_][A-Za-z0-9_]*$", "maxLength": MAX_STRING}),
]
SourceRef = Annotated[
    str,
    BeforeValidator(_source_ref),
    WithJsonSchema(
        {"type": "string", "pattern": r"^([^:\s]+:[A-Za-z_][A-Za-z0-9_]*|[^:\s]+\.py)$", "maxLength": MAX_STRING}
    ),
]
CaseEntry = Annotated[
    dict[str, Any],
    BeforeValidator(case_entry),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "maxLength": MAX_STRING},
                {"type": "object", "additionalProperties": {"type": ["string", "number", "integer", "boolean"]}},
            ]
        }
    ),
]
Competitor = Annotated[
    str,
    BeforeValidator(_competitor),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "enum": list(COMPETITOR_WORDS)},
                {"type": "string", "pattern": r"^[^:\s]+:[A-Za-z_][A-Za-z0-9_]*$", "maxLength": MAX_STRING},
            ]
        }
    ),
]
Dtype = Annotated[
    str,
    BeforeValidator(normalise_dtype),
    WithJsonSchema({"type": "string", "enum": [*DTYPES, *DTYPE_ALIASES]}),
]
Identifier = Annotated[
    str,
    BeforeValidator(_identifier),
    WithJsonSchema({"type": "string", "pattern": IDENTIFIER_RE.pattern, "maxLength": MAX_STRING}),
]
OutputName = Annotated[
    str,
    BeforeValidator(_output),
    WithJsonSchema({"type": "string", "pattern": OUTPUT_RE.pattern, "maxLength": MAX_STRING}),
]
KwargValue = Annotated[
    Any,
    WithJsonSchema({"type": ["string", "number", "integer", "boolean", "null", "array", "object"]}),
]


# ------------------------------------------------------------------------------------- key metadata


CliKind = Literal["text", "ref", "texts", "int", "float", "kwargs"]


@dataclass(frozen=True)
class Key:
    """How one target key is reached from outside the file.

    ``cli``: the ``hotkernel new`` option; ``mcp``: the parameter of the MCP target tools; ``kind``: how a CLI
    string becomes the value (``ref``: a function reference whose file is relative to the current directory;
    ``texts``: a repeatable option, one list item each; ``kwargs``: repeatable ``NAME=VALUE``); ``choices``: the
    allowed words of a text key (for help and the MCP schema).
    """

    cli: str
    mcp: str
    kind: CliKind
    choices: tuple[str, ...] = ()


def key_of(field: FieldInfo) -> Key:
    """The :class:`Key` a TargetSpec field carries."""
    for item in field.metadata:
        if isinstance(item, Key):
            return item
    raise LookupError("a TargetSpec field without Key metadata")


# ---------------------------------------------------------------------------------------------- models


class Defaults(BaseModel):
    """Workspace-wide settings; a target inherits dtype, device, seed and iters from here."""

    model_config = ConfigDict(extra="forbid")

    n: int = Field(7, ge=1, le=1000, description="Runs per side for `hotkernel verify` and `sync` (default 7).")
    warmup: int = Field(1, ge=0, le=100, description="Untimed warm-up runs before bench/verify (default 1).")
    device: Literal["cuda", "cpu"] = Field("cuda", description="Device of targets that do not set one.")
    dtype: Dtype = Field("bf16", description="dtype of targets that do not set one (default bf16).")
    python: str | None = Field(
        None,
        max_length=MAX_STRING,
        description="Interpreter that has torch (absolute, relative to the workspace, or a name on PATH). "
        "HOTKERNEL_PYTHON overrides it; unset = the first python/python3 on PATH that imports torch.",
    )
    timeout_s: float = Field(
        300.0, gt=0, allow_inf_nan=False, description="Wall-clock limit of one run in seconds (default 300)."
    )
    seed: int | None = Field(
        None, ge=0, description="Seed of targets that do not set one; null = a fresh random seed every run."
    )
    iters: int | None = Field(
        None,
        ge=1,
        description="Timed calls per repetition of targets that do not set one; null = sized by the timer.",
    )
    threads: int = Field(
        1,
        ge=1,
        le=1024,
        description="CPU threads of cpu targets that do not set one (default 1): baseline, candidate and judge "
        "alike; ignored for cuda targets.",
    )


class TargetSpec(BaseModel):
    """One target: the function to beat, the inputs it is called with, and how results are checked.

    Fields are declared in the order a new entry's keys are written.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    from_: Annotated[SourceRef, Key("--from", "source", "ref")] = Field(
        alias="from",
        description="The baseline: module:function (importable in the user's python) or ./file.py:function "
        "(relative to the workspace root), or ./problem.py: a module problem in the KernelBench or GPU MODE "
        "layout (docs/suites.md), whose inputs, shapes and parameters hotkernel new reads from the file.",
    )
    input: Annotated[Identifier, Key("--input", "input", "text")] = Field(
        "x", description="Name of the first input (default x)."
    )
    shapes: Annotated[list[ShapeEntry], Key("--shape", "shapes", "texts")] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        json_schema_extra={"minItems": 1},  # empty only until hotkernel new fills a module problem's in
        description="One or more shapes (required; a module problem's are read from its file); the first is "
        "the headline. A string is the first input's shape; a mapping gives input name -> shape (unnamed inputs "
        "keep their headline shape). Correctness is checked and timing reported at every shape.",
    )
    cases: Annotated[list[CaseEntry] | None, Key("--case", "cases", "texts")] = Field(
        None,
        max_length=MAX_ITEMS,
        description="Module problems only, one per shape: KernelBench: module-level constants set before "
        "get_init_inputs()/get_inputs() run (e.g. batch_size=64; at most one case); GPU MODE: the keyword "
        "arguments of generate_input (the seed is the contract's).",
    )
    extra: Annotated[list[ExtraEntry], Key("--extra", "extra", "texts")] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Further random inputs after the first, in call order, as name:shape (e.g. w:8192).",
    )
    dtype: Annotated[Dtype | None, Key("--dtype", "dtype", "text", DTYPES)] = Field(
        None, description="Element type of every input; default: defaults.dtype (bf16)."
    )
    kwargs: Annotated[dict[str, KwargValue], Key("--kwarg", "kwargs", "kwargs")] = Field(
        default_factory=dict,
        max_length=MAX_ITEMS,
        description="Constants passed as keyword arguments to baseline, candidate, reference and derive "
        "(e.g. dim: -1).",
    )
    rotate: Annotated[list[Identifier] | None, Key("--rotate", "rotate", "texts")] = Field(
        None,
        max_length=MAX_ITEMS,
        description="Inputs that stream through memory: each gets K distinct copies so timed calls do not "
        "hit in cache. Default: the first input.",
    )
    derive: Annotated[FunctionRef | None, Key("--derive", "derive", "ref")] = Field(
        None,
        description="Hook derive(*raw_inputs, **kwargs) turning the raw random tensors into the call's "
        "inputs (e.g. a quantized, packed weight); needs `inputs`.",
    )
    inputs: Annotated[list[Identifier] | None, Key("--derived-input", "inputs", "texts")] = Field(
        None,
        max_length=MAX_ITEMS,
        description="Names of the tensors `derive` returns, in call order (required with derive).",
    )
    outputs: Annotated[list[OutputName], Key("--output", "outputs", "texts")] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Inputs that are destination buffers (the kernel writes its result into them and returns "
        "them), or such tensors inside a structured input by their path (x0[1][2], data['out']): filled with "
        "NaN (integers: random values) before every judged call, not held to the inputs-unchanged check; judged "
        "through what the kernel returns.",
    )
    structured: Annotated[list[Identifier], Key("--structured", "structured", "texts")] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Module problems only: inputs the problem file makes as structures (a dict, a list of "
        "tuples...); a shape `shapes` gives one is its first tensor's, a label of the case; the first input may "
        "have none.",
    )
    reference: Annotated[FunctionRef | None, Key("--reference", "reference", "ref")] = Field(
        None,
        description="Function computing the right answer in fp32 (fp64 for fp32 targets) when the baseline "
        "cannot; default: the baseline itself run on upcast inputs.",
    )
    flops: Annotated[float | None, Key("--flops", "flops", "float")] = Field(
        None, ge=0, allow_inf_nan=False, description="Floating-point operations of one call (for the roofline)."
    )
    bytes_: Annotated[int | None, Key("--bytes", "bytes_moved", "int")] = Field(
        None,
        alias="bytes",
        ge=0,
        description="Bytes one call moves; default: inputs + outputs, computed at run time.",
    )
    min_bytes: Annotated[int | None, Key("--min-bytes", "min_bytes", "int")] = Field(
        None,
        ge=0,
        description="Bytes any correct implementation must move: a time below min_bytes / (measured bandwidth "
        "x 1.25 on CUDA, x 2 on CPU) is physically impossible and makes the run invalid (faster_than_floor). "
        "Default: the bytes of one set of rotated inputs (what every call must read); no check when they stay "
        "cache-resident.",
    )
    atol: Annotated[float | None, Key("--atol", "atol", "float")] = Field(
        None, ge=0, allow_inf_nan=False, description="Absolute tolerance; default by dtype (docs/manifest.md)."
    )
    rtol: Annotated[float | None, Key("--rtol", "rtol", "float")] = Field(
        None, ge=0, allow_inf_nan=False, description="Relative tolerance; default by dtype (docs/manifest.md)."
    )
    output_tolerances: Annotated[list[OutputTolerance], Key("--output-tol", "output_tolerances", "texts")] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Bounds of each output, in the order the kernel returns them: a mapping of atol, rtol, "
        "rel_l2_max, min_corr (e.g. {atol: 1e-2, rtol: 1e-2}; CLI: atol=1e-2,rtol=1e-2); a bound an entry leaves "
        "out, and every output past the list, takes the target's (docs/manifest.md, 'Tolerances').",
    )
    seed: Annotated[int | None, Key("--seed", "seed", "int")] = Field(
        None,
        ge=0,
        description="Fixed seed for the random inputs; default: a fresh seed every run (recommended).",
    )
    iters: Annotated[int | None, Key("--iters", "iters", "int")] = Field(
        None, ge=1, description="Timed calls per repetition; default: sized by the timer."
    )
    device: Annotated[Literal["cuda", "cpu"] | None, Key("--device", "device", "text", DEVICES)] = Field(
        None, description="cuda or cpu; default: defaults.device."
    )
    threads: Annotated[int | None, Key("--threads", "threads", "int")] = Field(
        None, ge=1, le=1024, description="CPU threads of a cpu target; default: defaults.threads (ignored for cuda)."
    )
    competitors: Annotated[list[Competitor], Key("--competitor", "competitors", "texts")] = Field(
        default_factory=list,
        max_length=MAX_ITEMS,
        description="Other implementations verified against the baseline like a candidate and recorded as "
        "competitors: compile, compile-max-autotune, compile-reduce-overhead (torch.compile of the baseline) "
        "or a function reference.",
    )

    @field_validator("extra")
    @classmethod
    def _bare_extras_need_a_problem(cls, extra: list[str], info: ValidationInfo) -> list[str]:
        bare = [item for item in extra if ":" not in item]
        source = info.data.get("from_")
        if bare and not (isinstance(source, str) and is_problem_source(source)):
            raise ValueError(
                f"{quote(bare[0])} is not an extra input; write name:shape, e.g. w:8192 (a bare name only with a "
                "problem file as `from`, which makes its value)"
            )
        return extra


@dataclass(frozen=True)
class TargetKey:
    """One target key with everything generated from it: YAML name, field name, metadata, help."""

    yaml: str
    field: str
    key: Key
    help: str
    required: bool


def target_keys() -> list[TargetKey]:
    """Every target key in the order entries are written (the field order of ``TargetSpec``)."""
    return [
        TargetKey(field.alias or name, name, key_of(field), field.description or "", field.is_required())
        for name, field in TargetSpec.model_fields.items()
    ]


TARGET_KEY_ORDER = tuple(key.yaml for key in target_keys())


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


def raw_inputs(spec: TargetSpec) -> list[tuple[str, str]]:
    """The random tensors generated for a target, in call order: ``[(name, headline shape), ...]``."""
    first = spec.shapes[0]
    head = first if isinstance(first, str) else first.get(spec.input, "")
    pairs = [(spec.input, head)]
    for item in spec.extra:
        name, _, shape = item.partition(":")
        pairs.append((name, shape))  # a bare name (a problem's non-tensor input): no shape
    return pairs


def shape_label(spec: TargetSpec, entry: str | dict[str, str]) -> str:
    """How a ``shapes`` entry is named in results: the shape itself, or ``name=shape,...`` for a mapping."""
    if isinstance(entry, str):
        return entry
    if list(entry) == [spec.input]:
        return entry[spec.input]
    order = [name for name, _ in raw_inputs(spec)]
    return ",".join(f"{key}={entry[key]}" for key in sorted(entry, key=order.index))
