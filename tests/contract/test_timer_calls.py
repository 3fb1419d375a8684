"""The timer's calls per sample follow the cost of a call (CPU path, a clock that advances per call)."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from hotkernel.contract.knobs import MIN_SAMPLE_KERNEL_MS, OVERHEAD_REPLAYS, SAMPLES
from hotkernel.contract.timer import calls_for, calls_per_sample, measure, normal_calls


def test_calls_per_sample_follows_the_cost_of_a_call() -> None:
    assert calls_per_sample(30.0, 16, 10.0) == 1  # one 30 ms call covers a 10 ms sample alone
    assert calls_per_sample(4.0, 16, 10.0) == 3  # three sets, each called once
    assert calls_per_sample(0.5, 16, 10.0) == 32 == calls_for(0.5, 16, 10.0)  # 20 > K calls: whole cycles
    assert calls_per_sample(0.017, 4, 10.0) == calls_for(0.017, 4, 10.0) == 592
    assert [normal_calls(n, 4) for n in (0, 1, 3, 4, 5, 9)] == [1, 1, 3, 4, 8, 12]


class FakeKernel:
    """A kernel of ``ms`` per call on a clock that only moves when it runs; counts calls and the sets used."""

    def __init__(self, ms: float, n_sets: int) -> None:
        self.ms, self.n_sets, self.now, self.calls = ms, n_sets, 0.0, 0
        self.sets_by_sample: list[set[int]] = []
        self.picks: list[int] = []

    def call(self, j: int) -> tuple[int]:
        self.now += self.ms / 1e3
        self.calls += 1
        if self.sets_by_sample:
            self.sets_by_sample[-1].add(j % self.n_sets)
        return (j % self.n_sets,)

    def overhead(self, j: int) -> None:
        """The perturbation alone: free on this clock."""

    def pick_calls(self, n: int) -> set[int]:
        assert n >= self.n_sets, "the worker's pick_calls needs at least K calls"
        self.picks.append(n)
        return {k for k in range(self.n_sets)}

    def run(self) -> dict[str, Any]:
        def prepare(index: int) -> None:
            if index >= 0:
                self.sets_by_sample.append(set())

        return measure(
            self.call,
            self.n_sets,
            overhead_call=self.overhead,
            torch=None,
            device_kind="cpu",
            resize=lambda n: None,
            prepare=prepare,
            pick_calls=self.pick_calls,
            pointers=lambda out: out,
            on_sample_done=lambda index, kept, writers, n: None,
            poison=lambda kept: None,
            flush=lambda: None,
            clock=lambda: self.now,
            wall=lambda: self.now,
        )


def test_a_long_call_is_one_call_per_sample() -> None:
    kernel = FakeKernel(ms=30.0, n_sets=16)
    timing = kernel.run()
    assert timing["n_calls"] == 1 and timing["sets_per_sample"] == 1
    assert timing["warmup_calls"] == 2  # the untimed first call and one loop of 30 ms
    assert timing["ms"] == pytest.approx(30.0) and kernel.picks == []
    assert kernel.calls == 2 + SAMPLES  # no rotation cycle: 17 calls instead of 3 * 16 + 15 * 16
    assert all(len(sets) == 1 for sets in kernel.sets_by_sample)


def test_a_medium_call_uses_a_set_per_call() -> None:
    kernel = FakeKernel(ms=4.0, n_sets=16)
    timing = kernel.run()
    assert timing["n_calls"] == 3 and timing["ms"] == pytest.approx(4.0)
    assert all(sets == {0, 1, 2} for sets in kernel.sets_by_sample)  # three calls, three sets, none twice


def test_a_short_call_cycles_through_every_set() -> None:
    kernel = FakeKernel(ms=0.01, n_sets=4)
    timing = kernel.run()
    assert timing["n_calls"] % 4 == 0 and timing["n_calls"] * 0.01 >= MIN_SAMPLE_KERNEL_MS
    assert kernel.picks == [timing["n_calls"]] * SAMPLES
    assert all(sets == {0, 1, 2, 3} for sets in kernel.sets_by_sample)
    assert timing["warmup_calls"] >= 3 * 4


def test_the_garbage_collector_is_paused_while_a_sample_is_timed_and_only_then() -> None:
    """A collection would land in whichever sample crossed its threshold: every timed call runs with it off, and
    so does every call of the overhead replays (else a collection would count as overhead and be subtracted from
    every sample); the warm-up runs with it on, and it is on again after the samples."""

    class GcWatchingKernel(FakeKernel):
        def __init__(self) -> None:
            super().__init__(ms=4.0, n_sets=16)
            self.enabled: dict[str, list[bool]] = {"warm-up": [], "timed": [], "overhead": []}

        def call(self, j: int) -> tuple[int]:
            self.enabled["timed" if self.sets_by_sample else "warm-up"].append(gc.isenabled())
            return super().call(j)

        def overhead(self, j: int) -> None:
            if not self.sets_by_sample:  # the replays before the samples (later ones restore inputs, untimed)
                self.enabled["overhead"].append(gc.isenabled())

    kernel = GcWatchingKernel()
    timing = kernel.run()
    assert len(kernel.enabled["timed"]) == timing["n_calls"] * SAMPLES and not any(kernel.enabled["timed"])
    assert len(kernel.enabled["overhead"]) == timing["n_calls"] * OVERHEAD_REPLAYS
    assert not any(kernel.enabled["overhead"])
    assert kernel.enabled["warm-up"] and all(kernel.enabled["warm-up"])
    assert gc.isenabled()
