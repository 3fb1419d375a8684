"""The judge: a persistent process that never imports the candidate. Per run it opens the worker's judged
outputs (CUDA IPC: the worker's own buffers, on the GPU, while the worker is frozen), regenerates every input
from the recorded seeds on the same device, recomputes the reference in a wide dtype and runs the checks
table's output rows on every judged output."""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from .checks import OUTPUT_CHECKS, OutputCase, check_floor, check_result, verdict_of
from .correctness import check_output_tolerances, check_outputs, correctness_baseline_error, tolerances
from .hygiene import die_with_parent
from .inputs import (
    Layout,
    apply_perturbation,
    as_outputs,
    call_inputs,
    checksum,
    exact_fp32,
    make_raw,
    map_tensors,
    nbytes,
    perturbation_of_call,
    set_layout,
    tensor_leaves,
)
from .knobs import PARENT_PID_ENV, CheckFailed
from .limits import memory_refusal
from .problems import Problem, is_problem_ref, load_function, load_problem
from .reference import JudgeState, PhaseClock, modules_of, precision_label, reference_outputs, spec_key
from .spec import apply_threads, device_kind_of, read_spec, workspace_root
from .transport import import_outputs


def judge_main() -> None:
    """Serve judge requests: one JSON job per stdin line, one JSON reply per line on the private stdout."""
    parent = os.environ.get(PARENT_PID_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None)
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import torch

    exact_fp32(torch)
    state = JudgeState(torch)
    os.write(reply_fd, b'{"ready": true}\n')
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer_job(state, json.loads(line))
        payload = (json.dumps(reply, allow_nan=True) + "\n").encode()
        while payload:
            payload = payload[os.write(reply_fd, payload) :]


def answer_job(state: JudgeState, job: dict[str, Any]) -> dict[str, Any]:
    """The reply to one job, with the seconds of each judge phase (``phases_s``); afterwards, with the job's
    tensors gone, the device memory the judge cached is given back (the next run's worker counts the card's free
    memory: a cached reference would be counted twice)."""
    state.clock = PhaseClock(state.torch)
    try:
        reply = judge_job(state, job)
    except CheckFailed as err:
        reply = {"status": verdict_of(err.check), "reason": str(err), "checks": []}
    except Exception as err:  # noqa: BLE001 - a judge failure is a reply, not a dead judge
        refusal = memory_refusal(err, "")
        reason = str(refusal) if refusal else f"crashed: judge: {type(err).__name__}: {str(err)[:300]}"
        reply = {"status": "invalid", "reason": reason, "checks": []}
    with state.clock("release"):
        release_device_memory(state.torch)
    return {**reply, "phases_s": state.clock.seconds()}


