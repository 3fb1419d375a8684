"""A cpu target's thread count is pinned for its run and given back after it: the judge is persistent, so a target
without the key (or a cuda target) after a pinned one runs with torch's own count, not the last target's."""

from __future__ import annotations

import pytest

from hotkernel.contract import spec as spec_module


class FakeTorch:
    def __init__(self, threads: int) -> None:
        self.threads = threads

    def get_num_threads(self) -> int:
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.threads = n


@pytest.fixture(autouse=True)
def fresh_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spec_module, "DEFAULT_THREADS", [])


def test_a_pinned_count_is_given_back_to_the_next_target() -> None:
    torch = FakeTorch(8)
    assert spec_module.apply_threads(torch, {"device": "cpu", "threads": 1}) == 1
    assert spec_module.apply_threads(torch, {"device": "cpu"}) == 8
    assert spec_module.apply_threads(torch, {"device": "cpu", "threads": 3}) == 3
    assert spec_module.apply_threads(torch, {"device": "cuda"}) is None
    assert torch.threads == 8


def test_the_default_is_read_before_any_pin() -> None:
    torch = FakeTorch(4)
    spec_module.apply_threads(torch, {"device": "cpu", "threads": 2})
    assert spec_module.DEFAULT_THREADS == [4]
