"""Every knob of the run contract, with its unit in its name, and the vocabulary the other modules share."""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSION = 2

# ---- the timer (timer.py) ---------------------------------------------------------------------------------
MIN_SAMPLE_KERNEL_MS = 10.0  # one timed sample (graph replay or eager loop of N calls) covers at least this
SIZING_CALLS_MAX = 64  # the short graph that sizes N has at most this many calls ...
SIZING_REPLAYS = 3  # ... and is replayed this many times (the fastest replay sizes N)
SAMPLES = 15  # timed samples per shape, each after a refill of every input with fresh seeds; result = median
MAX_CALLS_PER_SAMPLE = 100_000
LAUNCH_BOUND_MS = 0.010  # per-call results below this are flagged launch_bound
OVERHEAD_REPLAYS = 3  # the perturbation-only graph (or loop) is timed this many times; its median is subtracted

# ---- inputs (inputs.py) -----------------------------------------------------------------------------------
MIN_ROTATION = 2  # K, the number of input sets, is at least this
MAX_ROTATION = {"cuda": 64, "cpu": 16}  # ... and at most this (tiny inputs stay cache-resident: flagged)
MAX_ROTATION_BYTES = 8 << 30  # K is also capped so the rotated sets take at most this many bytes
CACHE_MULTIPLE = 2.0  # rotated sets together exceed this multiple of the L2 (CPU: last-level cache)
CPU_CACHE_FALLBACK_BYTES = 32 << 20  # when /sys does not say
PLACEMENT_PAD_MAX_BYTES = 1 << 30  # a CUDA worker first holds a pad of random size up to this, so each run's
PLACEMENT_PAD_STEP_BYTES = 2 << 20  # ... tensors land on other memory (sizes in steps of the allocator's 2 MiB) ...
PLACEMENT_PAD_FREE_SHARE = 16  # ... and at most 1/16 of the free memory; released when a shape needs it
PERTURB_MIN_ABS = 2.0  # the element a timed call sees changed is set to +-[MIN, MAX] (raw inputs: a tail value of
PERTURB_MAX_ABS = 3.0  # the inputs' own N(0, 1), so honest kernels stay as accurate; derived inputs: another element)
SAMPLED_EARLY = 2  # besides the last sample, one random checked call of this many earlier samples is judged

# ---- the reference (reference.py) --------------------------------------------------------------------------
REFERENCE_SLOW_S = 0.2  # a target's first fp64 reference this slow (seconds) is tried in fp32 too ...
REFERENCE_FAST_FACTOR = 4.0  # ... which it keeps when this many times faster ...
REFERENCE_AGREEMENT = 10.0  # ... and within every bound of the fp64 one divided by this

# ---- checks (checks.py, judge.py) ------------------------------------------------------------------------
WALL_SLACK_FACTOR = 1.5  # wall clock may exceed max(event time, enqueue time) by this factor ...
WALL_SLACK_MS = 5.0  # ... plus this much, per sample
FLOOR_SAFETY = {"cuda": 1.25, "cpu": 2.0}  # a kernel may beat the copy ceiling by this factor, not more
CHECKSUM_REL_TOL = 1e-9
CHECKSUM_CHUNK_ELEMENTS = 1 << 26  # checksums run over chunks of this many elements (fp64: 512 MiB)
CHECKSUM_PERIOD = 251  # the position weights of a checksum repeat with this period (a prime: no stride aliases it)
DEVICE_HEADROOM_BYTES = 1 << 30  # a run must leave this much device memory free (allocator, workspace) ...
HOST_HEADROOM_BYTES = 2 << 30  # ... and this much host memory
OUTPUT_COPIES_PER_SET = 2  # judged outputs kept per input set (correctness pass + last timed sample) ...
OUTPUT_COPIES_EXTRA = SAMPLED_EARLY  # ... plus one per sampled earlier sample

# ---- processes (orchestrator.py, hygiene.py) -------------------------------------------------------------
LEFTOVER_GRACE_S = 1.0  # worker descendants get this long to exit by themselves once the worker is gone
KILL_WAIT_S = 5.0  # a killed process tree must be gone within this long
JUDGE_REPLY_TIMEOUT_S = 600.0
STALE_RUN_DIR_PREFIX = "hk_run_"  # run directories are <tmp>/hk_run_<orchestrator pid>_<random>
TOKEN_ENV = "HK_RUN_TOKEN"
PROTOCOL_FD_ENV = "HK_PROTOCOL_FD"
PARENT_PID_ENV = "HK_PARENT_PID"
FORKSERVER_FD_ENV = "HK_FORKSERVER_FD"  # the fork server's end of its socket (forkserver.py)
FORKSERVER_START_TIMEOUT_S = 600.0  # a fork request waits this long for the server (it imports torch first)
FORKED_MAP_PAD_MAX_PAGES = 4096  # a forked worker first maps 1..this many untouched pages and mallocs ...
FORKED_HEAP_PAD_MAX_BYTES = 120 << 10  # ... 1..this many bytes, never freed: its tensors land at addresses of
# its own, as an exec'd process's do under ASLR (forked children of one server would otherwise all allocate at
# the same addresses, and a placement that is slow for one script's runs would be slow for all of them)
FORKED_SMALL_PAD_CHUNKS = 256  # ... and mallocs this many chunks of 16..FORKED_SMALL_PAD_MAX_BYTES bytes, freeing
FORKED_SMALL_PAD_MAX_BYTES = 16 << 10  # a random half: the free chunks inherited from the server are then taken
# and handed back in an order of its own, so small tensors (below malloc's mmap threshold) move too
FORKED_OBJECT_PAD_OBJECTS = 4096  # ... and makes this many small Python objects, keeping a random half:
# pymalloc's pools inherited from the server are then used in an order of its own, so the script's functions,
# code objects and frames move too (a kernel of a few microseconds is mostly Python calls)
# glibc's malloc in a worker, set after its placement shift (``mallopt``): blocks up to WORKER_MMAP_THRESHOLD_BYTES
# come from the heap and freed heap memory is kept up to WORKER_TRIM_THRESHOLD_BYTES, so a call's output of a few
# MB is not page-faulted afresh by every call. With glibc's defaults (128 KiB, raised by each free of a larger
# mapped block; the heap trimmed above twice that) a CPU run's first samples ran 1.3-2x slower than its last,
# until a threshold had risen at a point of its own in each run (docs/performance.md, "CPU samples")
WORKER_MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's upper bound on 64-bit
WORKER_TRIM_THRESHOLD_BYTES = 1 << 30
WORKER_ENV = {  # set for the worker: torch's own machinery stays in the worker process
    "TORCHINDUCTOR_COMPILE_THREADS": "1",  # no compile worker pool (it would outlive the worker)
}

DTYPES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
}


class CheckFailed(Exception):
    """A named check failed; ``str()`` is the reason ``"<check>: <detail>"``."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail


def fail(check: str, detail: str) -> dict[str, Any]:
    """A non-ok run result for ``check`` (the status the checks table gives it)."""
    return {"status": "invalid", "reason": f"{check}: {detail}"}