def release_device_memory(torch: Any) -> None:
    """Return the caching allocator's free blocks and the worker's IPC handles to the driver (cuda only)."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()
        with contextlib.suppress(Exception):
            torch.cuda.ipc_collect()
        torch.cuda.empty_cache()


def judge_functions(state: JudgeState, spec: dict[str, Any], root: str) -> tuple[Any, Any, Any]:
    """(baseline `from`, reference, derive) functions, imported once per judge."""

    def get(ref: str | None) -> Any:
        if not ref:
            return None
        key = f"{root}|{ref}"
        if key not in state.functions:
            try:
                state.functions[key] = load_function(ref, root)
            except Exception as err:  # noqa: BLE001
                raise CheckFailed(
                    "import_failed", f"judge could not import {ref}: {type(err).__name__}: {err}"
                ) from err
        return state.functions[key]

    base = get(spec["from"])
    return base, get(spec.get("reference")) or base, get(spec.get("derive"))


def check_deterministic(
    state: JudgeState,
    spec: dict[str, Any],
    ref_fn: Any,
    problem: Problem | None,
    inputs: list[Any],
    kwargs: dict[str, Any],
) -> None:
    """A Model that draws random numbers (dropout in training mode) is judged only when two references under
    other RNG seeds agree (an output zero by construction stays judgeable); else ``reference_deterministic``."""
    torch = state.torch
    random_parts = problem.random_modules(torch) if problem is not None else []
    if not random_parts:
        return
    results = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        results.append(reference_outputs(state, spec, ref_fn, inputs, kwargs))
    if not all(torch.equal(a, b) for a, b in zip(*results, strict=True)):
        raise CheckFailed(
            "reference_deterministic",
            f"the Model draws random numbers ({', '.join(random_parts)}) "
            "in training mode, so its output is noise that cannot be "
            "judged: build it in eval mode or without dropout",
        )


def judge_job(state: JudgeState, job: dict[str, Any]) -> dict[str, Any]:
    """Check one worker run: regenerate inputs from the seeds, recompute the reference, run the checks."""
    run = JudgedRun(state, job)
    with state.clock("ceiling"):
        run.ceiling = job.get("ceiling_gbps") or measure_ceiling_gbps(state, run.device_kind)
    if len(run.record.get("shapes") or []) != len(run.spec["shapes"]):
        raise CheckFailed("single_protocol_line", "worker reported a different number of shapes than the spec")
    started = time.monotonic()
    for shape_index, shape_rec in enumerate(run.record["shapes"]):
        run.per_shape.append(run.judge_shape(shape_index, shape_rec))
    return {**run.result(), "judge_s": round(time.monotonic() - started, 3)}


class JudgedRun:
    """One worker run as the judge checks it: the target's functions and bounds, the failed checks so far (the
    first one is the run's reason) and what each shape came to."""

    def __init__(self, state: JudgeState, job: dict[str, Any]) -> None:
        self.state, self.torch = state, state.torch
        self.run_dir, self.record = job["run_dir"], job["record"]
        spec = self.spec = read_spec(job["script"])
        root = workspace_root(job["script"])
        self.device_kind = device_kind_of(spec)
        self.device = "cuda" if self.device_kind == "cuda" else "cpu"
        self.problem = (
            load_problem(spec["from"], root, spec.get("cases") or []) if is_problem_ref(spec["from"]) else None
        )
        self.base_fn, self.ref_fn, self.derive = judge_functions(state, spec, root)
        self.threads = apply_threads(self.torch, spec)
        self.kwargs = dict(spec.get("kwargs") or {})
        self.tol = tolerances(spec["dtype"], spec)
        self.checks: list[dict[str, Any]] = []
        self.per_shape: list[dict[str, Any]] = []
        self.failure: dict[str, Any] | None = None
        self.worst = 0.0
        self.ceiling = 0.0

    def note(self, item: dict[str, Any], where: str) -> None:
        """Keep a failed check, with where it failed."""
        entry = {**item, "detail": f"{where}: {item['detail']}" if item["detail"] else where}
        if not item["ok"]:
            self.checks.append(entry)
            if self.failure is None:
                self.failure = entry

    def inputs_for(self, shape_index: int, item: dict[str, Any]) -> tuple[list[Any], Layout]:
        """The inputs of a judged call, regenerated from its seeds, and their layout."""
        with self.state.clock("inputs"):
            seeds = int(item["set_seed"]), int(item["shared_seed"])
            raw = make_raw(self.torch, self.spec, shape_index, *seeds, self.device, self.problem)
            values = call_inputs(raw, self.derive, self.kwargs)
            return values, set_layout(self.torch, self.spec, values, self.derive is not None, self.problem)

    def judge_shape(self, shape_index: int, shape_rec: dict[str, Any]) -> dict[str, Any]:
        """Every judged output of one shape, the stability of the worker's buffers, and the floor check."""
        torch, spec, label = self.torch, self.spec, self.spec["shapes"][shape_index]
        try:
            with self.state.clock("open"):
                handed = import_outputs(torch, shape_rec["outputs"], self.run_dir, self.device)
        except (OSError, ValueError, KeyError, RuntimeError) as err:
            raise CheckFailed("single_protocol_line", f"shape {label}: judged outputs unreadable: {err}") from err
        with self.state.clock("stamps"):
            stamps = [checksum(torch, t) for group in handed.values() for outs in group for t in outs]
        first_inputs, first_layout = self.inputs_for(shape_index, shape_rec["correct"][0])
        with self.state.clock("baseline"):
            check_deterministic(self.state, spec, self.ref_fn, self.problem, first_inputs, self.kwargs)
            expected = expected_outputs(self.state, spec, shape_index, self.base_fn, first_inputs, self.kwargs)
            check_output_tolerances(self.tol, len(expected))
            first_error = baseline_error(
                self.state, spec, shape_index, self.base_fn, self.ref_fn, first_inputs, self.kwargs, first_layout
            )
        shape = ShapeJudging(
            shape_index,
            shape_rec,
            {**self.tol, "baseline": first_error},
            expected,
            [(tuple(t.shape), str(t.dtype)) for t in first_layout.judged_after()],
        )
        for kind in ("correct", "timed"):
            items, outputs = shape_rec[kind], handed.get(kind, [])
            if len(items) != len(outputs):
                raise CheckFailed("single_protocol_line", f"shape {label}: {kind} outputs and seeds disagree")
            if kind == "correct" and len(items) != shape_rec["rotation"]:
                raise CheckFailed("outputs_match_reference", f"shape {label}: not every input set was checked")
            for item, outs in zip(items, outputs, strict=False):
                self.judge_call(shape, kind, item, outs)
        with self.state.clock("stamps"):
            again = [checksum(torch, t) for group in handed.values() for outs in group for t in outs]
        if json.dumps(again) != json.dumps(stamps):  # NaN equals NaN here
            problem = "the worker's output buffers changed while the judge read them"
            self.note(check_result("outputs_stable_during_judging", False, problem), f"shape {label}")
            shape.ok = False
        self.worst = max(self.worst, shape.error)
        out_bytes = sum(math.prod(dims) * dtype_size(torch, dtype) for dims, dtype in expected)
        floor_bytes = spec.get("min_bytes")
        if floor_bytes is None and not shape_rec.get("cache_resident"):
            floor_bytes = shape_rec.get("rotated_bytes") or 0
        floor_ms, problem = check_floor(float(shape_rec["ms"]), floor_bytes, self.ceiling, self.device_kind)
        if problem:
            self.note(check_result("faster_than_floor", False, problem), f"shape {label}")
            shape.ok = False
        return {
            "shape": label,
            "max_abs_error": shape.error,
            "ok": shape.ok,
            "bytes": int(spec.get("bytes") or nbytes(first_layout.leaves) + out_bytes),
            "floor_ms": floor_ms,
            "transport": shape_rec["outputs"].get("kind"),
        }

    def judge_call(self, shape: ShapeJudging, kind: str, item: dict[str, Any], outs: list[Any]) -> None:
        """The output checks (``OUTPUT_CHECKS``, in order, up to the first that fails) on one judged call."""
        state, shape_rec = self.state, shape.rec
        inputs, layout = self.inputs_for(shape.index, item)
        where = f"shape {self.spec['shapes'][shape.index]}, set {item['set']}" + (
            f", timed sample {item['sample']} call {item['call']}" if kind == "timed" else ""
        )
        judged = layout if kind == "correct" else None
        reference = reference_for(state, self.spec, self.ref_fn, inputs, self.kwargs, item, shape_rec, judged)
        case = OutputCase(
            self.torch,
            outs,
            layout.guarded(),
            shape.expected + shape.after_shapes if kind == "correct" else shape.expected,
            item,
            kind,
            reference,
            shape.tol,
            check_outputs,
            lambda: measure_baseline_error(
                state, self.base_fn, inputs_seen(state, inputs, item, shape_rec), self.kwargs, judged, reference()
            ),
        )
        for check in OUTPUT_CHECKS:
            with state.clock("checks"):
                found = check.function(case)
            for entry in found:
                if entry.get("max_abs_error") is not None and math.isfinite(entry["max_abs_error"]):
                    shape.error = max(shape.error, float(entry["max_abs_error"]))
                self.note(entry, where)
            if any(not entry["ok"] for entry in found):
                shape.ok = False
                return

    def result(self) -> dict[str, Any]:
        """The judge's reply for this run (the verdict is the first failed check's, else ok)."""
        tol = self.tol
        if self.failure is None:
            detail = f"every judged output within {json.dumps(tol, sort_keys=True)}; max error {self.worst:.3g}"
            self.checks.append({"name": "outputs_match_reference", "ok": True, "detail": detail})
            status, reason = "ok", None
        else:
            status, reason = verdict_of(self.failure["name"]), f"{self.failure['name']}: {self.failure['detail']}"
        return {
            "status": status,
            "reason": reason,
            "checks": self.checks,
            "max_error": self.worst,
            "per_shape": self.per_shape,
            "ceiling_gbps": self.ceiling,
            "tolerances": tol,
            "reference_precision": precision_label(self.state, self.spec, len(modules_of(self.torch, self.ref_fn))),
            "threads": self.threads,
        }


