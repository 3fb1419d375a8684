"""One shape of a run, inside the worker: its input sets (rotation fitted to the free memory), the
correctness pass, the timer's callbacks and the outputs kept for the judge."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from .checks import fit_rotation
from .hygiene import wait_exited
from .inputs import (
    Layout,
    Perturbation,
    PlacementPad,
    as_outputs,
    call_inputs,
    checksum,
    fill_destinations,
    input_bytes,
    make_raw,
    nbytes,
    perturb_slot,
    poison_memory,
    poison_tensors,
    rotated_raw,
    rotation_count,
    rotation_with_outputs,
    set_layout,
    sync_device,
    tensor_leaves,
)
from .knobs import CACHE_MULTIPLE, KILL_WAIT_S, MIN_ROTATION, SAMPLED_EARLY, SAMPLES, CheckFailed
from .problems import Problem
from .spec import SeedSource, host_available_bytes
from .timer import measure

placement_pad = PlacementPad()


def free_bytes(torch: Any, device_kind: str, held_host_bytes: int = 0) -> int | None:
    """Memory this run may still use: the device's free memory plus what our allocator holds but the placement
    pad (cuda), or the host's MemAvailable plus ``held_host_bytes``, what the run has allocated already (cpu)."""
    if device_kind == "cuda":
        free, _total = torch.cuda.mem_get_info()
        return int(free) + int(torch.cuda.memory_reserved()) - placement_pad.bytes
    available = host_available_bytes()
    return None if available is None else available + held_host_bytes


def await_previous_run(await_exit: list[tuple[int, int | None]]) -> None:
    """Wait for the previous run's killed processes (``previous_run_exited`` when they outlive KILL_WAIT_S)."""
    running = wait_exited(await_exit, KILL_WAIT_S)
    if running:
        raise CheckFailed(
            "previous_run_exited",
            f"the previous run's process(es) {running} were still exiting {KILL_WAIT_S:.0f} s after they were killed",
        )


def fitted_rotation(
    sizes: tuple[int, int, int],
    wanted: int,
    free: int | None,
    read_free: Callable[[], int | None],
    await_exit: list[tuple[int, int | None]],
    device_kind: str,
    label: str,
) -> tuple[int, int | None]:
    """``(K, free)``: the rotation that fits ``free`` bytes for ``(rotated, shared, output)`` bytes, or
    ``fits_memory``. A refusal while the placement pad is held releases it, and one while the previous run's
    processes still exit (they hold their memory until then) waits for them; each reads the free memory again
    (``read_free``) before the refusal stands."""
    n_sets, problem = fit_rotation(*sizes, wanted, free, device_kind)
    if problem and placement_pad.bytes:
        placement_pad.release()
        free = read_free()
        n_sets, problem = fit_rotation(*sizes, wanted, free, device_kind)
    if problem and await_exit:
        await_previous_run(await_exit)
        free = read_free()
        n_sets, problem = fit_rotation(*sizes, wanted, free, device_kind)
    if problem:
        raise CheckFailed("fits_memory", f"shape {label}: {problem}")
    return n_sets, free


