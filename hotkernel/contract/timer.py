"""The timer: how a kernel's time per call is measured (one page; knobs in knobs.py and below, unit in the name).

``measure(call, ...)`` times ``call(j)``, the kernel on input set ``j % K`` with call ``j``'s perturbation:

1. warm-up (``warm_up``): one untimed call (compilation, autotuning, lazy init happen here), then eager loops
   of 1, 2, 4, ... calls until they cover WARMUP_KERNEL_MS or 3K calls have run; the last loop gives the eager
   estimate of one call;
2. sizing (``size_calls``): on CUDA a short graph of at most SIZING_CALLS_MAX calls is captured and replayed
   SIZING_REPLAYS times; its fastest replay per call sizes N so that one sample covers >= MIN_SAMPLE_KERNEL_MS
   of kernel time (on CPU the eager estimate sizes N). N follows the cost of a call (``calls_per_sample``):
   a call that covers the sample alone is one call per sample; fewer than K calls use the first N sets, each
   once (as cold as the whole rotation: no set is called twice in a sample); more than K are whole cycles;
3. the timed graph (``timed_graph``): N calls cycling through the sets, captured once (CUDA); when capture
   fails the same N calls run eagerly, flagged ``cuda-eager``;
4. overhead (``overhead_per_call``): the perturbation alone (N calls of it, same graph or loop) is timed
   OVERHEAD_REPLAYS times, the collector paused as in a sample, and its median per call is subtracted from every
   sample;
5. SAMPLES samples (``take_samples``); before each: outputs poisoned, every input refilled from fresh seeds and
   a fresh perturbation drawn (``prepare``), the L2 swept with a read (``flush``); then one replay (or loop)
   between two events, Python's cyclic garbage collector paused (``gc_paused``, as ``timeit`` does);
   sample = elapsed / N - overhead. CUDA eager: the larger of the events and the wall
   clock up to a device-wide synchronize (work left on other streams counts). CPU: ``clock`` around the loop.

Result: the median sample (ms per call). Enqueue and wall-clock totals come back for ``check_wall_clock``.
"""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
from collections.abc import Callable, Iterator
from typing import Any

from .knobs import (
    LAUNCH_BOUND_MS,
    MAX_CALLS_PER_SAMPLE,
    MIN_SAMPLE_KERNEL_MS,
    OVERHEAD_REPLAYS,
    SAMPLES,
    SIZING_CALLS_MAX,
    SIZING_REPLAYS,
)

# Warm-up: eager loops of 1, 2, 4, ... calls after the first call, until they cover this much kernel time (or
# 3K calls have run): a 30 ms call warms up in 2 calls, a 10 us kernel in 3K.
WARMUP_KERNEL_MS = 20.0


def calls_for(per_call_ms: float, n_sets: int, target_ms: float) -> int:
    """N: enough calls to cover ``target_ms``, a multiple of K, within [K, MAX_CALLS_PER_SAMPLE]."""
    n = math.ceil(target_ms / max(per_call_ms, 1e-6))
    n = min(max(n, n_sets), MAX_CALLS_PER_SAMPLE)
    return max(n_sets, math.ceil(n / n_sets) * n_sets)


def calls_per_sample(per_call_ms: float, n_sets: int, target_ms: float) -> int:
    """N that follows the cost of a call: ``calls_for`` when the sample needs K calls or more, else just enough
    calls to cover ``target_ms`` (at least 1), each on a set of its own."""
    needed = math.ceil(target_ms / max(per_call_ms, 1e-6))
    return max(1, needed) if needed < n_sets else calls_for(per_call_ms, n_sets, target_ms)


def normal_calls(n_calls: int, n_sets: int) -> int:
    """An asked-for N made valid: within [1, MAX_CALLS_PER_SAMPLE], whole cycles of the K sets above K."""
    n = min(max(int(n_calls), 1), MAX_CALLS_PER_SAMPLE)
    return n if n <= n_sets else math.ceil(n / n_sets) * n_sets