class ShapeJudging:
    """One shape while it is judged: its record, bounds, expected output shapes, and how it is going."""

    def __init__(
        self,
        index: int,
        rec: dict[str, Any],
        tol: dict[str, Any],
        expected: list[Any],
        after_shapes: list[tuple[tuple[int, ...], str]],
    ) -> None:
        self.index, self.rec, self.tol, self.expected, self.after_shapes = index, rec, tol, expected, after_shapes
        self.error, self.ok = 0.0, True


def reference_for(
    state: JudgeState,
    spec: dict[str, Any],
    ref_fn: Any,
    inputs: list[Any],
    kwargs: dict[str, Any],
    item: dict[str, Any],
    shape_rec: dict[str, Any],
    layout: Layout | None,
) -> Callable[[], list[Any]]:
    """A lazy reference for one judged output: on the inputs as the call saw them (timed calls: perturbed); with
    ``layout``, followed by the Model buffers as the reference's forward left them."""
    cache: list[list[Any]] = []

    def compute() -> list[Any]:
        if not cache:
            seen = inputs_seen(state, inputs, item, shape_rec)
            cache.append(reference_outputs(state, spec, ref_fn, seen, kwargs, layout))
        return cache[0]

    return compute


def inputs_seen(state: JudgeState, inputs: list[Any], item: dict[str, Any], shape_rec: dict[str, Any]) -> list[Any]:
    """The inputs as the judged call saw them: a timed call's perturbed copy, else ``inputs`` themselves."""
    slot = shape_rec.get("perturbed_input")
    if item.get("perturb_seed") is None or slot is None:
        return inputs
    with state.clock("perturb"):
        return perturbed_copy(state, inputs, item, shape_rec, slot)


