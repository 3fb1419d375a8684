"""The target's SPEC (parsed from ``baseline.py`` with ast, never imported), functions it names, seeds."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import json
import keyword
import os
import platform
import random
import re
import sys
from collections.abc import Callable
from typing import Any


def sha256_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def read_spec(script: str) -> dict[str, Any]:
    """The target's SPEC, parsed (never imported) from ``baseline.py`` next to ``script``."""
    baseline = os.path.join(os.path.dirname(os.path.abspath(script)), "baseline.py")
    with open(baseline, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=baseline)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "SPEC"
            and isinstance(node.value, ast.Call)
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
            and isinstance(node.value.args[0].value, str)
        ):
            return json.loads(node.value.args[0].value)
    raise ValueError(f"{baseline} has no `SPEC = json.loads(r'''...''')` literal: re-render it (`hotkernel sync`)")


def device_kind_of(spec: dict[str, Any]) -> str:
    return "cuda" if str(spec.get("device", "cuda")).startswith("cuda") else "cpu"


def workspace_root(script: str) -> str:
    """The workspace root: the parent of ``targets/`` (scripts live in ``targets/<name>/``)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(script))))


def load_file_module(path: str, folders: tuple[str, ...] = ()) -> Any:
    """Import the Python file ``path`` once per process (its folder, and ``folders``, on sys.path)."""
    name = "hk_user_" + hashlib.sha256(path.encode()).hexdigest()[:16]
    module = sys.modules.get(name)
    if module is None:
        for folder in (os.path.dirname(path), *folders):
            if folder not in sys.path:
                sys.path.insert(0, folder)
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
    return module


def load_function(ref: str, root: str) -> Callable[..., Any]:
    """Import ``module:function`` (importable or under ``root``), or ``./path.py:function`` under ``root``; a
    bare ``./problem.py`` is a module problem, whose baseline is :class:`ProblemBaseline`."""
    if is_problem_ref(ref):
        return ProblemBaseline(ref, root)
    module_part, _, attr = ref.rpartition(":")
    if not module_part or not attr:
        raise ValueError(f"function reference {ref!r} must look like module:function or ./file.py:function")
    if module_part.endswith(".py") or module_part.startswith(("./", "../", "/")):
        module = load_file_module(os.path.normpath(os.path.join(root, module_part)))
    else:
        if root not in sys.path:
            sys.path.insert(0, root)
        module = importlib.import_module(module_part)
    value: Any = module
    for part in attr.split("."):
        value = getattr(value, part)
    if not callable(value):
        raise TypeError(f"{ref} is not callable")
    return value


# ---- module problems (docs/suites.md) -----------------------------------------------------------------------
# A ``from`` that names a file without a function is a problem file in one of two layouts. KernelBench:
# ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``; the baseline is the Model called with
# the inputs, and its parameters and buffers are further inputs after them. GPU MODE (reference-kernels):
# ``generate_input(**case, seed)`` and ``ref_kernel(data)``; the inputs are the items of ``data``. Inputs follow
# the problem's own distribution, made from the contract's seeds on the target's device.
PROBLEM_SEED_MOD = 2**31 - 1  # a GPU MODE generate_input may hand its seed to numpy or random


def is_problem_ref(ref: str) -> bool:
    """True for ``./problem.py`` (a file, no ``:function``)."""
    return ref.endswith(".py") and ":" not in ref


def problem_format(module: Any) -> str:
    """``kernelbench`` or ``gpumode`` by the names a problem file defines; ValueError for neither."""
    if all(callable(getattr(module, n, None)) for n in ("Model", "get_inputs", "get_init_inputs")):
        return "kernelbench"
    if all(callable(getattr(module, n, None)) for n in ("generate_input", "ref_kernel")):
        return "gpumode"
    raise ValueError(f"{module.__file__}: neither a KernelBench problem (class Model, get_inputs(), "
                     "get_init_inputs()) nor a GPU MODE reference (generate_input(), ref_kernel()); "
                     "see docs/suites.md")


class Problem:
    """A loaded problem file: its format, and for KernelBench the module-level constants of its one case
    (``cases[0]``, e.g. a smaller batch_size) set before anything of it runs."""

    def __init__(self, module: Any, cases: list[dict[str, Any]] | None) -> None:
        self.module = module
        self.format = problem_format(module)
        self.cases = list(cases or [])
        if self.format == "kernelbench":
            for name, value in (self.cases[0] if self.cases else {}).items():
                setattr(module, name, value)
        self._meta_model: Any = None

    def inputs(self, torch: Any, shape_index: int, seed: int, device: str, dtype: Any) -> list[Any]:
        """The problem's own inputs of one set, made under ``seed`` on ``device`` (floats cast to ``dtype``
        for KernelBench; GPU MODE's generate_input picks its own dtypes)."""
        if self.format == "gpumode":
            case = dict(self.cases[shape_index]) if self.cases else {}
            with torch.device(device):
                data = self.module.generate_input(**case, seed=seed % PROBLEM_SEED_MOD)
            return list(data) if isinstance(data, (tuple, list)) else [data]
        torch.manual_seed(seed)
        with torch.device(device):
            values = list(self.module.get_inputs())
        return [v.to(dtype) if v.is_floating_point() else v for v in values]

    def model_tensors(self, torch: Any, seed: int, device: str, dtype: Any) -> list[Any]:
        """The Model's parameters then buffers (named_parameters(), named_buffers() order), initialised by
        the Model itself under ``seed`` on ``device``, floats cast to ``dtype``; none for GPU MODE."""
        if self.format == "gpumode":
            return []
        torch.manual_seed(seed)
        with torch.device(device):
            model = self.module.Model(*self.module.get_init_inputs())
        tensors = [t.detach() for _, t in model.named_parameters()] + [t.detach() for _, t in model.named_buffers()]
        return [t.to(dtype) if t.is_floating_point() else t for t in tensors]

    def meta_model(self, torch: Any) -> tuple[Any, list[str]]:
        """The Model built on the meta device (no memory) and the names of its tensors, in input order."""
        if self._meta_model is None:
            with torch.device("meta"):
                model = self.module.Model(*self.module.get_init_inputs())
            names = [n for n, _ in model.named_parameters()] + [n for n, _ in model.named_buffers()]
            self._meta_model = (model, names)
        return self._meta_model