def capture_graph(
    torch: Any, call: Callable[[int], Any], n_calls: int, keep: set[int], pointers: Callable[[Any], tuple]
) -> tuple[Any, dict[int, Any], list[tuple]]:
    """One CUDA graph of ``n_calls`` calls; the outputs of the calls in ``keep`` and every call's pointers."""
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graphs recommends
        for j in range(min(n_calls, 2)):
            call(j)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    kept: dict[int, Any] = {}
    ptrs: list[tuple] = []
    with torch.cuda.graph(graph):
        for j in range(n_calls):
            out = call(j)
            ptrs.append(pointers(out))
            if j in keep:
                kept[j] = out
    torch.cuda.synchronize()
    return graph, kept, ptrs


def last_writers(kept: dict[int, Any], ptrs: list[tuple]) -> dict[int, int]:
    """For each kept call, the last call that returned the same buffers (whose result the buffers hold)."""
    last: dict[tuple, int] = {}
    for j, key in enumerate(ptrs):
        last[key] = j
    return {j: last[ptrs[j]] for j in kept}


class Clocks:
    """The timing primitives of one measure: eager loops and graph replays with their event, enqueue and wall
    times (ms)."""

    def __init__(
        self,
        torch: Any,
        cuda: bool,
        clock: Callable[[], float],
        wall: Callable[[], float],
        elapsed_ms: Callable[[Any, Any], float] | None,
        pointers: Callable[[Any], tuple],
    ) -> None:
        self.torch, self.cuda, self.clock, self.wall = torch, cuda, clock, wall
        self.elapsed_ms, self.pointers = elapsed_ms, pointers

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def loop_eager(self, fn: Callable[[int], Any], n: int, keep: set[int] | None) -> tuple[float, float, float, Any]:
        """``fn(0..n-1)`` eagerly: (timed, enqueue, wall) ms and (kept outputs, every call's pointers)."""
        torch, kept, ptrs = self.torch, {}, []
        self.sync()
        t0 = self.wall()
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        c0 = self.clock()
        for j in range(n):
            out = fn(j)
            if keep is not None:
                ptrs.append(self.pointers(out))
                if j in keep:
                    kept[j] = out
        c1 = self.clock()
        if self.cuda:
            end.record()
        t1 = self.wall()
        self.sync()
        t2 = self.wall()
        timed = max(self.elapsed_ms(start, end), (t2 - t0) * 1e3) if self.cuda else (c1 - c0) * 1e3
        return timed, (t1 - t0) * 1e3, (t2 - t0) * 1e3, (kept, ptrs)

    def replay(self, graph: Any) -> tuple[float, float, float]:
        """One replay of ``graph``: (event, enqueue, wall) ms."""
        torch = self.torch
        self.sync()
        t0 = self.wall()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        t1 = self.wall()
        self.sync()
        t2 = self.wall()
        return self.elapsed_ms(start, end), (t1 - t0) * 1e3, (t2 - t0) * 1e3


def warm_up(
    clocks: Clocks,
    call: Callable[[int], Any],
    n_sets: int,
    resize: Callable[[int], None],
    prepare: Callable[[int], None],
) -> tuple[float, int]:
    """Step 1: one untimed call, then loops of 1, 2, 4, ... calls (at most 2K each) until they cover
    WARMUP_KERNEL_MS or 3K calls have run. (eager ms per call of the last loop, calls made)."""
    resize(2 * n_sets)
    prepare(-1)
    call(0)
    calls, spent_ms, chunk, per_call = 1, 0.0, 1, 1e-6
    while calls < 3 * n_sets and spent_ms < WARMUP_KERNEL_MS:
        timed = clocks.loop_eager(call, chunk, None)[0]
        per_call, spent_ms, calls = max(timed / chunk, 1e-6), spent_ms + timed, calls + chunk
        chunk = min(2 * chunk, 2 * n_sets)
    return per_call, calls


