"""hotkernel's run contract, protocol 1: the referee a candidate kernel cannot reach.

Vendored verbatim into every workspace as ``targets/hk_contract.py`` (its sha256 is checked before and after
every run), so ``python targets/<name>/candidate.py`` works without hotkernel installed. Stdlib only at the
top level; torch is imported inside the worker and the judge.

Three roles, three processes::

    python hk_contract.py run SCRIPT            orchestrator: prints exactly one JSON line (the run result)
    python -I hk_contract.py worker [SCRIPT]    times the script's `kernel`; one protocol line on a private fd
    python -I hk_contract.py judge              persistent; one run directory per stdin line, one JSON reply

The worker reads the target's SPEC from the sibling ``baseline.py`` (parsed, never taken from the candidate),
builds K rotated sets of fresh random inputs per shape (together over 2x the last-level cache), poisons
memory, runs a correctness pass over every set, times with ``measure`` (CUDA graph of N rotated calls; an
eager loop, flagged, when capture fails), refills the inputs with fresh seeds before every timed sample, and
saves the seeds and the outputs of the checked calls. The judge regenerates the inputs from the seeds,
recomputes the reference in fp32 (fp64 for fp32 targets) and compares. Every non-ok result carries
``reason = "<check_name>: <detail>"``.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import io
import json
import math
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

PROTOCOL_VERSION = 1

# ---- knobs (units in the names) -------------------------------------------------------------------------
MIN_LOOP_MS = 2.0  # a timed graph (or eager loop) of N calls runs at least this long
SAMPLES = 15  # timed loops per shape, each after a refill of every input with fresh seeds; result = median
MIN_ROTATION = 2  # K, the number of input sets, is at least this
MAX_ROTATION = {"cuda": 64, "cpu": 16}  # ... and at most this (tiny inputs stay cache-resident: flagged)
MAX_ROTATION_BYTES = 8 << 30  # K is also capped so the rotated sets take at most this much memory
CACHE_MULTIPLE = 2.0  # rotated sets together exceed this multiple of the L2 (CPU: last-level cache)
CPU_CACHE_FALLBACK_BYTES = 32 << 20  # when /sys does not say
MAX_CALLS_PER_LOOP = 100_000
LAUNCH_BOUND_MS = 0.010  # results below this are flagged launch_bound
SAMPLED_EARLY = (
    2  # besides every set of the last sample, one random set of this many earlier samples is checked
)
WALL_SLACK_FACTOR = 1.5  # wall clock may exceed max(event time, enqueue time) by this factor ...
WALL_SLACK_MS = 5.0  # ... plus this much, per sample
FLOOR_SAFETY = {"cuda": 1.25, "cpu": 2.0}  # a kernel may beat the copy ceiling by this factor, not more
LEFTOVER_GRACE_S = 1.0  # worker descendants get this long to exit by themselves
JUDGE_REPLY_TIMEOUT_S = 600.0
CHECKSUM_REL_TOL = 1e-9

CHECK_NAMES = (
    "outputs_match_reference",
    "output_not_nan",
    "output_shape_dtype",
    "timed_outputs_match_reference",
    "inputs_unchanged",
    "functions_unpatched",
    "timer_consistent_with_wall_clock",
    "faster_than_floor",
    "single_protocol_line",
    "worker_exit_clean",
    "no_leftover_processes",
    "device_idle",
    "device_available",
    "contract_unchanged",
    "baseline_unchanged",
    "timeout",
    "import_failed",
    "crashed",
)
DTYPES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "fp8_e4m3": "float8_e4m3fn",
    "fp8_e5m2": "float8_e5m2",
}
TOKEN_ENV = "HK_RUN_TOKEN"
PROTOCOL_FD_ENV = "HK_PROTOCOL_FD"


class CheckFailed(Exception):
    """A named check failed; ``str()`` is the reason ``"<check>: <detail>"``."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(f"{check}: {detail}")
        self.check = check
        self.detail = detail


# ---- shared helpers (stdlib) ------------------------------------------------------------------------------
def sha256_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def read_spec(script: str) -> dict[str, Any]:
    """The target's SPEC, parsed (never imported) from ``baseline.py`` next to ``script``."""
    baseline = os.path.join(os.path.dirname(os.path.abspath(script)), "baseline.py")
    with open(baseline, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=baseline)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "SPEC"
            and isinstance(node.value, ast.Call)
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
            and isinstance(node.value.args[0].value, str)
        ):
            return json.loads(node.value.args[0].value)
    raise ValueError(
        f"{baseline} has no `SPEC = json.loads(r'''...''')` literal: re-render it (`hotkernel sync`)"
    )


def workspace_root(script: str) -> str:
    """The workspace root: the parent of ``targets/`` (scripts live in ``targets/<name>/``)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(script))))


def load_function(ref: str, root: str) -> Callable[..., Any]:
    """Import ``module:function`` (importable or under ``root``), or ``./path.py:function`` under ``root``."""
    module_part, _, attr = ref.rpartition(":")
    if not module_part or not attr:
        raise ValueError(f"function reference {ref!r} must look like module:function or ./file.py:function")
    if module_part.endswith(".py") or module_part.startswith(("./", "../", "/")):
        path = os.path.normpath(os.path.join(root, module_part))
        name = "hk_user_" + hashlib.sha256(path.encode()).hexdigest()[:16]
        module = sys.modules.get(name)
        if module is None:
            folder = os.path.dirname(path)
            if folder not in sys.path:
                sys.path.insert(0, folder)
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load {path}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(name, None)
                raise
    else:
        if root not in sys.path:
            sys.path.insert(0, root)
        module = importlib.import_module(module_part)
    value: Any = module
    for part in attr.split("."):
        value = getattr(value, part)
    if not callable(value):
        raise TypeError(f"{ref} is not callable")
    return value


def mix_seed(seed: int, index: int) -> int:
    """A per-tensor seed derived from a set seed (both < 2**63)."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


class SeedSource:
    """Fresh seeds from os.urandom (default policy) or a deterministic stream when the spec fixes ``seed``."""

    def __init__(self, fixed: int | None) -> None:
        self.policy = "fresh-per-run" if fixed is None else f"fixed:{fixed}"
        self._rng = None if fixed is None else random.Random(int(fixed))

    def next(self) -> int:
        if self._rng is None:
            return int.from_bytes(os.urandom(8), "little") >> 1
        return self._rng.getrandbits(63)


def fail(check: str, detail: str) -> dict[str, Any]:
    return {"status": "invalid", "reason": f"{check}: {detail}"}


# ---- inputs (worker and judge build them identically) -----------------------------------------------------
def torch_dtype(torch: Any, name: str) -> Any:
    return getattr(torch, DTYPES[name])


def raw_names(spec: dict[str, Any]) -> list[str]:
    return [item["name"] for item in spec["inputs"]]


def rotated_raw(spec: dict[str, Any]) -> list[bool]:
    """Which raw inputs get their own copy per set (with a ``derive`` hook, every input does)."""
    if spec.get("derive"):
        return [True] * len(spec["inputs"])
    rotate = set(spec.get("rotate") or [])
    return [item["name"] in rotate for item in spec["inputs"]]