_PROBLEMS: dict[str, Problem] = {}


def load_problem(ref: str, root: str, cases: list[dict[str, Any]] | None) -> Problem:
    """The problem file ``ref`` under ``root``, loaded once per process (its folder and the folder above it on
    sys.path: GPU MODE's reference imports ``utils`` from there); ``cases`` None: as loaded before."""
    path = os.path.normpath(os.path.join(root, ref))
    if path not in _PROBLEMS or (cases is not None and _PROBLEMS[path].cases != list(cases)):
        _PROBLEMS[path] = Problem(load_file_module(path, (os.path.dirname(os.path.dirname(path)),)), cases)
    return _PROBLEMS[path]


class ProblemBaseline:
    """A problem's baseline as a function of the call's inputs: KernelBench's Model with its parameters and
    buffers taken from the trailing inputs (``torch.func.functional_call`` on a meta-device Model), or GPU MODE's
    ``ref_kernel`` of the inputs as one tuple."""

    def __init__(self, ref: str, root: str) -> None:
        self.path = os.path.normpath(os.path.join(root, ref))
        load_problem(ref, root, None)

    def __call__(self, *args: Any) -> Any:
        import torch  # the contract's roles import torch inside their functions

        problem = _PROBLEMS[self.path]  # as last loaded (with the cases of the current run)
        if problem.format == "gpumode":
            return problem.module.ref_kernel(tuple(args))
        model, names = problem.meta_model(torch)
        count = len(args) - len(names)
        return torch.func.functional_call(model, dict(zip(names, args[count:], strict=True)), tuple(args[:count]))


