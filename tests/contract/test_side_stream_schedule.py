"""The timed graph's schedule with the perturbation beside the kernels (``side_stream_schedule``).

CUDA runs the two streams concurrently, bound only by the events, so the schedule must be right in every
interleaving the events allow. The simulation executes it in many such interleavings and checks what each
kernel saw: its set with exactly its own perturbation, and every set restored at the end.
"""

from __future__ import annotations

import random

import pytest

from hotkernel.contract.timer import side_stream_schedule


def run_interleaved(steps: list[tuple[str, str, int]], n_sets: int, rng: random.Random) -> dict:
    """Execute ``steps`` as two streams in one random interleaving the events allow; return what each kernel
    saw (the perturbations present in its set) and what every set holds at the end."""
    queues = {name: [s for s in steps if s[0] == name] for name in ("main", "side")}
    recorded: set[tuple[str, int]] = set()
    applied: dict[int, set[int]] = {k: set() for k in range(n_sets)}
    seen: dict[int, set[int]] = {}
    while queues["main"] or queues["side"]:
        runnable = []
        for name, queue in queues.items():
            if not queue:
                continue
            _, step, j = queue[0]
            blocked = (step == "wait_done" and ("done", j) not in recorded) or (
                step == "wait_ready" and ("ready", j) not in recorded)
            if not blocked:
                runnable.append(name)
        assert runnable, "deadlock: both streams wait on an event never recorded"
        _, step, j = queues[name := rng.choice(runnable)].pop(0)
        if step == "perturb":
            applied[j % n_sets].add(j)
        elif step == "restore":
            applied[j % n_sets].discard(j)
        elif step == "kernel":
            seen[j] = set(applied[j % n_sets])
        elif step in ("ready", "done"):
            recorded.add((step, j))
    return {"seen": seen, "final": applied}


@pytest.mark.parametrize(("n_calls", "n_sets"), [(2, 2), (7, 2), (12, 3), (64, 2), (9, 9), (5, 1)])
def test_every_kernel_sees_its_own_perturbation_alone_in_every_interleaving(n_calls: int, n_sets: int) -> None:
    steps = side_stream_schedule(n_calls, n_sets)
    rng = random.Random(n_calls * 100 + n_sets)
    for _ in range(200):
        outcome = run_interleaved(steps, n_sets, rng)
        assert outcome["seen"] == {j: {j} for j in range(n_calls)}
        assert all(not left for left in outcome["final"].values())


def test_the_kernels_keep_their_order_on_one_stream() -> None:
    main = [(step, j) for stream, step, j in side_stream_schedule(10, 2) if stream == "main" and step == "kernel"]
    assert main == [("kernel", j) for j in range(10)]


def test_a_schedule_without_its_waits_is_caught() -> None:
    """The simulation can fail: with the side stream's waits removed, some interleaving lets a perturbation
    land while an earlier call still reads the set."""
    broken = [s for s in side_stream_schedule(8, 2) if s[1] != "wait_done"]
    rng = random.Random(1)
    outcomes = [run_interleaved(broken, 2, rng) for _ in range(200)]
    assert any(o["seen"] != {j: {j} for j in range(8)} for o in outcomes)
