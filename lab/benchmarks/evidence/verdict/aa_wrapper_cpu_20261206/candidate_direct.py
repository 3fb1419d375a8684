"""Candidate for target 'scale': the one file the optimisation loop edits.

Define ``kernel(x, w)`` returning what the baseline (./kern.py:scale_add) returns: same
shapes, same dtypes, values within atol=0.0001 / rtol=0.0001 of the reference.
Parameters, in call order:
  x: fp32 tensor, 32x64 at the headline shape, on cpu
  w: fp32 tensor, 64 at the headline shape, on cpu

``python targets/scale/candidate.py`` times it and checks it (one JSON line); ``hotkernel verify``
compares it with the baseline. hotkernel refreshes this file only while it is untouched (the last
line says so); once you edit it, hotkernel never overwrites it.
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

_baseline_kernel = hk_contract.load_function("./kern.py:scale_add", os.path.dirname(_TARGETS_DIR))


kernel = _baseline_kernel


if __name__ == "__main__":
    hk_contract.main(__file__)