class ShapeInputs:
    """How one shape's input sets are made: raw inputs from seeds (a problem's own generator or the SPEC's
    shapes), the ``derive`` hook, and the roles of their tensor leaves (:class:`Layout`)."""

    def __init__(
        self,
        torch: Any,
        spec: dict[str, Any],
        shape_index: int,
        derive: Callable[..., Any] | None,
        kwargs: dict[str, Any],
        device: str,
        problem: Problem | None,
    ) -> None:
        self.torch, self.spec, self.shape_index, self.derive = torch, spec, shape_index, derive
        self.kwargs, self.device, self.problem = kwargs, device, problem
        self.rotated = rotated_raw(spec)

    def build(self, set_seed: int, shared_seed: int, shared: bool = True) -> list[Any]:
        """One set's inputs; ``shared=False`` (no ``derive`` hook only): the rotated ones, the shared ones not made."""
        raw = make_raw(
            self.torch, self.spec, self.shape_index, set_seed, shared_seed, self.device, self.problem, shared
        )
        return call_inputs(raw, self.derive, self.kwargs)

    def args(self, values: list[Any]) -> list[Any]:
        """One call's positional inputs, the same for every kernel: a KernelBench ``state`` as a new mapping of the
        same tensors (``functional_call`` writes a tensor the forward reassigns, ``self.h = ...``, back into the
        mapping it is given, which would change what later calls see)."""
        if self.problem is not None and self.problem.format == "kernelbench" and values:
            return [*values[:-1], dict(values[-1])]
        return values

    def per_set(self, values: list[Any]) -> list[bool]:
        """Per top-level input: whether each set has its own copy (with a ``derive`` hook, every input)."""
        return [True] * len(values) if self.derive is not None else self.rotated

    def layout(self, values: list[Any]) -> Layout:
        return set_layout(self.torch, self.spec, values, self.derive is not None, self.problem)

    def refill(self, sets: list[list[Any]], fresh_seeds: list[int], shared: int) -> None:
        """Every set's per-set inputs (and the shared ones, through set 0) copied from new seeds, leaf by leaf;
        then the destination buffers filled (``fill_destinations``)."""
        torch = self.torch
        for k, values in enumerate(sets):
            flags = self.per_set(values)
            # the shared inputs (a KernelBench Model's state: the whole Model built again) come through set 0 only
            fresh = self.build(fresh_seeds[k], shared, k == 0 or self.derive is not None)
            with torch.no_grad():
                for index, (old, new) in enumerate(zip(values, fresh, strict=False)):
                    if k == 0 or flags[index]:
                        for buf, leaf in zip(tensor_leaves(torch, old), tensor_leaves(torch, new), strict=True):
                            buf.copy_(leaf)
            del fresh
            fill_destinations(torch, self.layout(values).outputs(), fresh_seeds[k])


def first_call(
    torch: Any,
    inputs: ShapeInputs,
    kernel: Callable[..., Any],
    kwargs: dict[str, Any],
    seeds: tuple[int, int],
    label: str,
    device_kind: str,
) -> tuple[list[Any], list[Any], int]:
    """(the first input set, pristine copies of its Model buffers, bytes of one call's outputs)."""
    try:
        first = inputs.build(seeds[1], seeds[0])
        pristine = [t.detach().clone() for t in inputs.layout(first).judged_after()]
        probe = as_outputs(torch, kernel(*inputs.args(first), **kwargs))
        sync_device(torch, device_kind)
    except torch.OutOfMemoryError as err:
        raise CheckFailed(
            "fits_memory",
            f"shape {label}: the first input set and one call ran out of device "
            f"memory ({str(err).splitlines()[0][:160]}): use a smaller shape or free "
            "the memory",
        ) from err
    return first, pristine, nbytes(probe)


def correctness_pass(
    torch: Any,
    inputs: ShapeInputs,
    kernel: Callable[..., Any],
    kwargs: dict[str, Any],
    sets: list[list[Any]],
    layouts: list[Layout],
    pristine: list[Any],
    urandom: random.SystemRandom,
    device_kind: str,
) -> tuple[list[list[Any]], list[list[float]], list[int]]:
    """Every set once: its Model buffers reset, destination buffers filled, then the call. Per set: the outputs
    (a device copy each) followed by the Model buffers as the call left them; the inputs' checksums; sizes."""
    outputs, sums, out_sizes = [], [], []
    for values, layout in zip(sets, layouts, strict=True):
        with torch.no_grad():
            for buf, saved in zip(layout.judged_after(), pristine, strict=True):
                buf.copy_(saved)
        fill_destinations(torch, layout.outputs(), urandom.getrandbits(63))
        outs = as_outputs(torch, kernel(*inputs.args(values), **kwargs))
        sync_device(torch, device_kind)
        out_sizes = [t.numel() * t.element_size() for t in outs]
        outputs.append([t.detach().clone() for t in outs] + [t.detach().clone() for t in layout.judged_after()])
        del outs
    for layout in layouts:
        sums.append([checksum(torch, t) for t in layout.guarded()])
    return outputs, sums, out_sizes