def perturbed_copy(
    state: JudgeState, inputs: list[Any], item: dict[str, Any], shape_rec: dict[str, Any], slot: Any
) -> list[Any]:
    """A copy of ``inputs`` with the judged call's perturbation applied (``perturbation_of_call``)."""
    seen = map_tensors(state.torch, lambda t: t.clone(), inputs)
    leaves = tensor_leaves(state.torch, seen)
    position, value = perturbation_of_call(
        state.torch,
        leaves,
        slot,
        int(item["n_calls"]),
        int(item["perturb_seed"]),
        int(item["call"]),
        bool(shape_rec.get("perturb_derived")),
    )
    apply_perturbation(state.torch, leaves, slot, position, value)
    return seen


def dtype_size(torch: Any, name: str) -> int:
    return torch.empty((), dtype=getattr(torch, name.replace("torch.", ""))).element_size()


def expected_outputs(
    state: JudgeState, spec: dict[str, Any], shape_index: int, base_fn: Any, inputs: list[Any], kwargs: dict[str, Any]
) -> list[tuple[tuple[int, ...], str]]:
    """Shapes and dtypes the baseline's own function returns at this shape (cached per judge)."""
    key = (spec_key(spec), shape_index)
    if key not in state.expected:
        with state.torch.no_grad():
            copies = map_tensors(state.torch, lambda t: t.clone(), inputs)  # the baseline may write into them
            outs = as_outputs(state.torch, base_fn(*copies, **kwargs))
        state.expected[key] = [(tuple(t.shape), str(t.dtype)) for t in outs]
    return state.expected[key]


def baseline_error(
    state: JudgeState,
    spec: dict[str, Any],
    shape_index: int,
    base_fn: Any,
    ref_fn: Any,
    inputs: list[Any],
    kwargs: dict[str, Any],
    layout: Layout,
) -> list[list[float]]:
    """Per output, the baseline's own ``[rel_l2, corr, max_abs_error]`` against the reference on the shape's first
    set, once per judge (``correctness_admit_baseline``: the bounds never reject the baseline's own accuracy)."""
    key = (spec_key(spec), shape_index)
    if key not in state.baseline_error:
        refs = reference_outputs(state, spec, ref_fn, inputs, kwargs, layout)
        state.baseline_error[key] = measure_baseline_error(state, base_fn, inputs, kwargs, layout, refs)
    return state.baseline_error[key]


def measure_baseline_error(
    state: JudgeState, base_fn: Any, inputs: list[Any], kwargs: dict[str, Any], layout: Layout | None, refs: list[Any]
) -> list[list[float]]:
    """Per output, the baseline's own ``[rel_l2, corr, max_abs_error]`` on ``inputs`` against ``refs``, the
    reference on those inputs (a judged set's is computed already; not cached); with ``layout``, the Model
    buffers its forward updates count as outputs after the returned ones, as the correctness pass judges them (a
    BatchNorm running mean near zero is mostly rounding noise)."""
    torch = state.torch
    with state.clock("baseline"), torch.no_grad():
        copies = map_tensors(torch, lambda t: t.clone(), inputs)
        leaves = tensor_leaves(torch, copies)  # before the call: it may rebind an entry of ``state``
        outs = as_outputs(torch, base_fn(*copies, **kwargs))
        if layout is not None:
            outs = outs + [t for t, after in zip(leaves, layout.after, strict=True) if after]
        return correctness_baseline_error(torch, outs, refs)


def measure_ceiling_gbps(state: JudgeState, device_kind: str) -> float:
    """Device-to-device copy bandwidth (read + write counted), GB/s; measured once per judge."""
    if device_kind in state.ceiling_gbps:
        return state.ceiling_gbps[device_kind]
    torch = state.torch
    if device_kind == "cuda":
        size = 256 << 20
        src = torch.empty(size, dtype=torch.uint8, device="cuda").fill_(1)
        dst = torch.empty_like(src)
        dst.copy_(src)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(10):
            dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        seconds, moved = start.elapsed_time(end) / 1e3, 2 * size * 10
        del src, dst
        torch.cuda.empty_cache()
    else:
        size = 32 << 20
        src = torch.ones(size, dtype=torch.uint8)
        dst = torch.empty_like(src)
        dst.copy_(src)
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            dst.copy_(src)
            best = min(best, time.perf_counter() - t0)
        seconds, moved = best, 2 * size
    state.ceiling_gbps[device_kind] = moved / seconds / 1e9
    return state.ceiling_gbps[device_kind]
