"""The timer: how a kernel's time per call is measured (one page; every knob is in knobs.py, unit in its name).

``measure(call, ...)`` times ``call(j)``, the kernel on input set ``j % K`` with call ``j``'s perturbation:

1. warm-up: 2K eager calls (compilation, autotuning, lazy init happen here, untimed);
2. sizing: on CUDA a short graph of at most SIZING_CALLS_MAX calls is captured and replayed SIZING_REPLAYS
   times; its fastest replay per call sizes N so that one sample covers >= MIN_SAMPLE_KERNEL_MS of kernel
   time (the eager estimate is only used to bound the short graph; on CPU the eager loop sizes N);
3. the timed graph: N calls cycling through the K sets, captured once (CUDA); when capture fails the same N
   calls run eagerly, flagged ``cuda-eager``;
4. overhead: the perturbation alone (N calls of it, same graph or loop) is timed OVERHEAD_REPLAYS times and
   its median per call is subtracted from every sample;
5. SAMPLES samples; before each: outputs poisoned, every input refilled from fresh seeds and a fresh
   perturbation drawn (``prepare``), the L2 swept with a read (``flush``); then one replay (or loop) between
   two events; sample = elapsed / N - overhead. CUDA eager: the larger of the events and the wall clock up to
   a device-wide synchronize (work left on other streams counts). CPU: ``clock`` around the loop.

Result: the median sample (ms per call). Enqueue and wall-clock totals come back for ``check_wall_clock``.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Callable
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


def calls_for(per_call_ms: float, n_sets: int, target_ms: float) -> int:
    """N: enough calls to cover ``target_ms``, a multiple of K, within [K, MAX_CALLS_PER_SAMPLE]."""
    n = math.ceil(target_ms / max(per_call_ms, 1e-6))
    n = min(max(n, n_sets), MAX_CALLS_PER_SAMPLE)
    return max(n_sets, math.ceil(n / n_sets) * n_sets)


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

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def loop_eager(fn: Callable[[int], Any], n: int, keep: set[int] | None) -> tuple[float, float, float, Any]:
        kept: dict[int, Any] = {}
        ptrs: list[tuple] = []
        sync()
        t0 = wall()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        c0 = clock()
        for j in range(n):
            out = fn(j)
            if keep is not None:
                ptrs.append(pointers(out))
                if j in keep:
                    kept[j] = out
        c1 = clock()
        if cuda:
            end.record()
        t1 = wall()
        sync()
        t2 = wall()
        timed = max(elapsed_ms(start, end), (t2 - t0) * 1e3) if cuda else (c1 - c0) * 1e3
        return timed, (t1 - t0) * 1e3, (t2 - t0) * 1e3, (kept, ptrs)

    def replay(graph: Any) -> tuple[float, float, float]:
        sync()
        t0 = wall()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        t1 = wall()
        sync()
        t2 = wall()
        return elapsed_ms(start, end), (t1 - t0) * 1e3, (t2 - t0) * 1e3

    # 1. warm-up (eager, untimed) and a first eager estimate.
    resize(2 * n_sets)
    prepare(-1)
    for j in range(2 * n_sets):
        call(j)
    eager_ms = max(loop_eager(call, n_sets, None)[0] / n_sets, 1e-6)
    estimate_ms, sized_by = eager_ms, "eager"
    # 2. sizing from a short graph replay (CUDA).
    if cuda and n_calls is None:
        n_short = min(SIZING_CALLS_MAX, calls_for(eager_ms, n_sets, min_sample_ms / 5))
        n_short = max(n_sets, n_short // n_sets * n_sets)
        with contextlib.suppress(Exception):  # a capture failure is seen (and flagged) at step 3
            resize(n_short)
            prepare(-1)
            short, _, _ = capture_graph(torch, call, n_short, set(), pointers)
            short.replay()
            best = min(replay(short)[0] for _ in range(SIZING_REPLAYS))
            estimate_ms, sized_by = max(best / n_short, 1e-6), "graph"
            del short
        with contextlib.suppress(Exception):
            torch.cuda.synchronize()
    if n_calls is None:
        n_calls = calls_for(estimate_ms, n_sets, min_sample_ms)
    n_calls = max(n_sets, math.ceil(min(max(int(n_calls), n_sets), MAX_CALLS_PER_SAMPLE) / n_sets) * n_sets)
    resize(n_calls)
    prepare(-1)

    # 3. the timed graph, 4. the perturbation overhead.
    graph, kept, ptrs, timer, capture_error = None, {}, [], "cpu-perf-counter", None
    overhead_ms = 0.0
    if cuda:
        timer = "cuda-graph"
        try:
            graph, kept, ptrs = capture_graph(torch, call, n_calls, pick_calls(n_calls), pointers)
            graph.replay()  # the first replay uploads the graph: never timed
            alone, _, _ = capture_graph(torch, overhead_call, n_calls, set(), lambda _out: ())
            alone.replay()
            overhead_ms = statistics.median(replay(alone)[0] for _ in range(OVERHEAD_REPLAYS)) / n_calls
            del alone
        except Exception as err:  # noqa: BLE001 - any capture failure means: time eagerly, flagged
            capture_error = f"{type(err).__name__}: {str(err)[:200]}"
            graph, kept, ptrs, timer = None, {}, [], "cuda-eager"
            with contextlib.suppress(Exception):
                torch.cuda.synchronize()
    if graph is None:
        overhead_ms = statistics.median(
            loop_eager(overhead_call, n_calls, None)[0] for _ in range(OVERHEAD_REPLAYS)
        ) / n_calls

    # 5. the samples.
    raw: list[float] = []
    event_total = enqueue_total = wall_total = 0.0
    for index in range(samples):
        if graph is not None:
            poison(list(kept.values()))
            prepare(index)
            flush()
            timed, enqueue, total = replay(graph)
            outputs, writers = kept, last_writers(kept, ptrs)
        else:
            poison(None)
            prepare(index)
            flush()
            timed, enqueue, total, (outputs, eager_ptrs) = loop_eager(call, n_calls, pick_calls(n_calls))
            writers = last_writers(outputs, eager_ptrs)
        raw.append(timed / n_calls)
        event_total += timed
        enqueue_total += enqueue
        wall_total += total
        on_sample_done(index, outputs, writers, n_calls)
        del outputs
    times = [t - overhead_ms for t in raw]
    ms = statistics.median(times)
    if ms <= 0:  # the overhead estimate was noisier than the kernel: report the raw time, flagged
        times, ms, overhead_ms = raw, statistics.median(raw), 0.0
    return {
        "ms": ms,
        "samples_ms": times,
        "n_calls": n_calls,
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