class ShapeSets(NamedTuple):
    """The K input sets of one shape as the worker holds them, with what the run's record says of them (a
    NamedTuple: the contract also runs as a module outside ``sys.modules``, where a dataclass cannot be made)."""

    sets: list[list[Any]]
    layouts: list[Layout]
    set_seeds: list[int]
    shared_seed: int
    pristine: list[Any]  # the Model buffers as they were before the first call, restored before each checked call
    per_set: int  # bytes of one set's own (rotated) tensors
    out_bytes: int  # bytes of one call's outputs
    cache_resident: bool


def make_sets(
    torch: Any,
    inputs: ShapeInputs,
    kernel: Callable[..., Any],
    seeds: SeedSource,
    cache: int,
    device_kind: str,
    label: str,
    await_exit: list[tuple[int, int | None]],
    rotation: int | None,
) -> ShapeSets:
    """The first set and one call (which sizes the outputs), then K fitted to the free memory and the other sets.
    ``rotation``: the K the verify's first run chose; None: chosen here."""
    rotated_bytes, shared_bytes = input_bytes(inputs.spec, inputs.shape_index)
    # Before the first set: the outputs are not known yet, so none are counted (a lower bound; the check after
    # the first call counts them).
    _, free = fitted_rotation(
        (rotated_bytes, shared_bytes, 0),
        MIN_ROTATION,
        free_bytes(torch, device_kind),
        lambda: free_bytes(torch, device_kind),
        await_exit,
        device_kind,
        label,
    )
    shared_seed, first_seed = seeds.next(), seeds.next()
    first, pristine, out_bytes = first_call(
        torch, inputs, kernel, inputs.kwargs, (shared_seed, first_seed), label, device_kind
    )
    layout = inputs.layout(first)
    per_set = nbytes([t for t, own in zip(layout.leaves, layout.per_set, strict=True) if own])
    total = nbytes(layout.leaves)
    wanted, cache_resident = rotation_count(per_set, cache, device_kind)
    wanted = rotation_with_outputs(wanted, per_set, out_bytes, cache, device_kind) if rotation is None else rotation
    held = total if device_kind == "cpu" else 0  # the cuda reading counts our allocator's blocks itself
    n_sets, free = fitted_rotation(
        (per_set, total - per_set, out_bytes),
        wanted,
        free,
        lambda: free_bytes(torch, device_kind, held),
        await_exit,
        device_kind,
        label,
    )
    set_seeds = [first_seed] + [seeds.next() for _ in range(n_sets - 1)]
    sets: list[list[Any]] = [first]
    own = inputs.per_set(first)
    for k in range(1, n_sets):  # shared (non-rotated) inputs are one value used by every set, made once
        fresh = inputs.build(set_seeds[k], shared_seed, inputs.derive is not None)
        sets.append([fresh[i] if own[i] else first[i] for i in range(len(first))])
    return ShapeSets(
        sets,
        [inputs.layout(values) for values in sets],
        set_seeds,
        shared_seed,
        pristine,
        per_set,
        out_bytes,
        cache_resident or n_sets * per_set <= CACHE_MULTIPLE * cache,
    )


