"""The judge's reference and its precision: the baseline's function (or the target's ``reference``) on upcast
copies of the inputs, the Model's own floating tensors upcast too. The ladder, found once per target and kept by
the persistent judge: fp64 for fp32 targets, fp32 for the others, then the next precision down where one fails.

A cheaper reference where it is as good. An fp32 target's fp64 reference can cost many times its call: cuDNN has
no fast fp64 transposed 3-D convolution, and KernelBench level 1's 068 spent 17.0 s of a 25.3 s run on an H100
computing it (docs/performance.md). When a target's first fp64 reference takes REFERENCE_SLOW_S or longer, the
judge computes the fp32 reference of the same inputs too, and keeps fp32 for the target's later references only
when it is REFERENCE_FAST_FACTOR times faster and passes every output check against the fp64 one at bounds
REFERENCE_AGREEMENT times tighter than the target's (the baseline's own error not admitted). So a candidate is
off the fp64 answer by at most its own error plus a tenth of a bound; a deep network whose fp32 result drifts from
fp64 (KernelBench's ResNet101: 2.6e-4, over atol) keeps fp64. ``reference_precision`` in the run says which, and
why."""

from __future__ import annotations

import contextlib
import json
import time
from typing import Any

from .correctness import check_outputs, tolerances
from .inputs import Layout, as_outputs, map_tensors, tensor_leaves
from .knobs import REFERENCE_AGREEMENT, REFERENCE_FAST_FACTOR, REFERENCE_SLOW_S, CheckFailed
from .limits import memory_refusal


class PhaseClock:
    """Seconds per named phase of one judged run, each phase's own (a nested phase is not counted twice); a
    phase ends with a CUDA synchronize, so queued GPU work is charged to the phase that queued it."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.totals: dict[str, float] = {}
        self.nested: list[float] = []  # per open phase: the seconds its nested phases took

    @contextlib.contextmanager
    def __call__(self, name: str) -> Any:
        started = time.perf_counter()
        self.nested.append(0.0)
        try:
            yield
        finally:
            synchronize(self.torch)
            elapsed = time.perf_counter() - started
            inner = self.nested.pop()
            self.totals[name] = self.totals.get(name, 0.0) + elapsed - inner
            if self.nested:
                self.nested[-1] += elapsed

    def seconds(self) -> dict[str, float]:
        return {name: round(value, 3) for name, value in sorted(self.totals.items())}


class JudgeState:
    """What a persistent judge keeps between runs: imported functions, expected outputs, each target's reference
    precision and why, the copy ceiling, the baseline's own error; ``clock``: the phases of the run being judged."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.clock = PhaseClock(torch)
        self.functions: dict[str, Any] = {}
        self.expected: dict[tuple[str, int], list[tuple[tuple[int, ...], str]]] = {}
        self.precision: dict[str, str] = {}
        self.precision_note: dict[str, str] = {}  # why a target's precision is what it is
        self.ceiling_gbps: dict[str, float] = {}
        self.baseline_error: dict[tuple[str, int], list[list[float]]] = {}


def modules_of(torch: Any, fn: Any) -> list[Any]:
    """``nn.Module`` objects a reference function uses: itself, its ``self``, closure cells, named globals."""
    found: list[Any] = []
    candidates = [fn, getattr(fn, "__self__", None)]
    code = getattr(fn, "__code__", None)
    for cell in getattr(fn, "__closure__", None) or ():
        with contextlib.suppress(ValueError):
            candidates.append(cell.cell_contents)
    if code is not None:
        names = getattr(fn, "__globals__", {})
        candidates += [names.get(name) for name in code.co_names]
    for item in candidates:
        if isinstance(item, torch.nn.Module) and all(item is not seen for seen in found):
            found.append(item)
    return found


@contextlib.contextmanager
def upcast_modules(torch: Any, modules: list[Any], wide: Any) -> Any:
    """Parameters and buffers of ``modules`` as copies for the duration, the floating ones in ``wide`` (a forward
    that updates its buffers, as BatchNorm's running statistics and its integer batch count in training mode,
    updates the copies); restored exactly."""
    saved = []
    for module in modules:
        for tensor in list(module.parameters()) + list(module.buffers()):
            saved.append((tensor, tensor.data))
            tensor.data = tensor.data.to(wide, copy=True) if tensor.is_floating_point() else tensor.data.clone()
    try:
        yield
    finally:
        for tensor, data in saved:
            tensor.data = data


def wide_dtype(torch: Any, name: str) -> Any:
    return {"fp64": torch.float64, "fp32": torch.float32}.get(name)


def spec_key(spec: dict[str, Any]) -> str:
    """The judge's key for what it keeps per target (the spec as JSON)."""
    return json.dumps(spec, sort_keys=True)


def reference_outputs(
    state: JudgeState,
    spec: dict[str, Any],
    ref_fn: Any,
    inputs: list[Any],
    kwargs: dict[str, Any],
    layout: Layout | None = None,
) -> list[Any]:
    """The reference on upcast copies of the inputs (and upcast modules), then the Model buffers as its forward
    left them (``layout.after``); the precision that works is found once per target: fp64 (fp32 targets) or
    fp32, then fp32, then the target dtype; an fp64 reference as slow as REFERENCE_SLOW_S may give way to fp32
    (``cheaper_reference``). Stated in ``reference_precision``."""
    torch = state.torch
    key = spec_key(spec)
    ladder = ["fp64", "fp32", "target"] if spec["dtype"] == "fp32" else ["fp32", "target"]
    first = key not in state.precision
    if not first:
        ladder = [state.precision[key]]
    modules = modules_of(torch, ref_fn)
    with state.clock("reference"):
        outs, seconds = reference_ladder(state, spec, ref_fn, inputs, kwargs, layout, ladder, modules)
        if first and state.precision[key] == "fp64" and seconds >= REFERENCE_SLOW_S:
            cheaper_reference(state, spec, ref_fn, (inputs, kwargs, layout, modules), outs, seconds)
        return outs


