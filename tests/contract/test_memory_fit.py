"""``fits_memory`` counts what it knows and waits for what still holds memory: a refusal made while the previous
run's killed processes are exiting waits for them and reads the free memory again; one that stands names the
numbers. The placement pad is never counted as usable and yields to a shape that needs it. ``kill_processes``
waits through ``wait_exited`` and reaps its children."""

from __future__ import annotations

import os
import random
import subprocess
import weakref
from types import SimpleNamespace

import pytest

from hotkernel.run import render

hk = render.contract_module()
GIB = 1 << 30


def killed_child() -> tuple[subprocess.Popen, tuple[int, int | None]]:
    """A child killed just now, not reaped yet (a zombie: it has exited), with its start ticks."""
    child = subprocess.Popen(["sleep", "30"])
    process = (child.pid, hk.start_ticks(child.pid))
    child.kill()
    return child, process


def test_a_refusal_without_a_previous_run_stands_with_the_numbers() -> None:
    reads = []
    with pytest.raises(hk.CheckFailed) as failed:
        hk.fitted_rotation(
            (40 * GIB, 0, 40 * GIB), 2, 100 * GIB, lambda: reads.append(1) or 10**15, [], "cuda", "4096x4096"
        )
    assert failed.value.check == "fits_memory"
    assert "shape 4096x4096: the run needs" in str(failed.value) and "100.00 GiB are free" in str(failed.value)
    assert reads == []  # nothing to wait for: the memory is not read again


def test_a_refusal_while_the_previous_run_exits_waits_and_reads_again() -> None:
    child, process = killed_child()
    try:
        reads = []

        def read_free() -> int:
            reads.append(hk.exited(*process))  # read only once the killed process has exited
            return 1000 * GIB

        n_sets, free = hk.fitted_rotation((40 * GIB, 0, 40 * GIB), 2, 100 * GIB, read_free, [process], "cuda", "s")
        assert (n_sets, free) == (2, 1000 * GIB)
        assert reads == [True]
    finally:
        child.wait()


def test_a_fit_needs_no_wait_and_no_second_reading() -> None:
    child = subprocess.Popen(["sleep", "30"])  # alive: waiting for it would take KILL_WAIT_S
    try:
        process = (child.pid, hk.start_ticks(child.pid))
        assert hk.fitted_rotation(
            (GIB, 0, GIB), 4, 100 * GIB, lambda: pytest.fail("read again"), [process], "cuda", "s"
        ) == (4, 100 * GIB)
    finally:
        child.kill()
        child.wait()


def test_a_previous_run_that_outlives_the_wait_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    child = subprocess.Popen(["sleep", "30"])
    monkeypatch.setattr(hk, "KILL_WAIT_S", 0.2)
    try:
        process = (child.pid, hk.start_ticks(child.pid))
        with pytest.raises(hk.CheckFailed) as failed:
            hk.fitted_rotation((40 * GIB, 0, 40 * GIB), 2, 100 * GIB, lambda: 1000 * GIB, [process], "cuda", "s")
        assert failed.value.check == "previous_run_exited"
        assert str(child.pid) in str(failed.value)
    finally:
        child.kill()
        child.wait()


def test_the_host_reading_adds_back_what_the_run_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hk, "host_available_bytes", lambda: 5 * GIB)
    assert hk.free_bytes(None, "cpu") == 5 * GIB
    assert hk.free_bytes(None, "cpu", 2 * GIB) == 7 * GIB


def test_kill_processes_kills_waits_and_reaps_its_children() -> None:
    children = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    hk.kill_processes({child.pid for child in children})
    for child in children:
        assert not os.path.exists(f"/proc/{child.pid}")  # reaped: no zombie left behind
        with pytest.raises(ChildProcessError):
            os.waitpid(child.pid, os.WNOHANG)


def test_kill_processes_tolerates_a_process_already_gone() -> None:
    child, _ = killed_child()
    child.wait()
    hk.kill_processes({child.pid})  # neither raises nor waits KILL_WAIT_S for a pid that is gone


@pytest.mark.parametrize("outcome", ["reply", "check_failed", "crash"])
def test_the_judge_gives_memory_back_once_the_jobs_tensors_are_gone(
    monkeypatch: pytest.MonkeyPatch, outcome: str
) -> None:
    """The reference and regenerated inputs live in ``judge_job``'s frame (and a failure's traceback): the release
    must come after them, or the next run's worker finds them counted against the card."""
    torch = pytest.importorskip("torch")

    alive: list[weakref.ref] = []

    def job(state: object, _job: dict) -> dict:
        reference = torch.ones(1024, dtype=torch.float64)
        alive.append(weakref.ref(reference))
        if outcome == "check_failed":
            raise hk.CheckFailed("outputs_match_reference", "differs")
        if outcome == "crash":
            raise RuntimeError("boom")
        return {"status": "ok", "reason": None, "checks": []}

    released = []
    monkeypatch.setattr(hk, "judge_job", job)
    monkeypatch.setattr(hk, "release_device_memory", lambda _torch: released.append(alive[0]() is None))
    reply = hk.answer_job(hk.JudgeState(torch), {})
    assert released == [True]
    assert reply["status"] == {"reply": "ok", "check_failed": "incorrect", "crash": "invalid"}[outcome]