def random_tensor(torch: Any, shape: list[int], dtype: Any, seed: int, device: str) -> Any:
    """Standard-normal data drawn in fp32 from a seeded generator, then cast (never zeros or constants)."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return torch.randn(tuple(shape), generator=generator, device=device, dtype=torch.float32).to(dtype)


def make_raw(
    torch: Any, spec: dict[str, Any], shape_index: int, set_seed: int, shared_seed: int, device: str
) -> list[Any]:
    """The raw tensors of one input set: rotated ones from ``set_seed``, shared ones from ``shared_seed``."""
    dtype = torch_dtype(torch, spec["dtype"])
    tensors = []
    for index, (item, rotated) in enumerate(zip(spec["inputs"], rotated_raw(spec), strict=False)):
        seed = mix_seed(set_seed if rotated else shared_seed, index)
        tensors.append(random_tensor(torch, item["shapes"][shape_index], dtype, seed, device))
    return tensors


def call_inputs(raw: list[Any], derive: Callable[..., Any] | None, kwargs: dict[str, Any]) -> list[Any]:
    """The kernel's positional inputs: the raw tensors, or what the ``derive`` hook makes of them."""
    if derive is None:
        return raw
    out = derive(*raw, **kwargs) if kwargs and _accepts_kwargs(derive) else derive(*raw)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _accepts_kwargs(fn: Callable[..., Any]) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params)


def as_outputs(torch: Any, value: Any) -> list[Any]:
    """A kernel's return value as a list of tensors (a tensor, or a tuple/list of tensors)."""
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    for item in items:
        if not isinstance(item, torch.Tensor):
            raise CheckFailed("output_shape_dtype", f"kernel returned {type(item).__name__}, not a tensor")
    return items


def checksum(torch: Any, tensor: Any) -> list[float]:
    """Two float64 sums (plain and position-weighted) that change when any element changes."""
    flat = tensor.detach().reshape(-1).to(torch.float64)
    weights = (torch.arange(flat.numel(), device=flat.device) % 251 + 1).to(torch.float64)
    return [float(flat.sum().item()), float((flat * weights).sum().item())]


def nbytes(tensors: list[Any]) -> int:
    return int(sum(t.numel() * t.element_size() for t in tensors))


def sync(torch: Any, device_kind: str) -> None:
    if device_kind == "cuda":
        torch.cuda.synchronize()


def cache_bytes(torch: Any, device_kind: str) -> int:
    """The L2 size (CUDA) or the CPU's last-level cache (from /sys; fallback 32 MiB)."""
    if device_kind == "cuda":
        return int(torch.cuda.get_device_properties(0).L2_cache_size)
    best_level, best_size = -1, 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(base)):
            try:
                with open(os.path.join(base, entry, "level")) as handle:
                    level = int(handle.read().strip())
                with open(os.path.join(base, entry, "size")) as handle:
                    text = handle.read().strip().upper()
            except (OSError, ValueError):
                continue
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            size = int(text.rstrip("KMG")) * scale
            if level > best_level or (level == best_level and size > best_size):
                best_level, best_size = level, size
    return best_size or CPU_CACHE_FALLBACK_BYTES