def size_calls(
    clocks: Clocks,
    call: Callable[[int], Any],
    n_sets: int,
    eager_ms: float,
    min_sample_ms: float,
    resize: Callable[[int], None],
    prepare: Callable[[int], None],
) -> tuple[float, str]:
    """Step 2 on CUDA: (ms per call from the fastest replay of a short graph, "graph"); else the eager one."""
    torch = clocks.torch
    n_short = min(SIZING_CALLS_MAX, calls_per_sample(eager_ms, n_sets, min_sample_ms / 5))
    if n_short > n_sets:
        n_short = n_short // n_sets * n_sets
    estimate_ms, sized_by = eager_ms, "eager"
    with contextlib.suppress(Exception):  # a capture failure is seen (and flagged) at step 3
        resize(max(n_short, n_sets))  # the perturbation plan covers a whole cycle of the sets
        prepare(-1)
        short, _, _ = capture_graph(torch, call, n_short, set(), clocks.pointers)
        short.replay()
        best = min(clocks.replay(short)[0] for _ in range(SIZING_REPLAYS))
        estimate_ms, sized_by = max(best / n_short, 1e-6), "graph"
        del short
    with contextlib.suppress(Exception):
        torch.cuda.synchronize()
    return estimate_ms, sized_by


def timed_graph(
    clocks: Clocks, call: Callable[[int], Any], overhead_call: Callable[[int], Any], n_calls: int, keep: set[int]
) -> tuple[Any, dict[int, Any], list[tuple], float, str | None]:
    """Steps 3 and 4 on CUDA: (graph, kept outputs, pointers, overhead ms per call, capture error). On a capture
    failure the graph is None and the error says why (the samples then run eagerly)."""
    torch = clocks.torch
    try:
        graph, kept, ptrs = capture_graph(torch, call, n_calls, keep, clocks.pointers)
        graph.replay()  # the first replay uploads the graph: never timed
        alone, _, _ = capture_graph(torch, overhead_call, n_calls, set(), lambda _out: ())
        alone.replay()
        overhead_ms = overhead_per_call(lambda graph=alone: clocks.replay(graph)[0], n_calls)
        del alone
        return graph, kept, ptrs, overhead_ms, None
    except Exception as err:  # noqa: BLE001 - any capture failure means: time eagerly, flagged
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
        return None, {}, [], 0.0, f"{type(err).__name__}: {str(err)[:200]}"


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for one timed sample: a collection lands in whichever sample crosses
    its allocation threshold, and takes longer in the script with more live objects (one side, every round).
    Reference counting still frees; the collection the sample's garbage calls for runs after it, untimed."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def overhead_per_call(replay: Callable[[], float], n_calls: int) -> float:
    """Step 4: ms per call of the perturbation alone, the median of OVERHEAD_REPLAYS replays of its ``n_calls``
    calls, each timed as a sample is (collector paused: else a collection would count as overhead)."""
    totals = []
    for _ in range(OVERHEAD_REPLAYS):
        with gc_paused():
            totals.append(replay())
    return statistics.median(totals) / n_calls


def take_samples(
    clocks: Clocks,
    call: Callable[[int], Any],
    graph: Any,
    kept: dict[int, Any],
    ptrs: list[tuple],
    n_calls: int,
    samples: int,
    picks: Callable[[], set[int]],
    hooks: dict[str, Callable[..., Any]],
    planned: int,
) -> tuple[list[float], float, float, float]:
    """Step 5: (raw ms per call of every sample, event, enqueue and wall totals in ms). ``planned``: calls the
    perturbation plan holds (at least K); the calls past ``n_calls`` run untimed as perturbation-only calls, so
    the plan's last call restores every input (the judge regenerates call j's perturbation from that plan)."""
    raw: list[float] = []
    event_total = enqueue_total = wall_total = 0.0
    for index in range(samples):
        hooks["poison"](list(kept.values()) if graph is not None else None)
        hooks["prepare"](index)
        hooks["flush"]()
        if graph is not None:
            with gc_paused():
                timed, enqueue, total = clocks.replay(graph)
            outputs, writers = kept, last_writers(kept, ptrs)
        else:
            with gc_paused():
                timed, enqueue, total, (outputs, eager_ptrs) = clocks.loop_eager(call, n_calls, picks())
            writers = last_writers(outputs, eager_ptrs)
        for j in range(n_calls, planned):
            hooks["overhead_call"](j)
        raw.append(timed / n_calls)
        event_total, enqueue_total, wall_total = event_total + timed, enqueue_total + enqueue, wall_total + total
        hooks["on_sample_done"](index, outputs, writers, planned)
        del outputs
    return raw, event_total, enqueue_total, wall_total