class FakeCard:
    """torch as the worker's memory code sees it: ``mem_get_info`` and ``memory_reserved`` move with what
    ``torch.empty`` takes (a fresh allocator: every block it reserves is in use)."""

    uint8 = "uint8"

    def __init__(self, free: int) -> None:
        self.free, self.reserved, self.allocations = free, 0, []
        self.cuda = SimpleNamespace(mem_get_info=lambda: (self.free, 141 * GIB), memory_reserved=lambda: self.reserved)

    def empty(self, size: int, dtype: str, device: str) -> object:
        self.allocations.append((size, dtype, device))
        self.free -= size
        self.reserved += size
        return object()


def test_the_placement_pad_is_stepped_bounded_and_a_function_of_its_draw() -> None:
    step, top = hk.PLACEMENT_PAD_STEP_BYTES, hk.PLACEMENT_PAD_MAX_BYTES
    rng = random.Random(7)
    draws = [rng.getrandbits(64) for _ in range(3000)]
    sizes = [hk.placement_pad_bytes(draw, 100 * GIB) for draw in draws]
    assert all(size % step == 0 and 0 <= size <= top for size in sizes)
    assert len(set(sizes)) > 400  # 513 sizes from 0 to 1 GiB: 3000 draws hit most of them
    assert sizes == [hk.placement_pad_bytes(draw, 100 * GIB) for draw in draws]  # the same draw, the same pad
    assert hk.placement_pad_bytes(0, 100 * GIB) == 0
    assert hk.placement_pad_bytes(top // step, 100 * GIB) == top
    assert max(hk.placement_pad_bytes(draw, 4 * GIB) for draw in draws) == 4 * GIB // hk.PLACEMENT_PAD_FREE_SHARE
    assert {hk.placement_pad_bytes(draw, free) for draw in draws[:50] for free in (0, -GIB, step)} == {0}


def test_a_cuda_worker_holds_its_pad_and_never_counts_it_as_free(monkeypatch: pytest.MonkeyPatch) -> None:
    card = FakeCard(100 * GIB)
    pad = hk.PlacementPad()
    monkeypatch.setattr(hk, "placement_pad", pad)
    before = hk.free_bytes(card, "cuda")
    size = pad.allocate(card, 300, before)
    assert size == 300 * hk.PLACEMENT_PAD_STEP_BYTES and pad.block is not None
    assert card.allocations == [(size, "uint8", "cuda")]
    assert card.reserved == size and hk.free_bytes(card, "cuda") == before - size  # reserved, yet not usable
    pad.release()
    assert pad.block is None and hk.free_bytes(card, "cuda") == before  # back in the allocator: usable again
    assert pad.allocate(card, 0, before) == 0 and pad.block is None and len(card.allocations) == 1


def test_a_shape_that_fits_only_without_the_pad_gets_its_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    needed = (2 * 40 + 3 * 40) * GIB + hk.DEVICE_HEADROOM_BYTES  # K=2 sets of 40 GiB and the judge's 3 copies
    card = FakeCard(needed + GIB // 2)
    pad = hk.PlacementPad()
    monkeypatch.setattr(hk, "placement_pad", pad)
    pad.allocate(card, 512, hk.free_bytes(card, "cuda"))  # a 1 GiB pad leaves 512 MiB too little
    assert pad.bytes == GIB
    n_sets, free = hk.fitted_rotation(
        (40 * GIB, 0, 0), 2, hk.free_bytes(card, "cuda"), lambda: hk.free_bytes(card, "cuda"), [], "cuda", "s"
    )
    assert n_sets == 2 and pad.bytes == 0 and pad.block is None
    assert free == needed + GIB // 2


def test_a_shape_that_fits_beside_the_pad_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    card = FakeCard(100 * GIB)
    pad = hk.PlacementPad()
    monkeypatch.setattr(hk, "placement_pad", pad)
    pad.allocate(card, 100, hk.free_bytes(card, "cuda"))
    assert hk.fitted_rotation(
        (GIB, 0, GIB), 4, hk.free_bytes(card, "cuda"), lambda: pytest.fail("read again"), [], "cuda", "s"
    ) == (4, 100 * GIB - pad.bytes)
    assert pad.bytes == 100 * hk.PLACEMENT_PAD_STEP_BYTES