def mix_seed(seed: int, index: int) -> int:
    """A per-tensor seed derived from a set seed (both < 2**63)."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


class SeedSource:
    """Fresh seeds from os.urandom (default policy) or a deterministic stream when the spec fixes ``seed``."""

    def __init__(self, fixed: int | None) -> None:
        self.policy = "fresh-per-run" if fixed is None else f"fixed:{fixed}"
        self._rng = None if fixed is None else random.Random(int(fixed))

    def next(self) -> int:
        if self._rng is None:
            return int.from_bytes(os.urandom(8), "little") >> 1
        return self._rng.getrandbits(63)


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return "CPU " + line.split(":", 1)[1].strip()
    return "CPU " + (platform.processor() or platform.machine())


def host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None when the platform does not say)."""
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    return None


# ---- probing a problem file without allocating its inputs (run by ``hotkernel new`` / ``hotkernel import``) ----
PROBE_BATCH_NAMES = ("batch_size", "batch", "B", "M", "N")  # the batch constant --scale shrinks, tried first


def problem_error(path: str, err: BaseException, what: str) -> str:
    """``FILE:LINE: what raised Error: message``, the line being the deepest frame inside ``path``."""
    line = getattr(err, "lineno", None) if isinstance(err, SyntaxError) else None
    tb = err.__traceback__
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(path):
            line = tb.tb_lineno
        tb = tb.tb_next
    where = f"{path}:{line}" if line else path
    return f"{where}: {what} raised {type(err).__name__}: {str(err)[:300]}"


def _tensor_entries(torch: Any, values: Any, what: str, *, scalars: bool = False) -> list[dict[str, Any]]:
    items = list(values) if isinstance(values, (tuple, list)) else [values]
    entries = []
    for index, item in enumerate(items):
        if not isinstance(item, torch.Tensor):
            raise ValueError(f"{what} gives a {type(item).__name__} at position {index}, not a tensor")
        if item.dim() == 0 and not scalars:
            raise ValueError(f"{what} gives a 0-d tensor at position {index} (hotkernel inputs have a shape)")
        entries.append({"shape": list(item.shape), "dtype": str(item.dtype).replace("torch.", ""),
                        "floating": bool(item.is_floating_point())})
    return entries


def _forward_names(module: Any, count: int) -> list[str]:
    """The Model.forward parameter names of the ``count`` inputs (``x0``... where it takes ``*args``)."""
    params = list(inspect.signature(module.Model.forward).parameters.values())[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:count] if len(names) >= count else [f"x{i}" for i in range(count)]