def measure(
    call: Callable[[int], Any],
    n_sets: int,
    *,
    overhead_call: Callable[[int], Any],
    torch: Any,
    device_kind: str,
    resize: Callable[[int], None],
    prepare: Callable[[int], None],
    pick_calls: Callable[[int], set[int]],
    pointers: Callable[[Any], tuple],
    on_sample_done: Callable[[int, dict[int, Any], dict[int, int], int], None],
    poison: Callable[[list[Any] | None], None],
    flush: Callable[[], None],
    clock: Callable[[], float],
    wall: Callable[[], float],
    elapsed_ms: Callable[[Any, Any], float] | None = None,
    samples: int = SAMPLES,
    min_sample_ms: float = MIN_SAMPLE_KERNEL_MS,
    n_calls: int | None = None,
) -> dict[str, Any]:
    """Time ``call(j)``: per-call ms, the median of ``samples`` samples (see the module docstring)."""
    cuda = device_kind == "cuda"
    clocks = Clocks(torch, cuda, clock, wall, elapsed_ms, pointers)
    eager_ms, warmup_calls = warm_up(clocks, call, n_sets, resize, prepare)
    estimate_ms, sized_by = eager_ms, "eager"
    if cuda and n_calls is None:
        estimate_ms, sized_by = size_calls(clocks, call, n_sets, eager_ms, min_sample_ms, resize, prepare)
    n_calls = normal_calls(calls_per_sample(estimate_ms, n_sets, min_sample_ms) if n_calls is None else n_calls, n_sets)
    planned = max(n_calls, n_sets)  # the perturbation plan covers a whole cycle of the sets
    resize(planned)
    prepare(-1)

    def picks() -> set[int]:  # fewer calls than sets: every call is judged (each is the only call of its set)
        return pick_calls(n_calls) if n_calls >= n_sets else set(range(n_calls))

    graph, kept, ptrs, timer, capture_error, overhead_ms = None, {}, [], "cpu-perf-counter", None, 0.0
    if cuda:
        graph, kept, ptrs, overhead_ms, capture_error = timed_graph(clocks, call, overhead_call, n_calls, picks())
        timer = "cuda-graph" if graph is not None else "cuda-eager"
    if graph is None:
        overhead_ms = overhead_per_call(lambda: clocks.loop_eager(overhead_call, n_calls, None)[0], n_calls)
    hooks = {
        "poison": poison,
        "prepare": prepare,
        "flush": flush,
        "on_sample_done": on_sample_done,
        "overhead_call": overhead_call,
    }
    raw, event_total, enqueue_total, wall_total = take_samples(
        clocks, call, graph, kept, ptrs, n_calls, samples, picks, hooks, planned
    )
    times = [t - overhead_ms for t in raw]
    ms = statistics.median(times)
    if ms <= 0:  # the overhead estimate was noisier than the kernel: report the raw time, flagged
        times, ms, overhead_ms = raw, statistics.median(raw), 0.0
    return {
        "ms": ms,
        "samples_ms": times,
        "n_calls": n_calls,
        "sets_per_sample": min(n_calls, n_sets),
        "warmup_calls": warmup_calls,
        "timer": timer,
        "estimate_ms": estimate_ms,
        "eager_estimate_ms": eager_ms,
        "sized_by": sized_by,
        "overhead_ms": overhead_ms,
        "capture_error": capture_error,
        "launch_bound": ms < LAUNCH_BOUND_MS,
        "event_total_ms": event_total,
        "enqueue_total_ms": enqueue_total,
        "wall_total_ms": wall_total,
        "samples": samples,
    }
