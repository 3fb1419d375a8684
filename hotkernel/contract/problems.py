"""Problem files as targets: a KernelBench problem (``class Model``, ``get_inputs``, ``get_init_inputs``) or a GPU
MODE reference (``generate_input``, ``ref_kernel``) named by a ``from`` without ``:function``; the baseline and
the inputs they define."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from .spec import load_file_module, load_problem_file


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
# ``class Model(nn.Module)``, ``get_inputs()``, ``get_init_inputs()``; the call's inputs are the items of
# get_inputs() then ``state``, one mapping {state_dict key: tensor} of the Model's parameters then buffers; the
# baseline is ``torch.func.functional_call(model, state, inputs)``. The Model runs in the mode its file builds it
# in (training mode: KernelBench's own harness runs it so), for the baseline, the judge's reference and the
# candidate alike; the buffers its forward updates in place (BatchNorm's running statistics) are judged after
# the call like outputs. GPU MODE (reference-kernels): ``generate_input(**case, seed)`` and ``ref_kernel(data)``;
# the inputs are the items of ``data`` when it is a tuple or list of two or more, else ``data`` itself (so
# ``ref_kernel`` gets ``data`` back as it was made, whichever process calls it). Inputs follow the
# problem's own distribution, made from the contract's seeds on the target's device.
PROBLEM_SEED_MOD = 2**31 - 1  # a GPU MODE generate_input may hand its seed to numpy or random


def is_problem_ref(ref: str) -> bool:
    """True for ``./problem.py`` (a file, no ``:function``)."""
    return ref.endswith(".py") and ":" not in ref


REFERENCE_ALIASES = ("ref_kernel", "reference", "ref", "reference_kernel", "ref_impl", "reference_impl")
NOT_A_REFERENCE = ("generate_input", "check_implementation", "custom_kernel", "make_match_reference")


def _defined_here(module: Any, value: Any) -> bool:
    return inspect.isfunction(value) and getattr(value, "__module__", None) == module.__name__


def reference_function(module: Any) -> tuple[str, Callable[..., Any]] | None:
    """A GPU MODE reference's ``ref_kernel`` or its unambiguous stand-in: ``(how it was found, function)``.

    In order: ``ref_kernel``; one alias (``reference``, ``ref``, ...); the function ``check_implementation``
    closes over (``make_match_reference(fn, ...)``); the one function of one parameter the file defines besides
    generate_input and check_implementation. None when there is none; ValueError when several fit."""
    if callable(getattr(module, "ref_kernel", None)):
        return "ref_kernel", module.ref_kernel
    aliases = [n for n in REFERENCE_ALIASES[1:] if callable(getattr(module, n, None))]
    if len(aliases) == 1:
        return aliases[0], getattr(module, aliases[0])
    if len(aliases) > 1:
        raise ValueError(f"{module.__file__}: several references ({', '.join(aliases)}); name one ref_kernel")
    check = getattr(module, "check_implementation", None)
    cells = [c.cell_contents for c in (getattr(check, "__closure__", None) or ()) if c.cell_contents is not None]
    closed = [v for v in cells if inspect.isfunction(v) and v.__name__ not in NOT_A_REFERENCE]
    if len(closed) == 1:
        return "check_implementation", closed[0]
    single = []
    for name, value in vars(module).items():
        if name.startswith("_") or name in NOT_A_REFERENCE or not _defined_here(module, value):
            continue
        params = [p for p in inspect.signature(value).parameters.values() if p.default is p.empty]
        if len(params) == 1:
            single.append(name)
    if len(single) == 1:
        return single[0], getattr(module, single[0])
    if len(single) > 1:
        raise ValueError(
            f"{module.__file__}: no ref_kernel, and several functions could be the reference "
            f"({', '.join(single)}); name it ref_kernel"
        )
    return None


def problem_format(module: Any) -> str:
    """``kernelbench`` or ``gpumode`` (a reference under another name included); ValueError for neither."""
    if all(callable(getattr(module, n, None)) for n in ("Model", "get_inputs", "get_init_inputs")):
        return "kernelbench"
    if callable(getattr(module, "generate_input", None)) and reference_function(module) is not None:
        return "gpumode"
    raise ValueError(
        f"{module.__file__}: neither a KernelBench problem (class Model, get_inputs(), "
        "get_init_inputs()) nor a GPU MODE reference (generate_input(), ref_kernel()); "
        "see docs/suites.md"
    )


class Problem:
    """A loaded problem file: its format, and for KernelBench the module-level constants of its one case
    (``cases[0]``, e.g. a smaller batch_size) set before anything of it runs."""

    def __init__(self, module: Any, cases: list[dict[str, Any]] | None) -> None:
        self.module = module
        self.format = problem_format(module)
        found = reference_function(module) if self.format == "gpumode" else None
        self.reference = found[1] if found else None  # GPU MODE: ref_kernel or its unambiguous stand-in
        self.cases = list(cases or [])
        if self.format == "kernelbench":
            for name, value in (self.cases[0] if self.cases else {}).items():
                setattr(module, name, value)
        self._skeleton: Any = None
        self.buffer_keys: list[str] = []  # KernelBench: the state keys that are buffers, not parameters

    def inputs(self, torch: Any, shape_index: int, seed: int, device: str, dtype: Any) -> list[Any]:
        """The problem's own inputs of one set, made under ``seed`` on ``device`` (floating tensors cast to
        ``dtype`` for KernelBench, other values as they are; GPU MODE's generate_input picks its own dtypes)."""
        # a GPU MODE task seeds its own generator; what it draws from torch's global RNG (trimul's weights) is
        # fixed here too, else the judge's regenerated set would not be the worker's
        torch.manual_seed(seed)
        if self.format == "gpumode":
            case = dict(self.cases[shape_index]) if self.cases else {}
            with torch.device(device), made_on(torch, device):
                data = self.module.generate_input(**case, seed=seed % PROBLEM_SEED_MOD)
            return list(data) if isinstance(data, (tuple, list)) and len(data) != 1 else [data]
        with torch.device(device):
            values = list(self.module.get_inputs())
        return [v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in values]

    def state(self, torch: Any, seed: int, device: str, dtype: Any) -> dict[str, Any] | None:
        """KernelBench: the Model's ``state``, {key: tensor} of named_parameters() then named_buffers(), made by
        the Model itself under ``seed`` on ``device``, floats cast to ``dtype``; None for GPU MODE."""
        if self.format == "gpumode":
            return None
        torch.manual_seed(seed)
        with torch.device(device):
            model = self._build_model(torch)
        params = {key: t.detach() for key, t in model.named_parameters()}
        buffers = {key: t.detach() for key, t in model.named_buffers()}
        self.buffer_keys = list(buffers)
        return {key: t.to(dtype) if t.is_floating_point() else t for key, t in {**params, **buffers}.items()}

    def skeleton(self, torch: Any) -> Any:
        """The Model that ``functional_call`` fills with a ``state``, in the mode its file builds it in: built on
        the meta device (no memory), or on the CPU where its ``__init__`` needs real values (Swin's drop-path
        rates call ``.item()``; KernelBench level 3's 29_SwinMLP and 30_SwinTransformerV2 crashed every run on
        an H100, 2026-12-06). Its own tensors are never used (every parameter and buffer comes from the state);
        the CPU build draws from a forked RNG, so the caller's random stream is as it was."""
        if self._skeleton is None:
            try:
                with torch.device("meta"):
                    self._skeleton = self._build_model(torch)
            except (RuntimeError, NotImplementedError):  # .item() and data-dependent code have no meta value
                with torch.random.fork_rng(devices=[]), torch.device("cpu"):
                    self._skeleton = self._build_model(torch)
        return self._skeleton

    def _build_model(self, torch: Any) -> Any:
        return adopt_tensor_attributes(torch, self.module.Model(*self.module.get_init_inputs()))

    def random_modules(self, torch: Any) -> list[str]:
        """Modules whose forward draws random numbers as the Model is built (dropout with p > 0 in training
        mode), e.g. ``['drop: Dropout(p=0.1)']``; none for GPU MODE."""
        if self.format == "gpumode":
            return []
        found = []
        for name, sub in self.skeleton(torch).named_modules():
            if isinstance(sub, torch.nn.modules.dropout._DropoutNd) and sub.training and sub.p > 0:
                found.append(f"{name or 'model'}: {type(sub).__name__}(p={sub.p})")
        return found


