"""What ``shift_placement`` costs a forked worker at its start, on its own and by part (ms, in forked children).

    python lab/benchmarks/placement_cost.py [REPEATS] [--torch] [--freeze]

``--torch`` imports torch in the parent first, as a fork server does, so the children inherit its heap and
mappings (more holes to fill, more pools). ``--freeze``: the parent collects and calls ``gc.freeze()`` before
forking, as the fork server does after its imports; without it a child's first full collection walks the whole
inherited heap.
"""

from __future__ import annotations

import ctypes
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable

from hotkernel.contract import forkserver


def in_child(part: Callable[[], object]) -> float:
    """ms that ``part`` takes in a freshly forked child of this process."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        start = time.perf_counter()
        part()
        os.write(write, repr((time.perf_counter() - start) * 1e3).encode())
        os._exit(0)
    os.close(write)
    took = float(os.read(read, 100))
    os.close(read)
    os.waitpid(pid, 0)
    return took


def main() -> None:
    repeats = int(next((a for a in sys.argv[1:] if a.isdigit()), "30"))
    if "--torch" in sys.argv:
        import torch  # noqa: F401
    if "--freeze" in sys.argv:
        gc.collect()
        gc.freeze()

    libc = ctypes.CDLL(None, use_errno=True)
    parts = {
        "shift_placement (whole)": forkserver.shift_placement,
        "fill_address_holes (one pass)": lambda: forkserver.fill_address_holes(libc),
        "random_half of 4096 objects": lambda: forkserver.random_half([object() for _ in range(4096)]),
    }
    for name, part in parts.items():
        took = [in_child(part) for _ in range(repeats)]
        print(
            f"{name:32s} median {statistics.median(took):6.2f} ms  min {min(took):6.2f}  max {max(took):6.2f}  n={repeats}"
        )


if __name__ == "__main__":
    main()