def run_shape(
    torch: Any,
    spec: dict[str, Any],
    shape_index: int,
    label: str,
    kernel: Callable[..., Any],
    derive: Callable[..., Any] | None,
    kwargs: dict[str, Any],
    seeds: SeedSource,
    cache: int,
    device: str,
    device_kind: str,
    clocks: tuple[Callable[[], float], Callable[[], float], Callable[..., float]],
    module_problem: Problem | None = None,
    await_exit: list[tuple[int, int | None]] | None = None,
    rotation: int | None = None,
) -> tuple[dict[str, Any], dict[str, list[list[Any]]]]:
    """Inputs, poison, correctness pass, timed samples and the judged outputs (on the device) of one shape.
    ``await_exit``: the previous run's killed processes, waited for before the timer (their CUDA teardown
    overlaps this run's inputs and correctness pass, never its timed samples). ``rotation``: the K the verify's
    first run chose (its later runs keep it: an output whose size follows the data, such as a stream
    compaction's, would move K by one between runs); None: chosen here."""
    marks = {"start": time.perf_counter()}
    urandom = random.SystemRandom()  # call picks: os.urandom, not the `random` state a script can seed
    inputs = ShapeInputs(torch, spec, shape_index, derive, kwargs, device, module_problem)
    await_exit = await_exit or []
    held = make_sets(torch, inputs, kernel, seeds, cache, device_kind, label, await_exit, rotation)
    input_sizes = sorted({t.numel() * t.element_size() for t in held.layouts[0].leaves})
    poison_memory(torch, input_sizes * 2 + [sum(input_sizes)], device)
    marks["inputs"] = time.perf_counter()
    correct_outputs, sums, out_sizes = correctness_pass(
        torch, inputs, kernel, kwargs, held.sets, held.layouts, held.pristine, urandom, device_kind
    )
    correct_items = [
        {"set": k, "set_seed": seed, "shared_seed": held.shared_seed, "checksums": sums[k]}
        for k, seed in enumerate(held.set_seeds)
    ]
    marks["correctness_pass"] = time.perf_counter()
    if await_exit:
        await_previous_run(await_exit)
    marks["await_exit"] = time.perf_counter()
    slot = perturb_slot(torch, held.layouts[0])
    own_elements = derive is not None or module_problem is not None  # perturb with another element of the tensor
    perturbation = Perturbation(
        torch, [lay.leaves[slot] for lay in held.layouts] if slot is not None else [], own_elements, device
    )
    timed = TimedCalls(
        torch, kernel, kwargs, held, inputs, seeds, perturbation, out_sizes, (device, device_kind), urandom
    )
    timing = timed.measure(spec, cache, clocks)
    marks["timer"] = time.perf_counter()
    record = shape_record(label, shape_index, held, timing, marks)
    record.update(perturbed_input=slot, perturb_derived=own_elements, correct=correct_items, timed=timed.items)
    return record, {"correct": correct_outputs, "timed": timed.outputs}


TIMING_KEYS = ("event_total_ms", "enqueue_total_ms", "wall_total_ms", "samples", "estimate_ms", "eager_estimate_ms")


def shape_record(
    label: str, shape_index: int, held: ShapeSets, timing: dict[str, Any], marks: dict[str, float]
) -> dict[str, Any]:
    """What the protocol line says of one shape's sets and timing (the judge's seeds are added by the caller)."""
    names = list(marks)
    return {
        "shape": label,
        "index": shape_index,
        "rotation": len(held.sets),
        "rotated_bytes": held.per_set,
        "output_bytes": held.out_bytes,
        "cache_resident": held.cache_resident,
        "n_calls": timing["n_calls"],
        "timer": timing["timer"],
        "ms": timing["ms"],
        "samples_ms": timing["samples_ms"],
        "launch_bound": timing["launch_bound"],
        "capture_error": timing["capture_error"],
        "overhead_ms": timing["overhead_ms"],
        "sized_by": timing["sized_by"],
        "timed_kernel_s": round(timing["event_total_ms"] / 1e3, 6),
        "timing": {key: timing[key] for key in TIMING_KEYS},
        "phases_s": {b: round(marks[b] - marks[a], 3) for a, b in zip(names, names[1:], strict=False)},
    }


