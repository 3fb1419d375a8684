"""Probing a problem file: every input (tensors, scalars, structured inputs, the Model's state), the outputs,
the destination buffers and the flags of a problem, found on the meta device or under FakeTensorMode, or by one
real run within a memory check where the shapes are data dependent (run in the user's python by ``hotkernel
new`` and ``hotkernel import``; one process probes a whole suite)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from .limits import GIB, ProbeLimit, ProbeMemory, memory_cap, time_limit
from .problems import MadeOn, adopt_tensor_attributes, made_on, problem_format, reference_function
from .spec import load_problem_file
from .uninit import uninit_paths, uninit_tracker

PROBE_BATCH_NAMES = ("batch_size", "batch", "B", "M", "N")  # the batch constant, tried first
SCALE_MIN_DIM = 64  # --scale shrinks every dimension constant above this (channels of 3 or 16 stay)
FLAG_DIM = 16  # the flags' real run: dimension constants above this become this, the batch 2
OUTPUT_PROBE_S = 2.0  # the outputs at the problem's own shapes on the meta device (an RNN unrolls slowly there)
REAL_RUN_S = 60.0  # one real run (shapes that only a real run tells)
FLAG_RUN_S = 5.0  # the flags' run at reduced size
FLAG_STATE_BYTES = 64 << 20  # a Model above this is not built for real to find flags
FLAG_DATA_BYTES = 16 << 20  # a GPU MODE case whose inputs are larger is not run for real to find flags
REAL_RUN_FACTOR = 3  # a real run is estimated at this many times the inputs' bytes


def problem_error(path: str, err: BaseException, what: str) -> str:
    """``FILE:LINE: what raised Error: message``, the line being the deepest frame inside ``path``."""
    line = getattr(err, "lineno", None) if isinstance(err, SyntaxError) else None
    tb = err.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    where = f"{path}:{line}" if line else path
    return f"{where}: {what} raised {type(err).__name__}: {error_text(err)}"


def circular_import(path: str, err: BaseException) -> str | None:
    """The line for a problem whose files import each other (GPU MODE's ``amd/mla``: reference.py imports task.py,
    which imports reference.py), naming both files; None for any other error."""
    other = getattr(err, "path", None)
    if not isinstance(err, ImportError) or "partially initialized module" not in str(err) or not other:
        return None
    line = problem_error(path, err, "").split(": ", 1)[0]
    asked = (
        str(err).split("cannot import name ", 1)[-1].split(" from ", 1)[0]
        if "cannot import name " in str(err)
        else "a name"
    )
    mine, theirs = os.path.basename(path), os.path.basename(other)
    return (
        f"{line}: {mine} and {theirs} import each other (a circular import, broken as shipped: {theirs} is not "
        f"done yet when {mine} imports {asked} from it); move what both need into a third file that both import"
    )


def error_text(err: BaseException) -> str:
    """An error's message on one line: its first line, or of a paragraph (PyTorch's CUDA errors run on for one)
    its first sentence; at most 300 characters."""
    text = (str(err).strip().splitlines() or [""])[0]
    return (text.split(". ", 1)[0] if len(text) > 200 else text)[:300]


# ---- describing values ------------------------------------------------------------------------------------
def _tensor(t: Any) -> dict[str, Any]:
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype).replace("torch.", ""),
        "floating": bool(t.is_floating_point()),
    }


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def leaves(torch: Any, value: Any, path: str = "") -> list[tuple[str, Any]]:
    """(path, leaf) of every tensor and scalar in ``value``: containers through ``torch.utils._pytree``,
    dataclasses and plain objects through their fields (``.name``)."""
    from torch.utils import _pytree as pytree

    if isinstance(value, torch.Tensor) or _is_scalar(value):
        return [(path, value)]
    flat, _ = pytree.tree_flatten_with_path(value)
    if len(flat) != 1 or flat[0][0]:  # a container pytree knows
        found: list[tuple[str, Any]] = []
        for keys, leaf in flat:
            found += leaves(torch, leaf, path + pytree.keystr(keys))
        return found
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    elif hasattr(value, "__dict__") and not callable(value):
        fields = {k: v for k, v in vars(value).items() if not k.startswith("_")}
    else:
        raise ValueError(
            f"{path or 'the value'} is a {type(value).__name__}, neither a tensor, a scalar nor a container"
        )
    found = []
    for key, item in fields.items():
        found += leaves(torch, item, f"{path}.{key}")
    return found


def describe(torch: Any, name: str, value: Any) -> dict[str, Any]:
    """One top-level input entry: ``tensor`` (0-d included), ``scalar`` (a constant of the case) or ``tree``."""
    if isinstance(value, torch.Tensor):
        return {"name": name, "kind": "tensor", **_tensor(value)}
    if _is_scalar(value):
        return {"name": name, "kind": "scalar", "value": value}
    found = [{"path": p, **_tensor(leaf)} for p, leaf in leaves(torch, value) if isinstance(leaf, torch.Tensor)]
    return {"name": name, "kind": "tree", "type": type(value).__name__, "leaves": found}


def describe_outputs(torch: Any, out: Any) -> list[dict[str, Any]]:
    items = list(out) if isinstance(out, (tuple, list)) else [out]
    return [describe(torch, f"out{index}", item) for index, item in enumerate(items)]


def tensor_bytes(torch: Any, value: Any) -> int:
    return sum(t.numel() * t.element_size() for _, t in leaves(torch, value) if isinstance(t, torch.Tensor))


def probe_device(torch: Any, device: str | None) -> str:
    if device:
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


# ---- a GPU MODE reference under other names ---------------------------------------------------------------
# ---- dimension constants: --scale and the flags' run ---------------------------------------------------------
def _dims(torch: Any, values: Any) -> set[int]:
    return {int(d) for _, t in leaves(torch, values) if isinstance(t, torch.Tensor) for d in t.shape}


def dimension_constants(module: Any, dims: set[int], above: int) -> dict[str, int]:
    """Module-level int constants above ``above`` whose value is a dimension of an input or a Model tensor."""
    return {
        name: value
        for name, value in vars(module).items()
        if not name.startswith("_") and type(value) is int and value > above and value in dims
    }


def batch_constant(module: Any, inputs: Any) -> str | None:
    """The module-level int that is the first input tensor's first dimension (``batch_size`` first)."""
    first = next((t for _, t in leaves(sys.modules["torch"], inputs) if getattr(t, "dim", lambda: 0)() > 0), None)
    if first is None:
        return None
    names = [*PROBE_BATCH_NAMES, *(n for n in vars(module) if n not in PROBE_BATCH_NAMES)]
    return next(
        (n for n in names if type(getattr(module, n, None)) is int and getattr(module, n) == first.shape[0]), None
    )


