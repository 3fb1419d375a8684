"""The per-call perturbation when the timer makes fewer calls than there are input sets (one long call)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hotkernel.contract.inputs import Perturbation, bits_view, gather_per_set  # noqa: E402


def sets(k: int, n: int) -> list:
    return [torch.arange(n, dtype=torch.float32) + 100 * s for s in range(k)]


@pytest.mark.parametrize("calls", [0, 1, 2, 3, 5, 7])
def test_gather_per_set_reads_set_j_mod_k_for_any_number_of_calls(calls: int) -> None:
    flats = sets(3, 10)
    index = torch.arange(calls, dtype=torch.int64) % 10
    got = gather_per_set(torch, flats, index)
    want = [float(flats[j % 3][int(index[j])]) for j in range(calls)]
    assert got.tolist() == want


@pytest.mark.parametrize(("calls", "own_elements"), [(1, False), (2, False), (2, True), (6, False)])
def test_a_sample_of_fewer_calls_than_sets_perturbs_then_restores(calls: int, own_elements: bool) -> None:
    leaves = sets(4, 64)
    pristine = [t.clone() for t in leaves]
    perturbation = Perturbation(torch, leaves, own_elements, "cpu")
    perturbation.resize(calls)
    perturbation.draw(seed=1234)
    seen = []
    for j in range(calls):
        perturbation.perturb(j, j % 4)
        seen.append(not torch.equal(leaves[j % 4], pristine[j % 4]))
        perturbation.settle(j)
    assert all(torch.equal(bits_view(torch, a), bits_view(torch, b)) for a, b in zip(leaves, pristine, strict=True))
    if not own_elements:  # a fresh value is never the element it replaces (own elements may coincide)
        assert all(seen)