class MadeOn:
    """How many times a problem's own code asked for CUDA and got the target's device (``made_on``)."""

    def __init__(self) -> None:
        self.moved = 0


@contextlib.contextmanager
def made_on(torch: Any, device: str, count: MadeOn | None = None) -> Iterator[MadeOn]:
    """While a GPU MODE ``generate_input`` runs for a target that is not on CUDA: where it names CUDA itself
    (``device="cuda"``, ``.cuda()``, ``.to("cuda")``, ``torch.Generator(device="cuda")``), its tensors and
    generators are made on the target's ``device`` instead, from the same seeds and the same distributions (the
    task's inputs as a CPU target has them; the import flags it). Input generation only: nothing timed runs
    under it. On a CUDA target nothing changes. ``count``: the counter to add to (a new one by default)."""
    count = count if count is not None else MadeOn()
    if torch.device(device).type == "cuda":
        yield count
        return
    from torch.overrides import TorchFunctionMode

    target = torch.device(device)

    def moved(value: Any) -> Any:
        if isinstance(value, (str, torch.device)) and not isinstance(value, bool):
            try:
                is_cuda = torch.device(value).type == "cuda"
            except (RuntimeError, TypeError):  # a string that is no device
                return value
            if is_cuda:
                count.moved += 1
                return target
        return value

    class OnTarget(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = dict(kwargs or {})
            if "device" in kwargs:
                kwargs["device"] = moved(kwargs["device"])
            if func is torch.Tensor.cuda:
                count.moved += 1
                return args[0].to(target)
            if func is torch.Tensor.to:
                args = (args[0], *(moved(a) for a in args[1:]))
            return func(*args, **kwargs)

    real_generator = torch.Generator

    def generator(device: Any = "cpu") -> Any:
        return real_generator(device=moved(device))

    torch.Generator = generator
    try:
        with OnTarget():
            yield count
    finally:
        torch.Generator = real_generator


def adopt_tensor_attributes(torch: Any, model: Any) -> Any:
    """``model`` with the tensors it keeps as plain attributes (``self.h0 = torch.randn(...)`` in ``__init__``)
    registered as buffers, so that they are part of ``state``, made from the contract's seeds like any buffer."""
    registered = {id(t) for t in [*model.parameters(), *model.buffers()]}
    for sub in model.modules():
        for attr, value in list(vars(sub).items()):
            if isinstance(value, torch.Tensor) and id(value) not in registered:
                delattr(sub, attr)
                sub.register_buffer(attr, value)
    return model


_PROBLEMS: dict[str, Problem] = {}


def load_problem(ref: str, root: str, cases: list[dict[str, Any]] | None) -> Problem:
    """The problem file ``ref`` under ``root``, loaded once per process (its folder and the folder above it on
    sys.path: GPU MODE's reference imports ``utils`` from there); ``cases`` None: as loaded before."""
    path = os.path.normpath(os.path.join(root, ref))
    if path not in _PROBLEMS or (cases is not None and _PROBLEMS[path].cases != list(cases)):
        _PROBLEMS[path] = Problem(load_problem_file(path), cases)
    return _PROBLEMS[path]


class ProblemBaseline:
    """A problem's baseline as a function of the call's inputs: KernelBench's Model called on its inputs with the
    final input ``state`` as its parameters and buffers (``torch.func.functional_call`` on ``Problem.skeleton``),
    or GPU MODE's ``ref_kernel`` of ``data`` (the inputs as one tuple, or the one input itself)."""

    def __init__(self, ref: str, root: str) -> None:
        self.path = os.path.normpath(os.path.join(root, ref))
        load_problem(ref, root, None)

    def __call__(self, *args: Any) -> Any:
        import torch  # the contract's roles import torch inside their functions

        problem = _PROBLEMS[self.path]  # as last loaded (with the cases of the current run)
        if problem.format == "gpumode":
            return problem.reference(args[0] if len(args) == 1 else tuple(args))
        *inputs, state = args
        return torch.func.functional_call(problem.skeleton(torch), state, tuple(inputs))
