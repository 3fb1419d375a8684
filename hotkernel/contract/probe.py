"""Probing a problem file: its inputs, the Model's tensors and its outputs, found without allocating the inputs
(run in the user's python by ``hotkernel new`` and ``hotkernel import``)."""

from __future__ import annotations

import contextlib
import inspect
import json
import keyword
import os
import re
import sys
from typing import Any

from .problems import problem_format
from .spec import load_file_module

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
        entries.append(
            {
                "shape": list(item.shape),
                "dtype": str(item.dtype).replace("torch.", ""),
                "floating": bool(item.is_floating_point()),
            }
        )
    return entries


def _forward_names(module: Any, count: int) -> list[str]:
    """The Model.forward parameter names of the ``count`` inputs (``x0``... where it takes ``*args``)."""
    params = list(inspect.signature(module.Model.forward).parameters.values())[1:]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return names[:count] if len(names) >= count else [f"x{i}" for i in range(count)]


def _kernelbench_probe(
    torch: Any, path: str, module: Any, scale: float | None, cases: list[dict[str, Any]] | None
) -> dict[str, Any]:
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
                raise ValueError(
                    f"{path}: Model keeps the tensor {(sub_name + '.' if sub_name else '') + attr} "
                    "outside its parameters and buffers (its values cannot follow the contract's seeds)"
                )
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
                outputs = _tensor_entries(
                    torch,
                    module.ref_kernel(tuple(data) if isinstance(data, (tuple, list)) else (data,)),
                    "ref_kernel()",
                    scalars=True,
                )
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
            reply = {
                "ok": True,
                "probe": probe_problem(torch, request["path"], request.get("scale"), request.get("cases")),
            }
        except Exception as err:  # noqa: BLE001 - one bad problem is one reply, not a dead probe
            reply = {
                "ok": False,
                "error": str(err) if isinstance(err, ValueError) else problem_error(request["path"], err, "probing"),
            }
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
