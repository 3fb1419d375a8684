"""What the judge's per-output work costs on this machine's CPU, and what a run's `import torch` costs.

Usage: python lab/benchmarks/judge_costs_cpu.py   (torch in this interpreter; nothing else running)

Prints, best of 3 each:
* the contract's checksum of 2^27 fp32 elements, now and as it was before 7ec4e51 (the same sums; then a
  float64 copy, an int64 weights arange and their product per chunk, now column sums of 251-wide rows);
* the contract's correctness statistics of one 2^26-element fp32 output against its fp64 reference;
* the wall time of `python -c "import torch"` in a fresh process (what every worker and judge start pays).
"""

from __future__ import annotations

import subprocess
import sys
import time

import torch

from hotkernel.contract.correctness import correctness_statistics
from hotkernel.contract.inputs import checksum


def best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def before(tensor: torch.Tensor, chunk: int = 1 << 26) -> list[float]:
    """The contract's checksum before 7ec4e51, verbatim: per chunk a float64 copy, its weights built from an
    int64 arange, and their full-size product."""
    flat = tensor.detach().reshape(-1)
    plain = weighted = 0.0
    for start in range(0, flat.numel(), chunk):
        part = flat[start : start + chunk].to(torch.float64)
        weights = ((torch.arange(part.numel(), device=part.device) + start) % 251 + 1).to(torch.float64)
        plain += float(part.sum().item())
        weighted += float((part * weights).sum().item())
    return [plain, weighted]


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(1 << 27)
    old, new = best_of(lambda: before(x)), best_of(lambda: checksum(torch, x))
    print(f"checksum of 2^27 fp32: before 7ec4e51 {old:.3f} s, now {new:.3f} s ({old / new:.1f}x)")
    out = torch.randn(1 << 26)
    ref = out.double() + 1e-7 * torch.randn(1 << 26, dtype=torch.float64)
    stats = best_of(lambda: correctness_statistics(torch, out, ref, 1e-4, 1e-4))
    once = best_of(lambda: checksum(torch, out))
    print(f"one 2^26 fp32 output: correctness statistics {stats:.3f} s, checksum {once:.3f} s")
    imports = best_of(lambda: subprocess.run([sys.executable, "-c", "import torch"], check=True))
    print(f"python -c 'import torch' in a fresh process: {imports:.2f} s wall (torch {torch.__version__})")


if __name__ == "__main__":
    main()
