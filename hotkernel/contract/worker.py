"""The worker: imports the script's ``kernel`` (never trusted), builds the inputs, runs the correctness pass
and the timer, keeps the judged outputs on the device, reports one protocol line and waits to be frozen."""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import time
from typing import Any

from .checks import check_wall_clock
from .hygiene import die_with_parent
from .inputs import cache_bytes, exact_fp32, sync_device
from .knobs import PARENT_PID_ENV, PROTOCOL_FD_ENV, PROTOCOL_VERSION, CheckFailed
from .problems import is_problem_ref, load_function, load_problem
from .shape import free_bytes, placement_pad, run_shape
from .spec import SeedSource, apply_threads, cpu_name, device_kind_of, exec_source_module, read_spec, workspace_root
from .transport import export_outputs


def pristine_table(torch: Any) -> dict[str, tuple[Any, str]]:
    """Objects whose attributes the referee relies on; saved before the script is imported."""
    import torch.testing  # noqa: F401

    table: dict[str, tuple[Any, str]] = {}
    for name in (
        "allclose",
        "isclose",
        "equal",
        "randn",
        "rand",
        "randint",
        "empty",
        "empty_like",
        "save",
        "Generator",
        "manual_seed",
        "arange",
        "index_select",
        "where",
        "stack",
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
        "index_copy_",
        "view",
        "clamp",
        "__ge__",
        "__ne__",
        "__and__",
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
        "mem_get_info",
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
    table["builtins.print"] = (__builtins__ if isinstance(__builtins__, dict) else vars(__builtins__), "print")
    return table


def snapshot_functions(torch: Any) -> dict[str, Any]:
    """The referee's objects, saved after ``import torch`` and before the script runs; with them, the wrapper
    ``import torch._dynamo`` puts at ``torch.manual_seed`` (``DYNAMO_SEED``), made now from the saved function, so
    that a script that compiles (and so imports Dynamo) has not patched anything. Dynamo is not imported here: it
    costs a worker about as long as ``import torch`` (2.4 s of a 2.5 GHz core), and few scripts use it."""
    saved = {}
    for name, (owner, attr) in pristine_table(torch).items():
        saved[name] = owner.get(attr) if isinstance(owner, dict) else getattr(owner, attr, None)
    for name, value in globals().items():
        if callable(value) and not name.startswith("__"):
            saved[f"hk_contract.{name}"] = value
    with contextlib.suppress(Exception):  # a torch without torch._disable_dynamo has no such wrapper
        saved[DYNAMO_SEED] = torch._disable_dynamo(saved["torch.manual_seed"])
    return saved


DYNAMO_SEED = "torch.manual_seed:dynamo"


def dynamo_wrapper(current: Any, saved: Any, reference: Any) -> bool:
    """``current`` is Dynamo's wrapper of the saved function: the code and globals of the wrapper
    ``torch._disable_dynamo`` made before the script ran, closing over that very function (it calls it and
    nothing else)."""
    cells = getattr(current, "__closure__", None) or ()
    return (
        reference is not None
        and getattr(current, "__code__", None) is reference.__code__
        and getattr(current, "__globals__", None) is reference.__globals__
        and any(cell.cell_contents is saved for cell in cells)
    )


def patched_functions(torch: Any, saved: dict[str, Any]) -> list[str]:
    table = pristine_table(torch)
    changed = []
    own = globals()
    for name, value in saved.items():
        if name == DYNAMO_SEED:
            continue
        if name.startswith("hk_contract."):
            current = own.get(name.split(".", 1)[1])
        else:
            owner, attr = table[name]
            current = owner.get(attr) if isinstance(owner, dict) else getattr(owner, attr, None)
        if current is not value and not (
            name == "torch.manual_seed" and dynamo_wrapper(current, value, saved.get(DYNAMO_SEED))
        ):
            changed.append(name)
    return changed


def preload_triton(torch: Any) -> None:
    """What a Triton kernel's first launch pays once per process, paid here while a pre-started worker waits
    for its job: the cache key (Triton hashes its own sources and libtriton, 0.38 s on the H200) and the gluon
    import (0.1 s). CPU work only: no CUDA
    context is created. Skipped where torch sees no GPU or Triton is not installed."""
    if importlib.util.find_spec("triton") is None or not torch.cuda.is_available():
        return
    with contextlib.suppress(Exception):  # a Triton that lacks these costs the first launch only
        import triton.runtime.cache as triton_cache

        triton_cache.triton_key()
        import triton.experimental.gluon  # noqa: F401


def worker_main(argv: list[str]) -> None:
    """``worker [SCRIPT RUN_DIR]``: wait for the job line, run it, write one protocol line, wait (frozen)."""
    parent = os.environ.get(PARENT_PID_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None)
    proto_fd = int(os.environ.get(PROTOCOL_FD_ENV, "-1"))
    standalone = proto_fd < 0
    if standalone:  # started by hand: the protocol line goes to the real stdout, prints to stderr
        proto_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    write, hard_exit = os.write, os._exit
    started = time.perf_counter()
    import torch  # imported before the job arrives: a pre-started worker is warm

    preload_triton(torch)
    exact_fp32(torch)
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
        record = run_job(torch, job, saved)
    except CheckFailed as err:
        record = {"status": "failed", "reason": str(err)}
    except BaseException as err:  # noqa: BLE001 - the protocol line must always be written
        record = {"status": "failed", "reason": f"crashed: {type(err).__name__}: {str(err)[:500]}"}
    record["protocol"] = PROTOCOL_VERSION
    record["nonce"] = nonce
    record["phases_s"] = {"import_torch": round(warm_s, 3), "job": round(time.perf_counter() - job_started, 3)}
    payload = (json.dumps(record, allow_nan=True) + "\n").encode()
    while payload:
        payload = payload[write(proto_fd, payload) :]
    if not standalone:
        sys.stdin.readline()  # the orchestrator freezes this process here, the judge reads, then it is killed
    hard_exit(0)  # no atexit hooks, no finalizers: nothing runs after the protocol line


def run_job(torch: Any, job: dict[str, Any], saved: dict[str, Any]) -> dict[str, Any]:
    """Everything a worker does between the job line and the protocol line."""
    script = os.path.abspath(job["script"])
    run_dir = job["run_dir"]
    spec = read_spec(script)
    device_kind = device_kind_of(spec)
    if device_kind == "cuda" and not torch.cuda.is_available():
        raise CheckFailed("device_available", "target wants CUDA but torch.cuda.is_available() is False")
    device = "cuda" if device_kind == "cuda" else "cpu"
    root = workspace_root(script)
    threads = apply_threads(torch, spec)
    marks = {"start": time.perf_counter()}
    if device_kind == "cuda":
        torch.cuda.init()  # the context, timed apart from the script's import
        placement_pad.allocate(torch, int.from_bytes(os.urandom(8), "little"), free_bytes(torch, device_kind))
    marks["cuda_init"] = time.perf_counter()
    try:
        derive = load_function(spec["derive"], root) if spec.get("derive") else None
        module_problem = (
            load_problem(spec["from"], root, spec.get("cases") or []) if is_problem_ref(spec["from"]) else None
        )
        module_name = "hk_script_" + hashlib.sha256(script.encode()).hexdigest()[:12]
        kernel = exec_source_module(module_name, script).kernel
    except SystemExit as err:
        raise CheckFailed("import_failed", f"{os.path.basename(script)} called exit({err.code}) on import") from err
    except Exception as err:  # noqa: BLE001
        raise CheckFailed("import_failed", f"{os.path.basename(script)}: {type(err).__name__}: {err}") from err

    marks["import_script"] = time.perf_counter()
    clocks = (saved["time.perf_counter"], saved["time.monotonic"], saved["torch.cuda.Event.elapsed_time"])
    kwargs = dict(spec.get("kwargs") or {})
    seeds = SeedSource(spec.get("seed"))
    cache = cache_bytes(torch, device_kind)
    await_exit = [(int(pid), None if start is None else int(start)) for pid, start in job.get("await_exit") or []]
    rotations = [int(k) for k in job.get("rotation") or []]  # the verify's first run's K per shape, if any
    shapes_out, kept = [], []
    for shape_index, label in enumerate(spec["shapes"]):
        with torch.no_grad():  # one grad mode for every call (a compiled kernel is compiled once)
            shape, groups = run_shape(
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
                clocks,
                module_problem,
                await_exit,
                rotations[shape_index] if shape_index < len(rotations) else None,
            )
            await_exit = []
        shapes_out.append(shape)
        kept.append(groups)
        patched = patched_functions(torch, saved)
        if patched:
            raise CheckFailed("functions_unpatched", "the script replaced " + ", ".join(sorted(patched)[:8]))
        problem = check_wall_clock(shape["timing"])
        if problem:
            raise CheckFailed("timer_consistent_with_wall_clock", f"shape {label}: {problem}")
    marks["shapes"] = time.perf_counter()
    shutdown_compile_pool()
    sync_device(torch, device_kind)
    for index, (shape, groups) in enumerate(zip(shapes_out, kept, strict=False)):
        shape["outputs"] = export_outputs(torch, groups, run_dir, f"shape{index}.pt", device_kind)
    sync_device(torch, device_kind)
    name = torch.cuda.get_device_name(0) if device_kind == "cuda" else cpu_name()
    keep_alive.extend(kept)  # judged through IPC: the buffers must outlive this function
    if device_kind == "cuda":  # the judge works while this worker is frozen: give it every block but the outputs
        saved["torch.cuda.empty_cache"]()
    marks["export"] = time.perf_counter()
    names = list(marks)
    job_phases = {f"{b}": round(marks[b] - marks[a], 3) for a, b in zip(names, names[1:], strict=False)}
    return {
        "status": "measured",
        "reason": None,
        "device": name,
        "device_kind": device_kind,
        "torch": torch.__version__,
        "seed_policy": seeds.policy,
        "cache_bytes": cache,
        "shapes": shapes_out,
        "job_phases_s": job_phases,
        "placement_pad_bytes": placement_pad.bytes,
        "threads": threads,
    }


keep_alive: list[Any] = []


def shutdown_compile_pool() -> None:
    """Inductor's compile worker pool, if torch started one despite TORCHINDUCTOR_COMPILE_THREADS=1."""
    module = sys.modules.get("torch._inductor.async_compile")
    if module is not None and hasattr(module, "shutdown_compile_workers"):
        with contextlib.suppress(Exception):
            module.shutdown_compile_workers()