def reference_ladder(
    state: JudgeState,
    spec: dict[str, Any],
    ref_fn: Any,
    inputs: list[Any],
    kwargs: dict[str, Any],
    layout: Layout | None,
    ladder: list[str],
    modules: list[Any],
) -> tuple[list[Any], float]:
    """``reference_outputs`` in the first precision of ``ladder`` that runs (remembered per target), and the
    seconds that call took."""
    last_error: Exception | None = None
    for name in ladder:
        try:
            found = reference_call(state, ref_fn, (inputs, kwargs, layout, modules), name)
        except (RuntimeError, TypeError) as err:
            last_error = err
            continue
        state.precision[spec_key(spec)] = name
        return found
    refusal = memory_refusal(last_error, "computing the reference in every precision") if last_error else None
    raise refusal or CheckFailed("crashed", f"judge: the reference fails in every precision: {last_error}")


def reference_call(state: JudgeState, ref_fn: Any, call: tuple[Any, ...], name: str) -> tuple[list[Any], float]:
    """The reference in precision ``name`` on ``call`` = (inputs, kwargs, layout, modules): its outputs (then the
    Model buffers as its forward left them, with ``layout``) and its seconds (device work included)."""
    torch = state.torch
    inputs, kwargs, layout, modules = call
    wide = wide_dtype(torch, name)

    def widen(t: Any) -> Any:  # always a copy: the reference may write into what it is given
        return t.to(wide, copy=True) if wide is not None and t.is_floating_point() else t.clone()

    with torch.no_grad(), upcast_modules(torch, modules if wide is not None else [], wide):
        cast = map_tensors(torch, widen, inputs)
        cast_leaves = tensor_leaves(torch, cast)  # before the call: it may rebind an entry of ``state``
        synchronize(torch)
        started = time.perf_counter()
        outs = as_outputs(torch, ref_fn(*cast, **kwargs))
        synchronize(torch)
        seconds = time.perf_counter() - started
    if layout is not None:
        outs = outs + [t for t, aft in zip(cast_leaves, layout.after, strict=True) if aft]
    return outs, seconds


def synchronize(torch: Any) -> None:
    """Wait for the device's queued work (CUDA only), so a clock around it counts that work."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()


def cheaper_reference(
    state: JudgeState, spec: dict[str, Any], ref_fn: Any, call: tuple[Any, ...], wide: list[Any], wide_s: float
) -> None:
    """Keep fp32 for the target's later references when it is REFERENCE_FAST_FACTOR times faster than the fp64
    reference ``wide`` just computed (``wide_s`` seconds) and within every bound of it made REFERENCE_AGREEMENT
    times tighter; else keep fp64. Either way the reason goes into ``reference_precision``."""
    key = spec_key(spec)
    try:
        narrow, narrow_s = reference_call(state, ref_fn, call, "fp32")
    except (RuntimeError, TypeError) as err:  # out of memory beside the fp64 outputs, too: fp64 stays
        state.precision_note[key] = f"fp64 took {wide_s:.2g} s a call; fp32 failed: {type(err).__name__}"
        return
    why = f"fp64 took {wide_s:.2g} s a call, fp32 {narrow_s:.2g} s"
    if narrow_s * REFERENCE_FAST_FACTOR > wide_s:
        state.precision_note[key] = f"{why}: not {REFERENCE_FAST_FACTOR:g}x faster"
        return
    tight = tightened(tolerances(spec["dtype"], spec), REFERENCE_AGREEMENT)
    failed = [entry for entry in check_outputs(state.torch, narrow, wide, tight) if not entry["ok"]]
    if failed:
        state.precision_note[key] = f"{why}, but off fp64 by more than 1/{REFERENCE_AGREEMENT:g} of a bound"
        return
    state.precision[key] = "fp32"
    state.precision_note[key] = f"{why}, within 1/{REFERENCE_AGREEMENT:g} of every bound of fp64 on the first set"


def tightened(tol: dict[str, Any], factor: float) -> dict[str, Any]:
    """``tol`` (and each ``per_output`` entry) with atol, rtol and rel_l2_max divided by ``factor`` and the
    correlation's shortfall from 1 too."""

    def one(bounds: dict[str, Any]) -> dict[str, float]:
        return {
            "atol": float(bounds["atol"]) / factor,
            "rtol": float(bounds["rtol"]) / factor,
            "rel_l2_max": float(bounds["rel_l2_max"]) / factor,
            "min_corr": 1.0 - (1.0 - float(bounds["min_corr"])) / factor,
        }

    found: dict[str, Any] = one(tol)
    if tol.get("per_output"):
        found["per_output"] = [one(entry) for entry in tol["per_output"]]
    return found


def precision_label(state: JudgeState, spec: dict[str, Any], modules: int) -> str | None:
    """``reference_precision`` of a run: the precision, the modules upcast, and why (``cheaper_reference``)."""
    key = spec_key(spec)
    name = state.precision.get(key)
    if name is None:
        return None
    label = spec["dtype"] + " (the target dtype: tolerances as stated)" if name == "target" else name
    label += f", {modules} module(s) upcast" if modules and name != "target" else ""
    return label + (f" ({state.precision_note[key]})" if key in state.precision_note else "")