def rotation_count(per_set_bytes: int, cache: int, device_kind: str) -> tuple[int, bool]:
    """K so that K sets together exceed CACHE_MULTIPLE x cache; (K, whether a cap kept it cache-resident)."""
    if per_set_bytes <= 0:
        return MIN_ROTATION, True
    wanted = int(CACHE_MULTIPLE * cache // per_set_bytes) + 1
    k = max(MIN_ROTATION, min(wanted, MAX_ROTATION[device_kind], max(1, MAX_ROTATION_BYTES // per_set_bytes)))
    return k, k * per_set_bytes <= CACHE_MULTIPLE * cache


# ---- the timer ------------------------------------------------------------------------------------------
def measure(
    call: Callable[[int], Any],
    n_sets: int,
    *,
    torch: Any,
    device_kind: str,
    refill: Callable[[int], None],
    on_sample_done: Callable[[int, list[Any]], None],
    poison: Callable[[list[Any] | None], None],
    flush: Callable[[], None],
    clock: Callable[[], float],
    wall: Callable[[], float],
    elapsed_ms: Callable[[Any, Any], float] | None = None,
    samples: int = SAMPLES,
    min_loop_ms: float = MIN_LOOP_MS,
    n_calls: int | None = None,
) -> dict[str, Any]:
    """Time ``call(j)`` (the kernel on input set ``j % n_sets``): per-call ms, the median of ``samples``.

    CUDA: one CUDA graph of N calls cycling through the sets is captured (N sized from an eager estimate so
    one replay runs >= ``min_loop_ms``). Each sample refills every input with fresh seeds (``refill(i)``),
    sweeps the L2 with a read (``flush``: clean lines, no write-back bias), then replays the graph once
    between two events: sample = elapsed / N. When capture fails the same N calls run eagerly (timer
    ``cuda-eager``): a sample is then the larger of the events and the wall clock up to a device-wide
    synchronize, so work left on other streams is counted. CPU: the eager loop timed with ``clock``.
    ``on_sample_done(i, outs)`` sees the outputs of the first ``n_sets`` calls of sample ``i``. Enqueue and
    wall-clock totals come back so the caller can check the timer: ``check_wall_clock``.
    """
    cuda = device_kind == "cuda"

    def loop_eager(n: int, keep: list[Any] | None) -> tuple[float, float, float]:
        sync(torch, device_kind)
        t0 = wall()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        c0 = clock()
        for j in range(n):
            out = call(j)
            if keep is not None and j < n_sets:
                keep.append(out)
        c1 = clock()
        if cuda:
            end.record()
        t1 = wall()
        sync(torch, device_kind)
        t2 = wall()
        # Eager CUDA: events on the current stream miss work a kernel leaves on other streams, so the
        # timer is the larger of the events and the wall clock up to a device-wide synchronize.
        timed = max(elapsed_ms(start, end), (t2 - t0) * 1e3) if cuda else (c1 - c0) * 1e3
        return timed, (t1 - t0) * 1e3, (t2 - t0) * 1e3

    def loop_graph(graph: Any) -> tuple[float, float, float]:
        sync(torch, device_kind)
        t0 = wall()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        t1 = wall()
        sync(torch, device_kind)
        t2 = wall()
        return elapsed_ms(start, end), (t1 - t0) * 1e3, (t2 - t0) * 1e3

    # Estimate per-call time eagerly (this also warms up compilation and autotuning).
    for j in range(2 * n_sets):
        call(j)
    estimate_ms = max(loop_eager(n_sets, None)[0] / n_sets, 1e-6)
    if n_calls is None:
        n_calls = math.ceil(min_loop_ms / estimate_ms)
    n_calls = min(max(int(n_calls), n_sets), MAX_CALLS_PER_LOOP)
    n_calls = math.ceil(n_calls / n_sets) * n_sets

    graph, kept, timer, capture_error = None, None, "cpu-perf-counter", None
    if cuda:
        timer = "cuda-graph"
        try:
            graph, kept = capture_graph(torch, call, n_calls, n_sets)
            graph.replay()  # the first replay uploads the graph: never timed
        except Exception as err:  # noqa: BLE001 - any capture failure means: time eagerly, flagged
            capture_error = f"{type(err).__name__}: {str(err)[:200]}"
            graph, kept, timer = None, None, "cuda-eager"
            with contextlib.suppress(Exception):
                torch.cuda.synchronize()

    times: list[float] = []
    event_total = enqueue_total = wall_total = 0.0
    for index in range(samples):
        if graph is not None:
            poison(kept)
            refill(index)
            flush()
            timed, enqueue, total = loop_graph(graph)
            outputs = kept
        else:
            outputs = []
            poison(None)
            refill(index)
            flush()
            timed, enqueue, total = loop_eager(n_calls, outputs)
        times.append(timed / n_calls)
        event_total += timed
        enqueue_total += enqueue
        wall_total += total
        on_sample_done(index, outputs)
        del outputs
    ms = statistics.median(times)
    return {
        "ms": ms,
        "samples_ms": times,
        "n_calls": n_calls,
        "timer": timer,
        "estimate_ms": estimate_ms,
        "capture_error": capture_error,
        "launch_bound": ms < LAUNCH_BOUND_MS,
        "event_total_ms": event_total,
        "enqueue_total_ms": enqueue_total,
        "wall_total_ms": wall_total,
        "samples": samples,
    }


def capture_graph(torch: Any, call: Callable[[int], Any], n_calls: int, n_sets: int) -> tuple[Any, list[Any]]:
    """One CUDA graph of ``n_calls`` rotated calls; also returns the outputs of the first ``n_sets`` calls."""
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graphs recommends
        for j in range(n_sets):
            call(j)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    kept: list[Any] = []
    with torch.cuda.graph(graph):
        for j in range(n_calls):
            out = call(j)
            if j < n_sets:
                kept.append(out)
    torch.cuda.synchronize()
    return graph, kept


def check_wall_clock(timing: dict[str, Any]) -> str | None:
    """Event time must explain the wall clock (catches unjoined streams, patched or lying timers)."""
    events, enqueue, wall_ms = timing["event_total_ms"], timing["enqueue_total_ms"], timing["wall_total_ms"]
    if wall_ms > WALL_SLACK_FACTOR * max(events, enqueue) + WALL_SLACK_MS * timing["samples"]:
        return (
            f"wall clock {wall_ms:.3f} ms for timed loops the timer put at {events:.3f} ms "
            f"(enqueue {enqueue:.3f} ms): work ran outside the timed region"
        )
    if events > 1.05 * wall_ms + 1.0:
        return f"timer reported {events:.3f} ms for loops that took {wall_ms:.3f} ms of wall clock"
    return None


# ---- the worker -------------------------------------------------------------------------------------------
def pristine_table(torch: Any) -> dict[str, tuple[Any, str]]:
    """Objects whose attributes the referee relies on; saved before the script is imported."""
    import torch.testing  # noqa: F401

    table: dict[str, tuple[Any, str]] = {}
    for name in (
        "allclose",
        "isclose",
        "equal",
        "randn",
        "empty",
        "empty_like",
        "save",
        "Generator",
        "manual_seed",
        "arange",
    ):
        table[f"torch.{name}"] = (torch, name)
    table["torch.testing.assert_close"] = (torch.testing, "assert_close")
    for name in (
        "copy_",
        "clone",
        "to",
        "cpu",
        "float",
        "double",
        "fill_",
        "sum",
        "abs",
        "max",
        "reshape",
        "detach",
        "isfinite",
        "data_ptr",
        "__eq__",
        "__sub__",
    ):
        table[f"torch.Tensor.{name}"] = (torch.Tensor, name)
    for name in ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "process_time"):
        table[f"time.{name}"] = (time, name)
    for name in (
        "synchronize",
        "Event",
        "CUDAGraph",
        "graph",
        "current_stream",
        "Stream",
        "stream",
        "empty_cache",
        "get_device_properties",
        "get_device_name",
    ):
        table[f"torch.cuda.{name}"] = (torch.cuda, name)
    for name in ("record", "elapsed_time", "synchronize"):
        table[f"torch.cuda.Event.{name}"] = (torch.cuda.Event, name)
    for name in ("replay", "capture_begin", "capture_end"):
        table[f"torch.cuda.CUDAGraph.{name}"] = (torch.cuda.CUDAGraph, name)
    for name in ("write", "_exit", "dup2", "urandom"):
        table[f"os.{name}"] = (os, name)
    table["json.dumps"] = (json, "dumps")
    table["hashlib.sha256"] = (hashlib, "sha256")
    table["builtins.print"] = (
        __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__),
        "print",
    )
    return table


def snapshot_functions(torch: Any) -> dict[str, Any]:
    saved = {}
    for name, (owner, attr) in pristine_table(torch).items():
        saved[name] = owner.get(attr) if isinstance(owner, dict) else getattr(owner, attr, None)
    own = globals()
    for name, value in own.items():
        if callable(value) and not name.startswith("__"):
            saved[f"hk_contract.{name}"] = value
    return saved


def patched_functions(torch: Any, saved: dict[str, Any]) -> list[str]:
    table = pristine_table(torch)
    changed = []
    own = globals()
    for name, value in saved.items():
        if name.startswith("hk_contract."):
            current = own.get(name.split(".", 1)[1])
        else:
            owner, attr = table[name]
            current = owner.get(attr) if isinstance(owner, dict) else getattr(owner, attr, None)
        if current is not value:
            changed.append(name)
    return changed


def poison_memory(torch: Any, sizes: list[int], device: str) -> None:
    """Allocate blocks of these byte sizes, fill them with 0xFF (NaN in every float format) and free them."""
    blocks = []
    for size in sizes:
        if size <= 0:
            continue
        block = torch.empty(int(size), dtype=torch.uint8, device=device)
        block.fill_(255)
        blocks.append(block)
    del blocks


def poison_tensors(torch: Any, outputs: list[Any], protected: list[Any]) -> None:
    """Fill output tensors with NaN (-1 for integers) unless they alias an input (that is judged by value)."""
    spans = []
    for t in protected:
        storage = t.untyped_storage()
        spans.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
    for group in outputs:
        for t in group:
            ptr = t.untyped_storage().data_ptr()
            if any(lo <= ptr < hi for lo, hi in spans):
                continue
            with torch.no_grad():
                t.fill_(float("nan") if t.is_floating_point() or t.is_complex() else -1)


def worker_main(argv: list[str]) -> None:
    """``worker [SCRIPT RUN_DIR]``: wait for the job line on stdin, run it, write one protocol line, exit."""
    proto_fd = int(os.environ.get(PROTOCOL_FD_ENV, "-1"))
    if proto_fd < 0:  # started by hand: the protocol line goes to the real stdout, prints to stderr
        proto_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    write = os.write
    hard_exit = os._exit
    started = time.perf_counter()
    import torch  # imported before the job arrives: a pre-started worker is warm

    saved = snapshot_functions(torch)
    warm_s = time.perf_counter() - started
    line = sys.stdin.readline()
    job_started = time.perf_counter()
    try:
        job = json.loads(line) if line.strip() else {}
    except ValueError:
        job = {}
    if len(argv) >= 2:
        job.setdefault("script", argv[0])
        job.setdefault("run_dir", argv[1])
    nonce = job.get("nonce", "")
    try:
        record = run_job(torch, job, saved, started)
    except CheckFailed as err:
        record = {"status": "failed", "reason": str(err)}
    except BaseException as err:  # noqa: BLE001 - the protocol line must always be written
        record = {"status": "failed", "reason": f"crashed: {type(err).__name__}: {str(err)[:500]}"}
    record["protocol"] = PROTOCOL_VERSION
    record["nonce"] = nonce
    record["phases_s"] = {
        "import_torch": round(warm_s, 3),
        "job": round(time.perf_counter() - job_started, 3),
    }
    payload = (json.dumps(record, allow_nan=True) + "\n").encode()
    while payload:
        payload = payload[write(proto_fd, payload) :]
    hard_exit(0)  # no atexit hooks, no finalizers: nothing runs after the protocol line


def run_job(torch: Any, job: dict[str, Any], saved: dict[str, Any], started: float) -> dict[str, Any]:
    """Everything a worker does between the job line and the protocol line."""
    script = os.path.abspath(job["script"])
    run_dir = job["run_dir"]
    spec = read_spec(script)
    device_kind = "cuda" if str(spec.get("device", "cuda")).startswith("cuda") else "cpu"
    if device_kind == "cuda" and not torch.cuda.is_available():
        raise CheckFailed("device_available", "target wants CUDA but torch.cuda.is_available() is False")
    device = "cuda" if device_kind == "cuda" else "cpu"
    root = workspace_root(script)
    try:
        derive = load_function(spec["derive"], root) if spec.get("derive") else None
        module_name = "hk_script_" + hashlib.sha256(script.encode()).hexdigest()[:12]
        module_spec = importlib.util.spec_from_file_location(module_name, script)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        module_spec.loader.exec_module(module)
        kernel = module.kernel
    except SystemExit as err:
        raise CheckFailed(
            "import_failed", f"{os.path.basename(script)} called exit({err.code}) on import"
        ) from err
    except Exception as err:  # noqa: BLE001
        raise CheckFailed(
            "import_failed", f"{os.path.basename(script)}: {type(err).__name__}: {err}"
        ) from err

    perf_counter, monotonic = saved["time.perf_counter"], saved["time.monotonic"]
    elapsed = saved["torch.cuda.Event.elapsed_time"]
    kwargs = dict(spec.get("kwargs") or {})
    seeds = SeedSource(spec.get("seed"))
    cache = cache_bytes(torch, device_kind)
    shapes_out = []
    for shape_index, label in enumerate(spec["shapes"]):
        shapes_out.append(
            run_shape(
                torch,
                spec,
                shape_index,
                label,
                kernel,
                derive,
                kwargs,
                seeds,
                cache,
                device,
                device_kind,
                run_dir,
                perf_counter,
                monotonic,
                elapsed,
            )
        )
        if device_kind == "cuda":
            torch.cuda.empty_cache()
        patched = patched_functions(torch, saved)
        if patched:
            raise CheckFailed("functions_unpatched", "the script replaced " + ", ".join(sorted(patched)[:8]))
        problem = check_wall_clock(shapes_out[-1]["timing"])
        if problem:
            raise CheckFailed("timer_consistent_with_wall_clock", f"shape {label}: {problem}")
    name = torch.cuda.get_device_name(0) if device_kind == "cuda" else cpu_name()
    return {
        "status": "measured",
        "reason": None,
        "device": name,
        "device_kind": device_kind,
        "torch": torch.__version__,
        "seed_policy": seeds.policy,
        "cache_bytes": cache,
        "shapes": shapes_out,
    }


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return "CPU " + line.split(":", 1)[1].strip()
    import platform

    return "CPU " + (platform.processor() or platform.machine())


def run_shape(
    torch: Any,
    spec: dict[str, Any],
    shape_index: int,
    label: str,
    kernel: Callable[..., Any],
    derive: Callable[..., Any] | None,
    kwargs: dict[str, Any],
    seeds: SeedSource,
    cache: int,
    device: str,
    device_kind: str,
    run_dir: str,
    perf_counter: Callable[[], float],
    monotonic: Callable[[], float],
    elapsed: Callable[[Any, Any], float],
) -> dict[str, Any]:
    """Inputs, poison, correctness pass, timed loops and saved outputs for one shape."""
    rotated = rotated_raw(spec)

    def build(set_seed: int, shared_seed: int) -> list[Any]:
        return call_inputs(make_raw(torch, spec, shape_index, set_seed, shared_seed, device), derive, kwargs)

    shared_seed = seeds.next()
    first_seed = seeds.next()
    first = build(first_seed, shared_seed)
    if derive is None:
        per_set = nbytes([t for t, rot in zip(first, rotated, strict=False) if rot])
    else:
        per_set = nbytes(first)
    n_sets, cache_resident = rotation_count(per_set, cache, device_kind)
    set_seeds = [first_seed] + [seeds.next() for _ in range(n_sets - 1)]
    sets: list[list[Any]] = [first]
    for k in range(1, n_sets):
        fresh = build(set_seeds[k], shared_seed)
        if derive is None:  # shared (non-rotated) inputs are one tensor used by every set
            fresh = [f if rot else s for f, s, rot in zip(fresh, first, rotated, strict=False)]
        sets.append(fresh)
    all_inputs = [t for s in sets for t in s]
    input_sizes = sorted({t.numel() * t.element_size() for t in first})
    poison_memory(torch, input_sizes * 2 + [sum(input_sizes)], device)

    def call(j: int) -> Any:
        return kernel(*sets[j % n_sets], **kwargs)

    # Correctness pass: every set, outputs copied off right away.
    correct_outputs, correct_items = [], []
    out_sizes: list[int] = []
    for k in range(n_sets):
        outs = as_outputs(torch, call(k))
        sync(torch, device_kind)
        out_sizes = [t.numel() * t.element_size() for t in outs]
        correct_outputs.append([t.detach().to("cpu", copy=True) for t in outs])
        del outs
    for k in range(n_sets):
        correct_items.append(
            {
                "set": k,
                "set_seed": set_seeds[k],
                "shared_seed": shared_seed,
                "checksums": [checksum(torch, t) for t in sets[k]],
            }
        )

    sample_seeds: list[tuple[list[int], int]] = []

    def refill(index: int) -> None:
        shared = seeds.next()
        fresh_seeds = [seeds.next() for _ in range(n_sets)]
        for k in range(n_sets):
            fresh = build(fresh_seeds[k], shared)
            with torch.no_grad():
                for position, (buf, new) in enumerate(zip(sets[k], fresh, strict=False)):
                    if k == 0 or derive is not None or rotated[position]:
                        buf.copy_(new)
            del fresh
        sample_seeds.append((fresh_seeds, shared))

    last = SAMPLES - 1
    sampled = set(random.Random(seeds.next()).sample(range(last), min(SAMPLED_EARLY, last)))
    timed_outputs, timed_items = [], []

    def on_sample_done(index: int, outputs: list[Any]) -> None:
        if index != last and index not in sampled:
            return
        sync(torch, device_kind)
        groups = [as_outputs(torch, o) for o in outputs]
        owners = attribute_outputs(groups, n_sets)
        fresh_seeds, shared = sample_seeds[index]
        chosen = sorted(owners) if index == last else [random.Random(fresh_seeds[0]).choice(sorted(owners))]
        for k in chosen:
            timed_outputs.append([t.detach().to("cpu", copy=True) for t in groups[owners[k]]])
            item = {"set": k, "sample": index, "set_seed": fresh_seeds[k], "shared_seed": shared}
            if index == last:
                item["checksums"] = [checksum(torch, t) for t in sets[k]]
            timed_items.append(item)

    def poison(kept: list[Any] | None) -> None:
        if kept is not None:
            poison_tensors(torch, [as_outputs(torch, o) for o in kept], all_inputs)
        else:
            poison_memory(torch, out_sizes * 2, device)

    sweep = (
        torch.ones(int(CACHE_MULTIPLE * cache) // 4, dtype=torch.int32, device=device)
        if device_kind == "cuda"
        else None
    )

    def flush() -> None:
        """A read-only pass over 2x L2: evicts the refill's dirty lines and leaves clean ones."""
        if sweep is not None:
            sweep.sum()

    timing = measure(
        call,
        n_sets,
        torch=torch,
        device_kind=device_kind,
        refill=refill,
        on_sample_done=on_sample_done,
        poison=poison,
        flush=flush,
        clock=perf_counter,
        wall=monotonic,
        elapsed_ms=elapsed,
        n_calls=spec.get("iters"),
    )
    sync(torch, device_kind)
    buffer = io.BytesIO()
    torch.save({"correct": correct_outputs, "timed": timed_outputs}, buffer)
    data = buffer.getvalue()
    file_name = f"shape{shape_index}.pt"
    with open(os.path.join(run_dir, file_name), "wb") as handle:
        handle.write(data)
    return {
        "shape": label,
        "index": shape_index,
        "rotation": n_sets,
        "rotated_bytes": per_set,
        "cache_resident": cache_resident,
        "n_calls": timing["n_calls"],
        "timer": timing["timer"],
        "ms": timing["ms"],
        "samples_ms": timing["samples_ms"],
        "launch_bound": timing["launch_bound"],
        "capture_error": timing["capture_error"],
        "timing": {
            k: timing[k]
            for k in ("event_total_ms", "enqueue_total_ms", "wall_total_ms", "samples", "estimate_ms")
        },
        "file": file_name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "correct": correct_items,
        "timed": timed_items,
    }


def attribute_outputs(groups: list[list[Any]], n_sets: int) -> dict[int, int]:
    """Map set -> index of the kept output that holds its result.

    Outputs of the first ``n_sets`` timed calls are kept; when several share memory (a preallocated buffer
    returned by every call) the buffer holds the last call's result, so only the highest set claims it.
    """
    owners: dict[int, int] = {}
    by_ptr: dict[tuple[int, ...], list[int]] = {}
    for index, group in enumerate(groups[:n_sets]):
        by_ptr.setdefault(tuple(t.data_ptr() for t in group), []).append(index)
    for members in by_ptr.values():
        owners[max(members)] = max(members)
    return owners


# ---- the judge --------------------------------------------------------------------------------------------
class JudgeState:
    """What a persistent judge keeps between runs: imported reference functions, expected outputs, ceiling."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.functions: dict[str, Any] = {}
        self.expected: dict[tuple[str, int], list[tuple[tuple[int, ...], str]]] = {}
        self.ceiling_gbps: dict[str, float] = {}


def judge_main() -> None:
    """Serve judge requests: one JSON job per stdin line, one JSON reply per line on the private stdout."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    import torch

    state = JudgeState(torch)
    os.write(reply_fd, b'{"ready": true}\n')
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = judge_job(state, json.loads(line))
        except CheckFailed as err:
            reply = {"status": "invalid", "reason": str(err), "checks": []}
        except Exception as err:  # noqa: BLE001 - a judge failure is a reply, not a dead judge
            reply = {
                "status": "invalid",
                "reason": f"crashed: judge: {type(err).__name__}: {str(err)[:300]}",
                "checks": [],
            }
        payload = (json.dumps(reply, allow_nan=True) + "\n").encode()
        while payload:
            payload = payload[os.write(reply_fd, payload) :]


def judge_functions(state: JudgeState, spec: dict[str, Any], root: str) -> tuple[Any, Any, Any]:
    """(baseline `from`, reference, derive) functions, imported once per judge."""

    def get(ref: str | None) -> Any:
        if not ref:
            return None
        key = f"{root}|{ref}"
        if key not in state.functions:
            try:
                state.functions[key] = load_function(ref, root)
            except Exception as err:  # noqa: BLE001
                raise CheckFailed(
                    "import_failed", f"judge could not import {ref}: {type(err).__name__}: {err}"
                ) from err
        return state.functions[key]

    base = get(spec["from"])
    return base, get(spec.get("reference")) or base, get(spec.get("derive"))


def upcast(torch: Any, tensors: list[Any], wide: Any) -> list[Any]:
    return [t.to(wide) if t.is_floating_point() else t for t in tensors]


def judge_job(state: JudgeState, job: dict[str, Any]) -> dict[str, Any]:
    """Check one worker run: regenerate inputs from the seeds, recompute the reference, compare everything."""
    torch = state.torch
    script, run_dir, record = job["script"], job["run_dir"], job["record"]
    spec = read_spec(script)
    root = workspace_root(script)
    device_kind = record.get("device_kind", "cpu")
    device = "cuda" if device_kind == "cuda" else "cpu"
    base_fn, ref_fn, derive = judge_functions(state, spec, root)
    kwargs = dict(spec.get("kwargs") or {})
    wide = torch.float64 if spec["dtype"] == "fp32" else torch.float32
    atol, rtol = float(spec["atol"]), float(spec["rtol"])
    checks: list[dict[str, Any]] = []
    per_shape: list[dict[str, Any]] = []
    failure: tuple[str, str] | None = None
    worst = 0.0
    ceiling = job.get("ceiling_gbps") or measure_ceiling_gbps(state, device_kind)
    if len(record.get("shapes") or []) != len(spec["shapes"]):
        raise CheckFailed(
            "single_protocol_line", "worker reported a different number of shapes than the spec"
        )

    def note(check: str, ok: bool, detail: str) -> None:
        nonlocal failure
        checks.append({"name": check, "ok": ok, "detail": detail})
        if not ok and failure is None:
            failure = (check, detail)

    for shape_index, shape_rec in enumerate(record["shapes"]):
        label = spec["shapes"][shape_index]
        path = os.path.join(run_dir, shape_rec["file"])
        with open(path, "rb") as handle:
            data = handle.read()
        if hashlib.sha256(data).hexdigest() != shape_rec["sha256"]:
            raise CheckFailed(
                "single_protocol_line", f"{shape_rec['file']} changed after the worker wrote it"
            )
        saved = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)

        def inputs_for(item: dict[str, Any], _i: int = shape_index) -> list[Any]:
            raw = make_raw(torch, spec, _i, int(item["set_seed"]), int(item["shared_seed"]), device)
            return call_inputs(raw, derive, kwargs)

        expected = expected_outputs(
            state, spec, shape_index, base_fn, inputs_for(shape_rec["correct"][0]), kwargs
        )
        shape_error = 0.0
        shape_ok = True
        for kind, items, outputs in (
            ("correct", shape_rec["correct"], saved["correct"]),
            ("timed", shape_rec["timed"], saved["timed"]),
        ):
            if len(items) != len(outputs):
                raise CheckFailed("single_protocol_line", f"shape {label}: {kind} outputs and seeds disagree")
            if kind == "correct" and len(items) != shape_rec["rotation"]:
                raise CheckFailed(
                    "outputs_match_reference", f"shape {label}: not every input set was checked"
                )
            for item, outs in zip(items, outputs, strict=False):
                inputs = inputs_for(item)
                where = f"shape {label}, set {item['set']}" + (
                    f", timed sample {item['sample']}" if kind == "timed" else ""
                )
                if "checksums" in item:
                    now = [checksum(torch, t) for t in inputs]
                    if not all(
                        math.isclose(a, b, rel_tol=CHECKSUM_REL_TOL, abs_tol=1e-6)
                        for pair_a, pair_b in zip(now, item["checksums"], strict=False)
                        for a, b in zip(pair_a, pair_b, strict=False)
                    ):
                        note("inputs_unchanged", False, f"{where}: the kernel modified its inputs in place")
                        shape_ok = False
                        continue
                problem = compare_structure(outs, expected)
                if problem:
                    note("output_shape_dtype", False, f"{where}: {problem}")
                    shape_ok = False
                    continue
                if not all(bool(torch.isfinite(t).all()) for t in outs if t.is_floating_point()):
                    note("output_not_nan", False, f"{where}: output contains NaN or inf")
                    shape_ok = False
                    continue
                with torch.no_grad():
                    reference = as_outputs(torch, ref_fn(*upcast(torch, inputs, wide), **kwargs))
                error, bad = compare_values(torch, outs, reference, atol, rtol, device, wide)
                shape_error = max(shape_error, error)
                if bad:
                    check = (
                        "outputs_match_reference" if kind == "correct" else "timed_outputs_match_reference"
                    )
                    note(check, False, f"{where}: {bad}")
                    shape_ok = False
        worst = max(worst, shape_error)
        out_bytes = sum(math.prod(shape) * dtype_size(torch, dtype) for shape, dtype in expected)
        first_inputs = inputs_for(shape_rec["correct"][0])
        shape_bytes = spec.get("bytes") or nbytes(first_inputs) + out_bytes
        floor_bytes = spec.get("min_bytes")
        if floor_bytes is None and not shape_rec.get("cache_resident"):
            floor_bytes = shape_rec.get("rotated_bytes") or 0
        floor_ms = None
        if floor_bytes and ceiling:
            floor_ms = floor_bytes / (ceiling * 1e6) / FLOOR_SAFETY[device_kind]
            if shape_rec["ms"] < floor_ms:
                note(
                    "faster_than_floor",
                    False,
                    f"shape {label}: {shape_rec['ms']:.6f} ms moves {floor_bytes} bytes faster than "
                    f"{ceiling:.1f} GB/s x {FLOOR_SAFETY[device_kind]} allows ({floor_ms:.6f} ms)",
                )
                shape_ok = False
        per_shape.append(
            {
                "shape": label,
                "max_abs_error": shape_error,
                "ok": shape_ok,
                "bytes": int(shape_bytes),
                "floor_ms": floor_ms,
            }
        )
        del saved
    if device_kind == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    if failure is None:
        checks.append(
            {
                "name": "outputs_match_reference",
                "ok": True,
                "detail": f"every checked output within atol={atol}, rtol={rtol}; max error {worst:.3g}",
            }
        )
        status, reason = "ok", None
    else:
        check, detail = failure
        bad_status = "invalid" if check == "faster_than_floor" else "incorrect"
        status, reason = bad_status, f"{check}: {detail}"
    return {
        "status": status,
        "reason": reason,
        "checks": checks,
        "max_error": worst,
        "per_shape": per_shape,
        "ceiling_gbps": ceiling,
    }


def dtype_size(torch: Any, name: str) -> int:
    return torch.empty((), dtype=getattr(torch, name.replace("torch.", ""))).element_size()


def expected_outputs(
    state: JudgeState,
    spec: dict[str, Any],
    shape_index: int,
    base_fn: Any,
    inputs: list[Any],
    kwargs: dict[str, Any],
) -> list[tuple[tuple[int, ...], str]]:
    """Shapes and dtypes the baseline's own function returns at this shape (cached per judge)."""
    key = (json.dumps(spec, sort_keys=True), shape_index)
    if key not in state.expected:
        with state.torch.no_grad():
            outs = as_outputs(state.torch, base_fn(*inputs, **kwargs))
        state.expected[key] = [(tuple(t.shape), str(t.dtype)) for t in outs]
    return state.expected[key]


def compare_structure(outs: list[Any], expected: list[tuple[tuple[int, ...], str]]) -> str | None:
    if len(outs) != len(expected):
        return f"{len(outs)} outputs, the baseline returns {len(expected)}"
    for index, (t, (shape, dtype)) in enumerate(zip(outs, expected, strict=False)):
        if tuple(t.shape) != shape or str(t.dtype) != dtype:
            return f"output {index} is {tuple(t.shape)} {t.dtype}, the baseline returns {shape} {dtype}"
    return None


def compare_values(
    torch: Any, outs: list[Any], reference: list[Any], atol: float, rtol: float, device: str, wide: Any
) -> tuple[float, str | None]:
    """Max abs error and a description of the first mismatch (|out - ref| > atol + rtol |ref|), if any."""
    worst = 0.0
    if len(outs) != len(reference):
        return math.inf, f"{len(outs)} outputs, the reference returns {len(reference)}"
    for index, (out, ref) in enumerate(zip(outs, reference, strict=False)):
        got = out.to(device).to(wide)
        want = ref.to(device).to(wide)
        if got.shape != want.shape:
            return math.inf, f"output {index} shape {tuple(got.shape)}, reference {tuple(want.shape)}"
        diff = (got - want).abs()
        error = float(diff.max().item()) if diff.numel() else 0.0
        if not math.isfinite(error):
            return math.inf, f"output {index}: the reference itself is not finite"
        worst = max(worst, error)
        bad = diff > (atol + rtol * want.abs())
        count = int(bad.sum().item())
        if count:
            return worst, (
                f"output {index}: {count} of {bad.numel()} elements differ from the reference "
                f"(max abs error {error:.4g}; atol={atol}, rtol={rtol})"
            )
    return worst, None


def measure_ceiling_gbps(state: JudgeState, device_kind: str) -> float:
    """Device-to-device copy bandwidth (read + write counted), GB/s; measured once per judge."""
    if device_kind in state.ceiling_gbps:
        return state.ceiling_gbps[device_kind]
    torch = state.torch
    if device_kind == "cuda":
        size = max(256 << 20, 4 * cache_bytes(torch, "cuda"))
        src = torch.empty(size, dtype=torch.uint8, device="cuda").fill_(1)
        dst = torch.empty_like(src)
        dst.copy_(src)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(10):
            dst.copy_(src)
        end.record()
        torch.cuda.synchronize()
        seconds = start.elapsed_time(end) / 1e3
        moved = 2 * size * 10
        del src, dst
        torch.cuda.empty_cache()
    else:
        size = 32 << 20
        src = torch.ones(size, dtype=torch.uint8)
        dst = torch.empty_like(src)
        dst.copy_(src)
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter()
            dst.copy_(src)
            best = min(best, time.perf_counter() - t0)
        seconds, moved = best, 2 * size
    state.ceiling_gbps[device_kind] = moved / seconds / 1e9
    return state.ceiling_gbps[device_kind]


# ---- the orchestrator -----------------------------------------------------------------------------------
class Worker:
    """A started worker process waiting for its job line (it has already imported torch when warm)."""

    def __init__(self, python: str, contract: str) -> None:
        self.token = secrets.token_hex(16)
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env[TOKEN_ENV] = self.token
        env[PROTOCOL_FD_ENV] = str(write_fd)
        self.log = tempfile.TemporaryFile()
        self.out = tempfile.TemporaryFile()  # the script's prints: kept apart so forged JSON lines are seen
        self.proc = subprocess.Popen(
            [python, "-I", contract, "worker"],
            stdin=subprocess.PIPE,
            stdout=self.out,
            stderr=self.log,
            pass_fds=(write_fd,),
            start_new_session=True,
            env=env,
        )
        os.close(write_fd)
        self.read_fd = read_fd
        self.chunks: list[bytes] = []
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self.chunks.append(chunk)

    def log_tail(self, limit: int = 4000) -> str:
        """The end of the worker's stderr, then of its stdout."""
        return (tail_of(self.log, limit) + "\n" + tail_of(self.out, limit)).strip()[-limit:]

    def forged_stdout_line(self) -> str | None:
        """A JSON object the script printed on stdout (a forged result line), if any."""
        with contextlib.suppress(OSError, ValueError):
            self.out.seek(0)
            for raw in self.out.read(1 << 22).splitlines():
                text = raw.strip()
                if text.startswith(b"{") and text.endswith(b"}"):
                    with contextlib.suppress(ValueError):
                        if isinstance(json.loads(text), dict):
                            return text[:120].decode("utf-8", "replace")
        return None

    def kill(self) -> None:
        """Kill the worker's process group and every process carrying its token."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        for pid in token_processes(self.token):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)

    def close(self) -> None:
        self.kill()
        with contextlib.suppress(OSError):
            self.log.close()
            self.out.close()
        self.reader.join(timeout=1.0)
        with contextlib.suppress(OSError):
            os.close(self.read_fd)


def tail_of(handle: Any, limit: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 4 * limit))
        return handle.read().decode("utf-8", "replace")[-limit:]
    return ""


def token_processes(token: str) -> list[int]:
    """Processes (of this user) whose environment carries the run token, found through /proc."""
    needle = f"{TOKEN_ENV}={token}".encode()
    found = []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry}/environ", "rb") as handle:
                    if needle in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class Judge:
    """Client side of a persistent judge process (``python -I hk_contract.py judge``)."""

    def __init__(self, python: str, contract: str) -> None:
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [python, "-I", contract, "judge"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            start_new_session=True,
        )
        self.lines: list[bytes] = []
        self.ready_seen = False
        self.ready = threading.Condition()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.ready:
                self.lines.append(line)
                self.ready.notify_all()
        with self.ready:
            self.ready.notify_all()

    def wait_ready(self, timeout_s: float = JUDGE_REPLY_TIMEOUT_S) -> bool:
        """Block until the judge has imported torch (so it does not compete with a worker's timing)."""
        if self.ready_seen:
            return True
        reply = self.next_line(timeout_s)
        self.ready_seen = reply.get("ready") is True
        return self.ready_seen

    def ask(self, job: dict[str, Any], timeout_s: float = JUDGE_REPLY_TIMEOUT_S) -> dict[str, Any]:
        if not self.wait_ready(timeout_s):
            return fail("crashed", f"judge did not start: {self.log_tail()}")
        if self.proc.poll() is not None or self.proc.stdin is None:
            return fail("crashed", f"judge process exited ({self.proc.returncode}): {self.log_tail()}")
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as err:
            return fail("crashed", f"judge process is gone ({err})")
        return self.next_line(timeout_s)

    def next_line(self, timeout_s: float) -> dict[str, Any]:
        """The judge's next reply line, or a failure when it dies or stays silent."""
        deadline = time.monotonic() + timeout_s
        with self.ready:
            while not self.lines:
                if self.proc.poll() is not None:
                    return fail("crashed", f"judge process died ({self.proc.returncode}): {self.log_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close()
                    return fail("timeout", f"judge gave no answer within {timeout_s:.0f} s")
                self.ready.wait(min(left, 0.5))
            line = self.lines.pop(0)
        try:
            return json.loads(line)
        except ValueError:
            return fail("crashed", f"judge answered {line[:200]!r}")

    def log_tail(self, limit: int = 2000) -> str:
        with contextlib.suppress(OSError, ValueError):
            self.log.seek(0)
            return self.log.read().decode("utf-8", "replace")[-limit:].strip()
        return ""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.log.close()


def run_dir_parent() -> str | None:
    """Run directories go to RAM (/dev/shm) when there is one: outputs are written and read once."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def orchestrate(
    script: str,
    *,
    python: str | None = None,
    contract: str | None = None,
    timeout_s: float = 600.0,
    ceiling_gbps: float | None = None,
    judge: Judge | None = None,
    worker: Worker | None = None,
    role: str | None = None,
    on_worker_done: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """One run of ``script``: isolated worker, one protocol line, the judge's verdict; the run JSON."""
    started = time.monotonic()
    script = os.path.abspath(script)
    python = python or sys.executable
    contract = contract or os.path.abspath(__file__)
    role = role or ("baseline" if os.path.basename(script) == "baseline.py" else "candidate")
    result: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "status": "invalid",
        "ok": False,
        "reason": None,
        "ms": None,
        "role": role,
        "contract_sha256": sha256_file(contract),
        "script_sha256": sha256_file(script),
    }
    try:
        spec = read_spec(script)
        result.update(
            target=spec.get("name"),
            shapes=spec.get("shapes"),
            dtype=spec.get("dtype"),
            flops=spec.get("flops"),
        )
    except (OSError, ValueError, SyntaxError) as err:
        result["reason"] = f"baseline_unchanged: cannot read SPEC: {err}"
        return finish(result, started)
    own_judge = judge is None
    judge = judge or Judge(python, contract)
    worker = worker or Worker(python, contract)
    run_dir = tempfile.mkdtemp(prefix="hk_run_", dir=run_dir_parent())
    try:
        judge.wait_ready()
        phase = time.monotonic()
        verdict = run_worker(worker, script, run_dir, timeout_s, on_worker_done)
        phases = {"worker": round(time.monotonic() - phase, 3)}
        result["stderr_tail"] = worker.log_tail()
        if verdict.get("status") != "measured":
            result["reason"] = verdict.get("reason") or "crashed: worker gave no reason"
            return finish(result, started)
        record = verdict["record"]
        reply = judge.ask(
            {"script": script, "run_dir": run_dir, "record": record, "ceiling_gbps": ceiling_gbps}
        )
        phases["judge"] = round(time.monotonic() - phase - phases["worker"], 3)
        merge_run(result, record, reply)
        result["phases_s"] = {
            **phases,
            **{f"worker_{k}": v for k, v in (record.get("phases_s") or {}).items()},
        }
        return finish(result, started)
    finally:
        worker.close()
        if own_judge:
            judge.close()
        with contextlib.suppress(OSError):
            for name in os.listdir(run_dir):
                os.unlink(os.path.join(run_dir, name))
            os.rmdir(run_dir)


def run_worker(
    worker: Worker, script: str, run_dir: str, timeout_s: float, on_worker_done: Callable[[], None] | None
) -> dict[str, Any]:
    """Send the job, wait (timeout kills the group), then judge the protocol channel and the process tree."""
    nonce = secrets.token_hex(16)
    job = {"nonce": nonce, "script": script, "run_dir": run_dir}
    try:
        assert worker.proc.stdin is not None
        worker.proc.stdin.write((json.dumps(job) + "\n").encode())
        worker.proc.stdin.close()
    except OSError:
        pass  # the worker died before reading: judged below by its exit code
    try:
        code = worker.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        worker.kill()
        return fail("timeout", f"worker ran longer than {timeout_s:.0f} s; its process group was killed")
    finally:
        if on_worker_done is not None:
            on_worker_done()
    leftovers = wait_for_leftovers(worker)
    worker.reader.join(timeout=1.0)
    lines = [line for line in b"".join(worker.chunks).split(b"\n") if line.strip()]
    if leftovers:
        return fail(
            "no_leftover_processes",
            f"{len(leftovers)} process(es) of the run were still running "
            f"{LEFTOVER_GRACE_S:.0f} s after the worker exited; killed",
        )
    if not lines:
        if code != 0:
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            return fail(
                "crashed", f"worker died ({how}) before reporting: {worker.log_tail(600).strip()[-600:]}"
            )
        return fail("single_protocol_line", "worker exited (code 0) without writing its protocol line")
    if len(lines) > 1:
        return fail(
            "single_protocol_line", f"{len(lines)} lines on the protocol channel, expected exactly one"
        )
    try:
        record = json.loads(lines[0])
    except ValueError:
        return fail("single_protocol_line", f"protocol line is not JSON: {lines[0][:120]!r}")
    if not isinstance(record, dict) or record.get("nonce") != nonce:
        return fail("single_protocol_line", "protocol line does not carry this run's nonce (forged)")
    if record.get("protocol") != PROTOCOL_VERSION:
        return fail(
            "single_protocol_line", f"protocol {record.get('protocol')!r}, expected {PROTOCOL_VERSION}"
        )
    if code != 0:
        return fail("worker_exit_clean", f"worker exited with code {code} after reporting")
    forged = worker.forged_stdout_line()
    if forged:
        return fail("single_protocol_line", f"the script printed a JSON line on stdout (forged): {forged}")
    if record.get("status") != "measured":
        reason = str(record.get("reason") or "crashed: worker failed without a reason")
        status = "invalid"
        return {"status": status, "reason": reason}
    return {"status": "measured", "record": record}


def wait_for_leftovers(worker: Worker) -> list[int]:
    """Processes of the run still alive LEFTOVER_GRACE_S after the worker exited (then killed)."""
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while True:
        alive = token_processes(worker.token)
        if not alive and not group_alive(worker.proc.pid):
            return []
        if time.monotonic() >= deadline:
            worker.kill()
            return alive or [worker.proc.pid]
        time.sleep(0.02)


def merge_run(result: dict[str, Any], record: dict[str, Any], reply: dict[str, Any]) -> None:
    """The run JSON: worker measurements plus the judge's verdict."""
    judged = {item.get("shape"): item for item in reply.get("per_shape") or []}
    per_shape = []
    for shape in record.get("shapes") or []:
        verdict = judged.get(shape["shape"], {})
        per_shape.append(
            {
                "shape": shape["shape"],
                "ms": shape["ms"],
                "samples_ms": shape["samples_ms"],
                "rotation": shape["rotation"],
                "n_calls": shape["n_calls"],
                "timer": shape["timer"],
                "launch_bound": shape["launch_bound"],
                "cache_resident": shape["cache_resident"],
                "capture_error": shape.get("capture_error"),
                "bytes": verdict.get("bytes"),
                "floor_ms": verdict.get("floor_ms"),
                "max_abs_error": verdict.get("max_abs_error"),
                "ok": verdict.get("ok", False),
            }
        )
    head = per_shape[0] if per_shape else {}
    result.update(
        status=reply.get("status", "invalid"),
        reason=reply.get("reason"),
        ms=head.get("ms"),
        seed_policy=record.get("seed_policy"),
        iters=head.get("n_calls"),
        device=record.get("device"),
        device_kind=record.get("device_kind"),
        rotation=head.get("rotation"),
        bytes=head.get("bytes"),
        max_error=reply.get("max_error"),
        timer=head.get("timer"),
        launch_bound=head.get("launch_bound"),
        per_shape=per_shape,
        checks=reply.get("checks") or [],
        torch=record.get("torch"),
        ceiling_gbps=reply.get("ceiling_gbps"),
    )
    if result["status"] != "ok" and not result.get("reason"):
        result["reason"] = "crashed: judge gave no reason"


def finish(result: dict[str, Any], started: float) -> dict[str, Any]:
    result["ok"] = result.get("status") == "ok"
    if not result["ok"] and result.get("status") == "ok":
        result["status"] = "invalid"
    if result["status"] not in ("ok", "incorrect", "invalid"):
        result["status"] = "invalid"
    result["wall_s"] = round(time.monotonic() - started, 3)
    return result


def main(script: str | None = None) -> None:
    """``python targets/<name>/candidate.py``: one run, one JSON line on stdout; exit 0 only when ok."""
    if script is None:
        argv = sys.argv[1:]
        if argv[:1] == ["worker"]:
            worker_main(argv[1:])
            return
        if argv[:1] == ["judge"]:
            judge_main()
            return
        if argv[:1] == ["run"] and len(argv) == 2:
            script = argv[1]
        else:
            sys.stderr.write("usage: hk_contract.py run SCRIPT | worker [SCRIPT RUN_DIR] | judge\n")
            raise SystemExit(2)
    result = orchestrate(script)
    result.pop("stderr_tail", None)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    raise SystemExit(0 if result.get("ok") else 1)


if __name__ == "__main__":
    main()
