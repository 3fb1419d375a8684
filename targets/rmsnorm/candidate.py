"""Candidate for target 'rmsnorm': the one file the optimisation loop edits.

Define ``kernel(x, w, *, eps)`` returning what the baseline (./kernels/rmsnorm.py:rms_norm) returns: same
shapes, same dtypes, values within atol=0.02 / rtol=0.02 of the reference. Inputs are bf16
tensors on cuda, in call order; the manifest's kwargs come as keyword arguments.

``python targets/rmsnorm/candidate.py`` times it and checks it (one JSON line); ``hotkernel verify``
compares it with the baseline. hotkernel created this file once and never overwrites it.
"""

import os
import sys

import torch  # noqa: F401

# Who wrote this candidate: `hotkernel sync` records it with every result. Keep it honest when you edit the
# kernel (a person, or an agent and its model).
WHO = "hotkernel (generated: the untouched candidate calls the baseline)"

_TARGETS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _TARGETS_DIR not in sys.path:
    sys.path.insert(0, _TARGETS_DIR)

import hk_contract  # noqa: E402  (the vendored contract)

_baseline_kernel = hk_contract.load_function("./kernels/rmsnorm.py:rms_norm", os.path.dirname(_TARGETS_DIR))


def kernel(x, w, *, eps):
    """Start here: this body just calls the baseline, so an untouched candidate is honest and equal."""
    return _baseline_kernel(x, w, eps=eps)


if __name__ == "__main__":
    hk_contract.main(__file__)
