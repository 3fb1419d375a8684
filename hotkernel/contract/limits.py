"""Time and memory limits of a probe's steps: ``time_limit`` (SIGALRM) and ``memory_cap`` (a real run refused with
the numbers when it would not fit, its allocations capped at the free memory), for ``probe``'s real runs; and
``out_of_memory``, which reads an allocator's failure (CUDA's or the CPU's) as one short line."""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from .knobs import CheckFailed
from .spec import host_available_bytes, proc_kib

GIB = float(1 << 30)


class ProbeMemory(ValueError):
    """A real run refused or stopped for memory (``memory_cap``): its message has the numbers and the step."""


class ProbeLimit(Exception):
    """A probe step ran past its time limit."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ProbeLimit after ``seconds`` (SIGALRM; no limit off the main thread or without SIGALRM)."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        while frame is not None:  # never inside an import: a half-imported module would break later problems
            if frame.f_code.co_filename.startswith("<frozen importlib"):
                signal.setitimer(signal.ITIMER_REAL, 0.1)
                return
            frame = frame.f_back
        raise ProbeLimit(f"ran past {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def probe_free_bytes(torch: Any, device: str) -> int | None:
    """Memory free for a real run on ``device`` (None: unknown)."""
    if device.startswith("cuda"):
        return int(torch.cuda.mem_get_info()[0])
    return host_available_bytes()


@contextlib.contextmanager
def memory_cap(torch: Any, device: str, need: int | None, what: str) -> Iterator[None]:
    """A real run on ``device``: refused with the numbers when ``need`` (estimated bytes) exceeds the free
    memory, and its allocations capped at the free memory (CPU: RLIMIT_AS; CUDA: the allocator's fraction), so
    running out is a ValueError with the numbers, never a killed probe."""
    free = probe_free_bytes(torch, device)
    if free is not None and need is not None and need > free:
        raise ProbeMemory(f"{what} needs about {need / GIB:.2f} GiB on {device}, {free / GIB:.2f} GiB free")
    restore: Callable[[], None] = lambda: None  # noqa: E731
    if free is not None and device.startswith("cuda"):
        total = torch.cuda.get_device_properties(torch.device(device)).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, free / total))
        restore = lambda: torch.cuda.set_per_process_memory_fraction(1.0)  # noqa: E731
    elif free is not None:
        import resource

        size, old = proc_kib("/proc/self/status", "VmSize"), resource.getrlimit(resource.RLIMIT_AS)
        if size is not None and (old[0] == resource.RLIM_INFINITY or old[0] > size + free):
            resource.setrlimit(resource.RLIMIT_AS, (size + free, old[1]))
            restore = lambda: resource.setrlimit(resource.RLIMIT_AS, old)  # noqa: E731
    try:
        yield
    except (MemoryError, RuntimeError) as err:
        if isinstance(err, MemoryError) or out_of_memory(err):
            shown = f"{free / GIB:.2f} GiB" if free is not None else "the memory"
            raise ProbeMemory(f"{what} needs more than the {shown} free on {device}") from None
        raise
    finally:
        restore()
        if device.startswith("cuda"):
            torch.cuda.empty_cache()


# CUDA's caching allocator: "CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.18 GiB
# of which 4.38 GiB is free. ..." (a paragraph); the CPU's: "DefaultCPUAllocator: can't allocate memory: you tried to
# allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)".
CUDA_OOM = re.compile(
    r"Tried to allocate ([\d.]+ \w+)\..*?total capacity of ([\d.]+ \w+) of which ([\d.]+ \w+) is free", re.S
)
CPU_OOM = re.compile(r"can't allocate memory: you tried to allocate (\d+) bytes")


def out_of_memory(err: BaseException) -> str | None:
    """``err`` as one short line when it is an allocator's failure (``torch.OutOfMemoryError``, or the CPU
    allocator's RuntimeError), else None: "device memory (tried to allocate 8.00 GiB, 4.38 GiB of 79.18 GiB free)"."""
    text = str(err)
    cuda = CUDA_OOM.search(text)
    if cuda:
        return f"device memory (tried to allocate {cuda[1]}, {cuda[3]} of {cuda[2]} free)"
    if type(err).__name__ == "OutOfMemoryError" or "out of memory" in text.lower():
        return "device memory"
    cpu = CPU_OOM.search(text)
    if cpu:
        return f"host memory (tried to allocate {int(cpu[1]) / GIB:.2f} GiB)"
    return None


def memory_refusal(err: BaseException, doing: str) -> CheckFailed | None:
    """``fits_memory`` with ``out_of_memory``'s line and the fix when ``err`` is an allocator's failure of the judge
    while ``doing``, else None (the memory check counts inputs, outputs and copies; a reference's own
    temporaries can exceed it: KernelBench's 93_masked_cumsum on an H100)."""
    short = out_of_memory(err)
    if short is None:
        return None
    fix = "use a smaller shape (e.g. import at a smaller --scale) or a card with more memory"
    return CheckFailed("fits_memory", f"the judge ran out of {short}{' ' + doing if doing else ''}: {fix}")