class TimedCalls:
    """The timer's callbacks over one shape's K sets (``measure`` in timer.py calls them), and the outputs and
    seeds of the timed calls it keeps for the judge (``outputs``, ``items``)."""

    def __init__(
        self,
        torch: Any,
        kernel: Callable[..., Any],
        kwargs: dict[str, Any],
        held: ShapeSets,
        inputs: ShapeInputs,
        seeds: SeedSource,
        perturbation: Perturbation,
        out_sizes: list[int],
        device: tuple[str, str],
        urandom: random.SystemRandom,
    ) -> None:
        self.torch, self.kernel, self.kwargs, self.held, self.inputs = torch, kernel, kwargs, held, inputs
        self.seeds, self.perturbation, self.out_sizes, self.urandom = seeds, perturbation, out_sizes, urandom
        self.device, self.device_kind = device
        self.n_sets = len(held.sets)
        self.all_inputs = [t for lay in held.layouts for t in lay.leaves]
        self.sample_seeds: dict[int, tuple[list[int], int, int]] = {}
        self.last = SAMPLES - 1
        self.sampled = set(urandom.sample(range(self.last), min(SAMPLED_EARLY, self.last)))
        self.outputs: list[list[Any]] = []
        self.items: list[dict[str, Any]] = []

    def call(self, j: int) -> Any:
        k = j % self.n_sets
        self.perturbation.perturb(j, k)
        out = self.kernel(*self.inputs.args(self.held.sets[k]), **self.kwargs)
        self.perturbation.settle(j)
        return out

    def overhead_call(self, j: int) -> None:
        self.perturbation.perturb(j, j % self.n_sets)
        self.perturbation.settle(j)

    def prepare(self, index: int) -> None:
        """Before sample ``index`` (negative: warm-up and sizing): every set refilled from fresh seeds."""
        if index < 0:
            self.perturbation.draw(self.seeds.next())
            return
        shared = self.seeds.next()
        fresh_seeds = [self.seeds.next() for _ in range(self.n_sets)]
        self.inputs.refill(self.held.sets, fresh_seeds, shared)
        perturb_seed = self.seeds.next()
        self.perturbation.draw(perturb_seed)
        self.sample_seeds[index] = (fresh_seeds, shared, perturb_seed)

    def pick_calls(self, n: int) -> set[int]:
        """One unpredictable call per set (a repeat, when the set is called more than once)."""
        return {self.urandom.randrange(k, n, self.n_sets) for k in range(self.n_sets)}

    def pointers(self, out: Any) -> tuple:
        return tuple(t.data_ptr() for t in as_outputs(self.torch, out))

    def on_sample_done(self, index: int, kept: dict[int, Any], writers: dict[int, int], n_calls: int) -> None:
        """After the last sample, every set's picked call is kept; after a sampled earlier one, one of them."""
        if index != self.last and index not in self.sampled:
            return
        torch = self.torch
        sync_device(torch, self.device_kind)
        owners: dict[int, Any] = {}
        for j, out in kept.items():
            owners.setdefault(writers[j], out)
        chosen = sorted(owners) if index == self.last else [self.urandom.choice(sorted(owners))]
        fresh_seeds, shared, perturb_seed = self.sample_seeds[index]
        for call_index in chosen:
            k = call_index % self.n_sets
            self.outputs.append([t.detach().clone() for t in as_outputs(torch, owners[call_index])])
            item = {
                "set": k,
                "sample": index,
                "call": call_index,
                "n_calls": n_calls,
                "set_seed": fresh_seeds[k],
                "shared_seed": shared,
                "perturb_seed": perturb_seed if self.perturbation.flats else None,
            }
            if index == self.last:
                item["checksums"] = [checksum(torch, t) for t in self.held.layouts[k].guarded()]
            self.items.append(item)

    def poison(self, kept: list[Any] | None) -> None:
        if kept is not None:
            poison_tensors(self.torch, [as_outputs(self.torch, o) for o in kept], self.all_inputs)
        else:
            poison_memory(self.torch, self.out_sizes * 2, self.device)

    def measure(
        self,
        spec: dict[str, Any],
        cache: int,
        clocks: tuple[Callable[[], float], Callable[[], float], Callable[..., float]],
    ) -> dict[str, Any]:
        """The timer over these callbacks; a read-only pass over 2x L2 (cuda) flushes before each sample."""
        torch, device_kind = self.torch, self.device_kind
        perf_counter, monotonic, elapsed = clocks
        sweep = (
            torch.ones(int(CACHE_MULTIPLE * cache) // 4, dtype=torch.int32, device=self.device)
            if device_kind == "cuda"
            else None
        )

        def flush() -> None:
            """Evicts the refill's dirty lines and leaves clean ones."""
            if sweep is not None:
                sweep.sum()

        timing = measure(
            self.call,
            self.n_sets,
            overhead_call=self.overhead_call,
            torch=torch,
            device_kind=device_kind,
            resize=self.perturbation.resize,
            prepare=self.prepare,
            pick_calls=self.pick_calls,
            pointers=self.pointers,
            on_sample_done=self.on_sample_done,
            poison=self.poison,
            flush=flush,
            clock=perf_counter,
            wall=monotonic,
            elapsed_ms=elapsed,
            n_calls=spec.get("iters"),
        )
        sync_device(torch, device_kind)
        return timing