@contextlib.contextmanager
def constants(module: Any, values: dict[str, Any]) -> Iterator[None]:
    """The module-level constants set to ``values`` for the duration, then put back."""
    missing = object()
    before = {name: getattr(module, name, missing) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is missing:
                delattr(module, name)
            else:
                setattr(module, name, value)


# ---- KernelBench --------------------------------------------------------------------------------------------
def _build(torch: Any, path: str, module: Any, device: str) -> tuple[Any, Any]:
    """(inputs, Model) of the problem on ``device`` (errors as ``FILE:LINE: ... raised``)."""
    try:
        with torch.device(device):
            inputs = list(module.get_inputs())
    except Exception as err:  # noqa: BLE001 - reported with the file and line
        raise ValueError(problem_error(path, err, "get_inputs()")) from None
    try:
        with torch.device(device):
            model = adopt_tensor_attributes(torch, module.Model(*module.get_init_inputs()))
    except Exception as err:  # noqa: BLE001
        raise ValueError(problem_error(path, err, "Model(*get_init_inputs())")) from None
    return inputs, model


def _build_any(torch: Any, path: str, module: Any, device: str) -> tuple[Any, Any, str]:
    """On the meta device, or (where only a real run tells: ``.item()``, data-dependent shapes) for real on
    ``device`` within the memory check: (inputs, Model, how)."""
    try:
        return (*_build(torch, path, module, "meta"), "meta")
    except ValueError as meta_error:
        try:
            with memory_cap(torch, device, None, f"{path}: building the problem for real"), time_limit(REAL_RUN_S):
                return (*_build(torch, path, module, device), "real")
        except ProbeLimit:
            raise ValueError(f"{meta_error} (on the meta device; a real run ran past {REAL_RUN_S:g} s)") from None


def _forward_names(module: Any, count: int) -> list[str]:
    """The Model.forward parameter names of the ``count`` inputs (``x0``... where it takes ``*args``)."""
    params = list(inspect.signature(module.Model.forward).parameters.values())[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:count] if len(names) >= count else [f"x{i}" for i in range(count)]


def _scaled(torch: Any, module: Any, scale: float, inputs: Any, model: Any) -> tuple[dict[str, int], dict[str, int]]:
    """(every dimension constant scaled, the batch alone scaled) for ``--scale``."""
    dims = _dims(torch, inputs) | _dims(torch, list(model.parameters()) + list(model.buffers()))
    batch = batch_constant(module, inputs)
    names = set(dimension_constants(module, dims, SCALE_MIN_DIM)) | ({batch} if batch else set())
    every = {n: max(1, int(round(getattr(module, n) * scale))) for n in sorted(names)}
    return every, {n: v for n, v in every.items() if n == batch}


def _equal(torch: Any, a: Any, b: Any) -> bool:
    """The same values in both, NaN equal to NaN (an output that holds NaN is not thereby random)."""
    la, lb = leaves(torch, a), leaves(torch, b)
    return len(la) == len(lb) and all(_same(torch, x, y) for (_, x), (_, y) in zip(la, lb, strict=True))


def _same(torch: Any, x: Any, y: Any) -> bool:
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
        return bool(x == y)
    return x.shape == y.shape and x.dtype == y.dtype and bool(torch.eq(x, y).logical_or_(x.ne(x) & y.ne(y)).all())


def signal_flags(torch: Any, first: Any, again: Any, randoms: list[str]) -> list[str]:
    """Flags from two real outputs of the same inputs under other random states: NaN/inf, a constant output
    (every element equal), a random one."""
    flags = []
    tensors = [t for _, t in leaves(torch, first) if isinstance(t, torch.Tensor)]
    if any(t.is_floating_point() and not bool(torch.isfinite(t).all()) for t in tensors):
        flags.append("the reference output holds NaN or inf")
    if tensors and all(t.numel() > 1 and bool((t == t.flatten()[0]).all()) for t in tensors):
        values = ", ".join(f"{t.flatten()[0].item():g}" for t in tensors)
        flags.append(f"constant output: every element is {values}; it carries no signal")
    if not _equal(torch, first, again):
        what = ", ".join(randoms) if randoms else "the forward draws random numbers"
        flags.append(f"random output: the same inputs give different outputs ({what})")
    elif randoms:
        flags.append(f"random modules that did not change the output: {', '.join(randoms)}")
    return flags


def _random_modules(torch: Any, model: Any) -> list[str]:
    return [
        f"{name or 'Model'}: {type(sub).__name__}(p={sub.p}) in training mode"
        for name, sub in model.named_modules()
        if isinstance(sub, torch.nn.modules.dropout._DropoutNd) and sub.training and sub.p > 0
    ]


def _kernelbench_flags(torch: Any, module: Any, inputs: Any, model: Any) -> tuple[list[str], str]:
    """(flags, how the flags were found) from real runs on the CPU with the dimension constants shrunk."""
    state = list(model.parameters()) + list(model.buffers())
    randoms = _random_modules(torch, model)
    static = [f"random output: {', '.join(randoms)}"] if randoms else []
    if tensor_bytes(torch, state) > FLAG_STATE_BYTES:
        return static, f"not run: the Model holds {tensor_bytes(torch, state) / GIB:.2f} GiB"
    batch = batch_constant(module, inputs)
    small = {n: FLAG_DIM for n in dimension_constants(module, _dims(torch, [inputs, state]), FLAG_DIM)}
    if batch and getattr(module, batch) > 2:
        small[batch] = 2
    try:
        with constants(module, small), memory_cap(torch, "cpu", None, "the flags' run"), time_limit(FLAG_RUN_S):
            torch.manual_seed(0)
            real = module.Model(*module.get_init_inputs())
            torch.manual_seed(1)
            args = module.get_inputs()
            with torch.no_grad():
                outs = []
                for seed in (3, 4):
                    torch.manual_seed(seed)
                    outs.append(real(*args))
    except Exception as err:  # noqa: BLE001 - flags are advice: a run that fails leaves them unchecked
        return static, f"not run: the run at reduced size raised {type(err).__name__}: {str(err)[:120]}"
    shown = ", ".join(f"{k}={v}" for k, v in small.items())
    return signal_flags(torch, *outs, randoms), f"real run on cpu ({shown or 'own sizes'})"


def kernelbench_probe(
    torch: Any, path: str, module: Any, scale: float | None, cases: list[dict[str, Any]] | None, device: str
) -> dict[str, Any]:
    case: dict[str, Any] = dict(cases[0]) if cases else {}
    notes: list[str] = []
    with constants(module, case):
        inputs, model, how = _build_any(torch, path, module, device)
    forward = None  # the forward at the shapes taken, when the scale check ran it
    if scale is not None and not case:
        every, batch_only = _scaled(torch, module, scale, inputs, model)
        shipped_runs = functools.cache(lambda shipped=(model, inputs): _forward(torch, *shipped)[1] is None)
        for candidate in (every, batch_only):
            try:
                with constants(module, candidate):
                    built = _build_any(torch, path, module, device)
                    tried = _forward(torch, built[1], built[0])
                # the scale broke a forward that runs as shipped (an image size the Model fixes, BatchNorm of 1)
                if tried[1] is not None and shipped_runs():
                    raise ValueError(problem_error(path, tried[1], "the forward at these shapes"))
                (inputs, model, how), case, forward = built, candidate, tried
                break
            except ValueError as err:
                notes.append(f"--scale of {', '.join(candidate)} failed: {str(err)[:200]}")
        if case and case is batch_only and every != batch_only:
            notes.append(f"--scale shrank only {', '.join(batch_only) or 'nothing'}")
    with constants(module, case):
        forward = forward or _forward(torch, model, inputs)
        return _kernelbench_reply(torch, path, module, case, inputs, model, how, notes, forward[0])


def _forward(torch: Any, model: Any, inputs: Any) -> tuple[Any, Exception | None]:
    """The Model's forward on ``inputs`` within OUTPUT_PROBE_S: (outputs, None) when it ran; (None, the error) when
    it raised; (None, None) when it could not tell (too slow, or an op the meta device cannot run: those say
    nothing of the shapes, and the outputs are checked at the first run)."""
    try:
        with torch.no_grad(), time_limit(OUTPUT_PROBE_S):
            return model(*inputs), None
    except (ProbeLimit, NotImplementedError):
        return None, None
    except Exception as err:  # noqa: BLE001 - reported with the file and line
        return None, None if "meta" in str(err).lower() else err


def _kernelbench_reply(
    torch: Any,
    path: str,
    module: Any,
    case: dict[str, Any],
    inputs: Any,
    model: Any,
    how: str,
    notes: list[str],
    out: Any,
) -> dict[str, Any]:
    """The probe's reply for a KernelBench problem; ``out``: its forward's outputs (None: not found)."""
    names = _forward_names(module, len(inputs))
    entries = []
    for index, (name, value) in enumerate(zip(names, inputs, strict=True)):
        try:
            entries.append(describe(torch, name, value))
        except ValueError as err:
            raise ValueError(f"{path}: get_inputs() item {index} ({name}): {err}") from None
    state = list(model.parameters()) + list(model.buffers())
    entries.append({"name": "state", "kind": "state", "tensors": len(state), "bytes": tensor_bytes(torch, state)})
    try:
        outputs = describe_outputs(torch, out) if out is not None else None
    except ValueError:  # an output hotkernel cannot describe: checked at the first run
        outputs = None
    flags, flag_run = _kernelbench_flags(torch, module, inputs, model)
    return {
        "format": "kernelbench",
        "cases": [case] if case else None,
        "shapes": [entries],
        "outputs": outputs,
        "destinations": [],
        "flags": flags + notes,
        "flag_run": flag_run,
        "mode": "train" if model.training else "eval",
        "how": how,
        "reference": None,
    }


# ---- GPU MODE -----------------------------------------------------------------------------------------------
def _data_entries(torch: Any, data: Any) -> list[dict[str, Any]]:
    if isinstance(data, (tuple, list)):
        return [describe(torch, f"x{index}", item) for index, item in enumerate(data)]
    return [describe(torch, "data", data)]


def _destinations(torch: Any, data: Any, out: Any) -> list[str]:
    """The inputs (names, or name+path inside a structured input) that the reference returns itself."""
    returned = {t.untyped_storage()._cdata for _, t in leaves(torch, out) if isinstance(t, torch.Tensor)}
    items = list(enumerate(data)) if isinstance(data, (tuple, list)) else [(None, data)]
    found = []
    for index, item in items:
        name = "data" if index is None else f"x{index}"
        for sub, leaf in leaves(torch, item):
            if isinstance(leaf, torch.Tensor) and leaf.untyped_storage()._cdata in returned:
                found.append(name + sub)
    return found


def _fake(torch: Any) -> Any:
    from torch._subclasses.fake_tensor import FakeTensorMode

    return FakeTensorMode(allow_non_fake_inputs=True)


def _generate(
    torch: Any, path: str, module: Any, case: dict[str, Any], device: str, moved: MadeOn
) -> tuple[Any, str, list[str]]:
    """(data, how, uninitialized) of one case: under FakeTensorMode, else by a real run on ``device``;
    ``uninitialized``: the inputs (or leaves of a structured input) made of uninitialized memory and never written
    in generate_input (``uninit_tracker``); ``moved`` counts its requests for CUDA made on a cpu ``device``."""
    tracker = uninit_tracker(torch)
    try:
        with _fake(torch), tracker, made_on(torch, device, moved):
            data = module.generate_input(**case, seed=1)
        return data, "fake", uninit_paths(torch, tracker, _named(data), leaves)
    except Exception as fake_error:  # noqa: BLE001 - data dependent: one real run tells
        fake = fake_error
    tracker = uninit_tracker(torch)
    try:
        with memory_cap(torch, device, None, f"{path}: generate_input(**{case})"), time_limit(REAL_RUN_S):
            with torch.device(device), tracker, made_on(torch, device, moved):
                data = module.generate_input(**case, seed=1)
            return data, "real", uninit_paths(torch, tracker, _named(data), leaves)
    except Exception as err:  # noqa: BLE001
        said = error_text(fake)
        why = "the same" if said == error_text(err) else f"{type(fake).__name__}: {said}"
        what = f"generate_input(**{case}) ({why} under FakeTensorMode; then a real run on {device})"
        raise ValueError(problem_error(path, err, what) + _cuda_hint(torch, err)) from None


def _named(data: Any) -> list[tuple[str, Any]]:
    """The inputs of ``data`` by the names the probe gives them (``x<i>`` of a tuple, else ``data``)."""
    return [(f"x{i}", item) for i, item in enumerate(data)] if isinstance(data, (tuple, list)) else [("data", data)]


def _cuda_hint(torch: Any, err: BaseException) -> str:
    """Where the problem needs CUDA itself beyond what a cpu target moves (``made_on``: generate_input's own
    tensors and generators), e.g. a CUDA-only dtype or a reference that makes CUDA tensors, and this torch has no
    GPU: the one fix."""
    if torch.cuda.is_available() or "cuda" not in str(err).lower():
        return ""
    return "; the problem needs CUDA itself and this torch has no GPU: import it on a machine with an NVIDIA GPU"


def _reference_run(
    torch: Any, path: str, module: Any, ref: Any, cases: list[dict[str, Any]], datas: list[Any], device: str
) -> tuple[Any, Any, str, list[str]]:  # datas: (data, how, uninitialized) of each case
    """(data, output, how, flags) of the reference: under FakeTensorMode on the first case, else one real run on
    the smallest case within the memory check (then its output is checked for a constant)."""
    if datas[0][1] == "fake":
        try:
            with _fake(torch):
                return datas[0][0], ref(datas[0][0]), "fake", []
        except Exception:  # noqa: BLE001 - data dependent: one real run tells
            pass
    index = _smallest(torch, datas)
    need = REAL_RUN_FACTOR * tensor_bytes(torch, datas[index][0])
    what = f"{path}: the reference on {cases[index]}"
    step = f"generate_input(**{cases[index]})"
    try:
        with memory_cap(torch, device, need, what), time_limit(REAL_RUN_S), torch.device(device):
            with made_on(torch, device):
                data = module.generate_input(**cases[index], seed=1)
            step = f"the reference on {cases[index]}"
            runs = [(data, ref(data))]
    except ProbeMemory:
        raise
    except Exception as err:  # noqa: BLE001 - the reference's own error (a ValueError too), with the file and step
        what = f"{step} (a real run on {device})"
        raise ValueError(problem_error(path, err, what) + _cuda_hint(torch, err)) from None
    flags = signal_flags(torch, runs[0][1], runs[0][1], [])
    return runs[0][0], runs[0][1], "real", flags


def _smallest(torch: Any, datas: list[Any]) -> int:
    """The case whose data (``(data, how, uninitialized)`` of each case) holds the fewest tensor bytes."""
    return min(range(len(datas)), key=lambda i: tensor_bytes(torch, datas[i][0]))


def _gpumode_flags(torch: Any, module: Any, ref: Any, case: dict[str, Any], size: int) -> tuple[list[str], str]:
    """(flags, how found) of a GPU MODE task whose shapes FakeTensorMode told: one real run of its smallest ``case``
    (``size`` bytes of inputs) on the CPU, within FLAG_DATA_BYTES and FLAG_RUN_S (an overflow, as helion/kda's)."""
    if size > FLAG_DATA_BYTES:
        return [], f"not run: the smallest case's inputs hold {size / GIB:.2f} GiB"
    try:
        with memory_cap(torch, "cpu", None, "the flags' run"), time_limit(FLAG_RUN_S), torch.device("cpu"):
            with made_on(torch, "cpu"):
                data = module.generate_input(**case, seed=1)
            with torch.no_grad():
                out = ref(data)
    except Exception as err:  # noqa: BLE001 - flags are advice: a run that fails leaves them unchecked
        return [], f"not run: the run on cpu raised {type(err).__name__}: {str(err)[:120]}"
    return signal_flags(torch, out, out, []), f"real run on cpu ({case})"


def gpumode_probe(torch: Any, path: str, module: Any, cases: list[dict[str, Any]], device: str) -> dict[str, Any]:
    """A GPU MODE reference: each case's data under FakeTensorMode (a reference's generate_input names its device,
    ``device="cuda"``, which fake tensors of any device honour without memory), else by a real run."""
    found = reference_function(module)
    assert found is not None  # problem_format said gpumode
    alias, ref = found
    moved = MadeOn()
    datas = [_generate(torch, path, module, case, device, moved) for case in cases]
    data, out, how, flags = _reference_run(torch, path, module, ref, cases, datas, device)
    flag_run = "real run"
    if how != "real":  # FakeTensorMode told the shapes: one real run on the CPU for the flags
        smallest = _smallest(torch, datas)
        flags, flag_run = _gpumode_flags(torch, module, ref, cases[smallest], tensor_bytes(torch, datas[smallest][0]))
    if moved.moved:
        flags = [
            *flags,
            f'generate_input makes its tensors on CUDA itself (device="cuda", .cuda(), a CUDA generator); for '
            f"this {device} target they are made on {device}, from the same seeds",
        ]
    destinations = _destinations(torch, data, out)
    if how == "fake":  # each case's own (a grouped task's count of buffers follows its case)
        for index, (other, other_how, _) in enumerate(datas[1:], start=1):
            if other_how != "fake":
                continue
            try:
                with _fake(torch):
                    destinations += _destinations(torch, other, ref(other))
            except Exception as err:  # noqa: BLE001 - said in the flags, with what to do
                flags = [
                    *flags,
                    f"the output buffers of case {cases[index]} are not known: its reference fails under "
                    f"FakeTensorMode ({type(err).__name__}: {error_text(err)}); if it writes into its data, add "
                    "their paths to the target's `outputs`",
                ]
    if any(h == "real" for _, h, _ in datas):
        how = "real"
    return {
        "format": "gpumode",
        "cases": cases,
        "shapes": [_data_entries(torch, d) for d, _, _ in datas],
        "outputs": describe_outputs(torch, out),
        "destinations": list(dict.fromkeys(destinations)),
        "uninitialized": list(dict.fromkeys(name for _, _, found in datas for name in found)),
        "flags": flags,
        "flag_run": flag_run,
        "mode": None,
        "how": how,
        "reference": alias,
    }


def probe_problem(
    torch: Any, path: str, scale: float | None, cases: list[dict[str, Any]] | None, device: str | None = None
) -> dict[str, Any]:
    """Inputs, outputs, destinations, flags and mode of a problem file (docs/suites.md, "the probe")."""
    try:
        module = load_problem_file(path)
    except Exception as err:  # noqa: BLE001
        raise ValueError(circular_import(path, err) or problem_error(path, err, "importing the file")) from None
    if problem_format(module) == "gpumode":
        return gpumode_probe(torch, path, module, list(cases or [{}]), probe_device(torch, device))
    return kernelbench_probe(torch, path, module, scale, cases, probe_device(torch, device))


def probe_warm_up(torch: Any) -> None:
    """The first meta convolution imports torch._dynamo (seconds): once, before any time limit runs."""
    for device in ("meta", "cpu"):
        with contextlib.suppress(Exception), torch.device(device), torch.no_grad():
            torch.nn.BatchNorm2d(1)(torch.nn.Conv2d(1, 1, 1)(torch.ones(2, 1, 2, 2))).tril()


def probe_main(argv: list[str]) -> None:
    """``probe REQUESTS_JSON``: on stdout ``{"ready": true}`` once torch is in, then one JSON line per request,
    ``{"ok": ..., "probe"|"error": ...}``; what a problem file prints goes to stderr, so it can never pass for a
    reply."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import torch

    probe_warm_up(torch)
    replies.write(json.dumps({"ready": True}) + "\n")  # started: what fails after this is a problem file's
    replies.flush()

    for request in json.loads(argv[0]):
        try:
            probe = probe_problem(
                torch, request["path"], request.get("scale"), request.get("cases"), request.get("device")
            )
            reply: dict[str, Any] = {"ok": True, "probe": probe}
        except Exception as err:  # noqa: BLE001 - one bad problem is one reply, not a dead probe
            reply = {
                "ok": False,
                "error": str(err) if isinstance(err, ValueError) else problem_error(request["path"], err, "probing"),
            }
        replies.write(json.dumps(reply, default=str) + "\n")
        replies.flush()
