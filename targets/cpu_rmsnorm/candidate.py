"""Candidate for target 'cpu_rmsnorm': the one file the optimisation loop edits.

Define ``kernel(x, w, *, eps)`` returning what the baseline (./kernels/rmsnorm.py:rms_norm) returns: same
shapes, same dtypes, values within atol=0.0001 / rtol=0.0001 of the reference.
Parameters, in call order:
  x: fp32 tensor, 256x1024 at the headline shape, on cpu
  w: fp32 tensor, 1024 at the headline shape, on cpu
The manifest's kwargs come as keyword arguments.

``python targets/cpu_rmsnorm/candidate.py`` times it and checks it (one JSON line); ``hotkernel verify``
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

_baseline_kernel = hk_contract.load_function("./kernels/rmsnorm.py:rms_norm", os.path.dirname(_TARGETS_DIR))


# Start here: replace the line below with your kernel, with this signature:
#
#     def kernel(x, w, *, eps):
#         return _baseline_kernel(x, w, eps=eps)
#
# Untouched, ``kernel`` is the baseline's function itself rather than a wrapper that calls it: a wrapper's extra
# Python call (measured at 0.02-0.06 us) makes a kernel of a few microseconds measurably slower, and the untouched candidate's
# verify must be an exact A/A (the same code on both sides).
kernel = _baseline_kernel


if __name__ == "__main__":
    hk_contract.main(__file__)
# hotkernel: untouched generated candidate fd7be7913485cbe524da1080aa6ed4fa4515c197b932b0f22542f68e3ccbb413