def _kernelbench_probe(torch: Any, path: str, module: Any, scale: float | None,
                       cases: list[dict[str, Any]] | None) -> dict[str, Any]:
    case: dict[str, Any] = dict(cases[0]) if cases else {}
    if scale is not None and not case:  # the constant that is the first input's first dimension
        try:
            with torch.device("meta"):
                first = list(module.get_inputs())[0]
            head = int(first.shape[0])
        except Exception:  # noqa: BLE001 - reported below, with the line, by the real probe
            head = None
        names = [*PROBE_BATCH_NAMES, *(n for n in vars(module) if n not in PROBE_BATCH_NAMES)]
        for name in names:
            value = getattr(module, name, None)
            if isinstance(value, int) and not isinstance(value, bool) and value == head:
                case[name] = max(1, int(round(value * scale)))
                break
    for name, value in case.items():
        setattr(module, name, value)
    try:
        with torch.device("meta"):
            inputs = module.get_inputs()
    except Exception as err:  # noqa: BLE001 - reported with the file and line
        raise ValueError(problem_error(path, err, "get_inputs()")) from None
    entries = _tensor_entries(torch, inputs, "get_inputs()")
    try:
        with torch.device("meta"):
            model = module.Model(*module.get_init_inputs())
    except Exception as err:  # noqa: BLE001
        raise ValueError(problem_error(path, err, "Model(*get_init_inputs())")) from None
    registered = {id(t) for t in list(model.parameters()) + list(model.buffers())}
    for sub_name, sub in model.named_modules():
        for attr, value in vars(sub).items():
            if isinstance(value, torch.Tensor) and id(value) not in registered:
                raise ValueError(f"{path}: Model keeps the tensor {(sub_name + '.' if sub_name else '') + attr} "
                                 "outside its parameters and buffers (its values cannot follow the contract's seeds)")
    names = _forward_names(module, len(entries))
    for entry, name in zip(entries, names, strict=True):
        entry["name"] = name
    taken = set(names)
    state = list(model.named_parameters()) + list(model.named_buffers())
    for key, tensor in state:
        base = re.sub(r"\W", "_", key)
        name = base if base.isidentifier() and not keyword.iskeyword(base) and base not in taken else "p_" + base
        while name in taken:
            name += "_"
        taken.add(name)
        entry = _tensor_entries(torch, [tensor], f"the Model's tensor {key}")[0]
        entries.append({**entry, "name": name, "param": key})
    outputs = None
    try:
        with torch.no_grad():
            out = model(*inputs)
    except Exception:  # noqa: BLE001 - an op without a meta kernel: outputs are checked at the first run
        out = None
    if out is not None:
        outputs = _tensor_entries(torch, out, "Model.forward", scalars=True)
    return {"format": "kernelbench", "cases": [case] if case else None, "shapes": [entries], "outputs": outputs}


def _gpumode_probe(torch: Any, path: str, module: Any, cases: list[dict[str, Any]]) -> dict[str, Any]:
    """Under FakeTensorMode: a reference's generate_input names its device (``device="cuda"``), which the meta
    device context would not override; fake tensors of any device hold no memory."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    shapes, outputs = [], None
    for case in cases:
        try:
            with FakeTensorMode():
                data = module.generate_input(**case, seed=1)
        except Exception as err:  # noqa: BLE001
            raise ValueError(problem_error(path, err, f"generate_input(**{case})")) from None
        entries = _tensor_entries(torch, data, "generate_input()")
        for index, entry in enumerate(entries):
            entry["name"] = f"x{index}"
        shapes.append(entries)
        if outputs is None:
            with contextlib.suppress(Exception), FakeTensorMode(allow_non_fake_inputs=True):
                outputs = _tensor_entries(torch, module.ref_kernel(tuple(data) if isinstance(data, (tuple, list))
                                                                   else (data,)), "ref_kernel()", scalars=True)
    return {"format": "gpumode", "cases": cases, "shapes": shapes, "outputs": outputs}


def probe_problem(torch: Any, path: str, scale: float | None, cases: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Inputs (names, shapes, dtypes), Model parameters and outputs of a problem file, on the meta device."""
    try:
        module = load_file_module(path, (os.path.dirname(os.path.dirname(path)),))
    except Exception as err:  # noqa: BLE001
        raise ValueError(problem_error(path, err, "importing the file")) from None
    layout = problem_format(module)
    if layout == "gpumode":
        return _gpumode_probe(torch, path, module, list(cases or [{}]))
    return _kernelbench_probe(torch, path, module, scale, cases)


def probe_main(argv: list[str]) -> None:
    """``probe REQUESTS_JSON``: one JSON line per request, ``{"ok": ..., "probe"|"error": ...}``."""
    import torch

    for request in json.loads(argv[0]):
        try:
            reply = {"ok": True, "probe": probe_problem(torch, request["path"], request.get("scale"),
                                                        request.get("cases"))}
        except Exception as err:  # noqa: BLE001 - one bad problem is one reply, not a dead probe
            reply = {"ok": False, "error": str(err) if isinstance(err, ValueError) else
                     problem_error(request["path"], err, "probing")}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
