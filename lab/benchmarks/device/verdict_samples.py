"""Record per-process A/A timing samples on the GPU, for lab/benchmarks/verdict_sim.py (the verdict's errors).

Run on the H200 (torch + CUDA; no hotkernel install needed, the repo only has to be the working directory):

    python3 lab/benchmarks/device/verdict_samples.py --out $OUT/verdict_samples.jsonl

Design (docs/verdicts.md, "Error rates measured on the H200"):
* The unit of replication is the process: every sample comes from a fresh interpreter (CUDA context,
  allocator, clocks all start over), as in ``hotkernel verify``. Processes run one after another.
* Two arms, A and B, run *identical* code. Process p belongs to round p // 2; rounds alternate A,B then B,A
  (ABBA), like verify's interleaving. The analysis pairs the two processes of each round.
* To fit the time budget, every process times *both* kernels (order alternating by process), so one
  interpreter start yields one replicate of each kernel. Kernels are analysed separately; the process is
  still the unit of replication.
* Kernels (no Triton, so no compile-cache effects): ``torch.neg`` and ``F.rms_norm`` on 4096x8192 bf16
  inputs, K input sets of fresh random data rotated so the sets total >= 3x L2.
* Timer (``timer`` field of every line): by default (``--timer auto``) the contract's own timer,
  ``measure`` from templates/hk_contract.py, with the worker's rotation rule, fresh-data refills between
  repetitions and output poisoning, so the samples come from the real timer. ``--timer inline`` (and auto
  when the contract is missing) uses an inline equivalent: a CUDA graph of N rotated calls, warmed up,
  replayed R times between CUDA events, per-call time = elapsed / N. Process value = median of the samples.
  When auto falls back, ``timer_note`` on every line says which contract helper could not be called
  (``--timer contract`` stops instead). The 2026-11-30 H200 samples were all timed inline: the script
  called ``rotation_count`` with two arguments after the contract had added a third, and the fallback
  did not record why (fixed: the call adapts to the signature and the reason is recorded).

Output: one JSONL line per (process, kernel): {kernel, process_index, round, arm, ms, samples, timer, ...}
and ``<out>.meta.json`` (device, versions, settings, wall time). ``--device cpu`` is a smoke test of the
plumbing only (tiny shapes, perf_counter timer); its numbers mean nothing about any GPU.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

KERNELS = ("neg", "rms_norm")
SHAPE = (4096, 8192)  # rows x columns, bf16
CPU_SHAPE = (64, 256)  # --device cpu smoke test only
L2_MULTIPLE = 3.0  # the K rotated input+output sets together span at least this many L2 caches
CALLS_PER_GRAPH = 200  # N: ~7 ms of GPU time per replay for a ~35 us kernel
REPLAYS = 30  # R: timed replays per process; the process value is their median
WARMUP_S = 0.3  # seconds of untimed replays before timing (clocks ramp, allocator settles)


def _ceil_to_multiple(value: int, multiple: int) -> int:
    return multiple * math.ceil(value / multiple)


def _kernel(name: str):
    import torch
    import torch.nn.functional as F

    if name == "neg":
        return lambda x, w: torch.neg(x)
    return lambda x, w: F.rms_norm(x, (x.shape[-1],), w, eps=1e-6)


def _load_contract():
    """templates/hk_contract.py as a module (it is stdlib-only at the top), or None when it is not there."""
    path = Path(__file__).resolve().parents[3] / "templates" / "hk_contract.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("hk_contract", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["hk_contract"] = module
    spec.loader.exec_module(module)
    return module if hasattr(module, "measure") else None


def _contract_rotation(contract, torch, set_bytes: int, device: str) -> tuple[int, bool | None]:
    """K and the cache-resident flag from the contract's ``rotation_count``, whose third parameter (the
    device kind, for its per-device cap) only newer contracts take; a signature it cannot satisfy raises."""
    arguments = [set_bytes, contract.cache_bytes(torch, device)]
    if len(inspect.signature(contract.rotation_count).parameters) >= 3:
        arguments.append(device)
    result = contract.rotation_count(*arguments)
    if isinstance(result, tuple):
        return int(result[0]), bool(result[1])
    return int(result), None


def _contract_timing(contract, fn, input_sets: list[tuple], device: str) -> dict:
    """The contract's own timer, ``measure``, fed as the worker feeds it (fresh-data refills, poisoned
    outputs, read-only L2 sweep). Callbacks are passed by name as far as ``measure``'s signature asks for
    them; a parameter this script does not know raises TypeError (the caller then times inline)."""
    import torch

    k = len(input_sets)
    sweep = None
    if device == "cuda":
        cache = contract.cache_bytes(torch, device)
        sweep = torch.ones(int(contract.CACHE_MULTIPLE * cache) // 4, dtype=torch.int32, device=device)

    def refill(index: int) -> None:
        with torch.no_grad():
            for x, _ in input_sets:
                x.normal_()

    def poison(kept: list | None) -> None:
        if kept is not None:
            contract.poison_tensors(torch, [[o] for o in kept], [t for pair in input_sets for t in pair])

    def flush() -> None:
        if sweep is not None:
            sweep.sum()

    offered = {
        "torch": torch,
        "device_kind": device,
        "prepare": refill,
        "poison": poison,
        "flush": flush,
        "overhead_call": lambda j: None,
        "resize": lambda n: None,
        "pick_calls": lambda n: set(),
        "pointers": lambda out: (),
        "on_sample_done": lambda index, kept, writers, n_calls: None,
        "clock": time.perf_counter,
        "wall": time.monotonic,
        "elapsed_ms": lambda start, end: start.elapsed_time(end),
    }
    parameters = inspect.signature(contract.measure).parameters
    unknown = [
        name for name, p in list(parameters.items())[2:] if p.default is p.empty and name not in offered
    ]
    if unknown:
        raise TypeError(f"hk_contract.measure asks for {unknown}, which this script does not provide")
    kwargs = {name: value for name, value in offered.items() if name in parameters}
    return contract.measure(lambda j: fn(*input_sets[j % k]), k, **kwargs)


def _time_inline_cuda(fn, input_sets: list[tuple]) -> list[float]:
    """CUDA graph of N rotated calls, replayed R times; returns R per-call times in ms."""
    import torch

    k = len(input_sets)
    n_calls = _ceil_to_multiple(CALLS_PER_GRAPH, k)
    outputs: list = [None] * k  # K output slots: outputs rotate too, at most K + 1 live at once
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # eager warm-up on a side stream, as graph capture requires
        for i in range(3 * k):
            outputs[i % k] = fn(*input_sets[i % k])
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(n_calls):
            outputs[i % k] = fn(*input_sets[i % k])
    torch.cuda.synchronize()
    deadline = time.perf_counter() + WARMUP_S
    while time.perf_counter() < deadline:
        graph.replay()
        torch.cuda.synchronize()
    samples = []
    for _ in range(REPLAYS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / n_calls)
    return samples


def _time_inline_cpu(fn, input_sets: list[tuple]) -> list[float]:
    """Plumbing smoke test: perf_counter around N rotated calls, R times; ms per call."""
    k = len(input_sets)
    samples = []
    for _ in range(REPLAYS):
        start = time.perf_counter()
        for i in range(CALLS_PER_GRAPH):
            fn(*input_sets[i % k])
        samples.append((time.perf_counter() - start) * 1e3 / CALLS_PER_GRAPH)
    return samples


def child(process_index: int, device: str, timer_choice: str) -> list[dict]:
    """One process's work: time every kernel once (order alternates by process), one record per kernel."""
    import torch

    contract = _load_contract() if timer_choice in ("auto", "contract") else None
    if timer_choice == "contract" and contract is None:
        raise SystemExit("verdict_samples: --timer contract but templates/hk_contract.py has no measure")
    rows, cols = CPU_SHAPE if device == "cpu" else SHAPE
    dtype = torch.bfloat16
    set_bytes = 2 * rows * cols * dtype.itemsize + cols * dtype.itemsize  # input + output + weight
    k, cache_resident, rotation_note = None, None, None
    if contract is not None:  # the contract's rotation rule
        try:
            k, cache_resident = _contract_rotation(contract, torch, set_bytes, device)
        except Exception as err:  # noqa: BLE001 - the contract changed shape: time inline, say so per line
            rotation_note = f"contract rotation not used: {type(err).__name__}: {err}"
            contract = None
    if k is None:
        l2_bytes = torch.cuda.get_device_properties(0).L2_cache_size if device == "cuda" else 4 << 20
        k = max(3, math.ceil(L2_MULTIPLE * l2_bytes / set_bytes))
    generator = torch.Generator(device=device).manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)
    input_sets = [
        (
            torch.randn(rows, cols, device=device, dtype=dtype, generator=generator),
            torch.rand(cols, device=device, dtype=dtype, generator=generator) + 0.5,
        )
        for _ in range(k)
    ]
    order = KERNELS if process_index % 2 == 0 else tuple(reversed(KERNELS))
    records = []
    for name in order:
        fn = _kernel(name)
        timing, note = None, rotation_note
        if contract is not None:
            try:
                timing = _contract_timing(contract, fn, input_sets, device)
            except Exception as err:  # noqa: BLE001 - the contract's timer changed shape: say so, time inline
                note = f"contract timer not used: {type(err).__name__}: {err}"
        if timing is None and timer_choice == "contract":
            raise SystemExit(f"verdict_samples: --timer contract, but {note}")
        if timing is not None:
            samples, n_calls = timing["samples_ms"], timing["n_calls"]
            timer = f"hk_contract.measure/{timing['timer']}"
        elif device == "cuda":
            samples, timer = _time_inline_cuda(fn, input_sets), "inline-cuda-graph"
            n_calls = _ceil_to_multiple(CALLS_PER_GRAPH, k)
        else:
            samples, timer = _time_inline_cpu(fn, input_sets), "inline-cpu-perf-counter"
            n_calls = CALLS_PER_GRAPH
        records.append(
            {
                "kernel": name,
                "ms": statistics.median(samples),
                "samples": samples,
                "timer": timer,
                "rotation": k,
                "cache_resident": cache_resident,
                "n_calls": n_calls,
                "shape": f"{rows}x{cols}",
                "dtype": "bf16",
                "timer_note": note,
                **_clock_state(device),
            }
        )
    return records


def _clock_state(device: str) -> dict:
    """SM clock and temperature after timing (NVML), to tell drift from noise; {} if unreadable."""
    if device != "cuda":
        return {}
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        return {
            "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
        }
    except Exception:  # noqa: BLE001 - clocks are a diagnostic, never a reason to fail
        return {}


def arm_of(process_index: int) -> str:
    """ABBA: round r = p // 2 runs A then B when r is even, B then A when r is odd."""
    round_index, position = divmod(process_index, 2)
    return "A" if position == round_index % 2 else "B"


def launch(args: argparse.Namespace) -> int:
    """Start the processes one at a time, write the JSONL and the meta file; stop early at the budget."""
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))
    )
    started = time.perf_counter()
    per_process_s: list[float] = []
    completed, failures = 0, []
    with out.open("w") as sink:
        for process_index in range(args.processes):
            elapsed = time.perf_counter() - started
            expected = statistics.median(per_process_s) if per_process_s else 0.0
            if process_index % 2 == 0 and elapsed + 2.2 * expected > args.budget_s:
                break  # not enough time for a whole round (two processes); keep rounds complete
            t0 = time.perf_counter()
            command = [sys.executable, __file__, "--child", str(process_index)]
            command += ["--device", args.device, "--timer", args.timer]
            result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
            per_process_s.append(time.perf_counter() - t0)
            lines = [line for line in result.stdout.splitlines() if line.startswith("[")]
            if result.returncode != 0 or not lines:
                failures.append({"process_index": process_index, "stderr_tail": result.stderr[-2000:]})
                print(f"process {process_index} failed:\n{result.stderr[-2000:]}", file=sys.stderr)
                if len(failures) > 2:
                    break
                continue
            for record in json.loads(lines[-1]):
                record.update(
                    process_index=process_index, round=process_index // 2, arm=arm_of(process_index)
                )
                sink.write(json.dumps(record) + "\n")
            sink.flush()
            completed += 1
            print(f"process {process_index} ({arm_of(process_index)}): {per_process_s[-1]:.1f} s", flush=True)
    meta = {
        "script": "lab/benchmarks/device/verdict_samples.py",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": _device_description(args.device),
        "python": platform.python_version(),
        "processes_completed": completed,
        "failures": failures,
        "wall_s": round(time.perf_counter() - started, 1),
        "median_process_s": round(statistics.median(per_process_s), 2) if per_process_s else None,
        "settings": {
            "shape": "x".join(map(str, SHAPE)),
            "l2_multiple": L2_MULTIPLE,
            "calls_per_graph": CALLS_PER_GRAPH,
            "replays": REPLAYS,
            "warmup_s": WARMUP_S,
            "timer": args.timer,
        },
    }
    Path(str(out) + ".meta.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(json.dumps({k: meta[k] for k in ("processes_completed", "wall_s", "median_process_s")}))
    return 0 if completed >= 6 and not failures else 1


def _device_description(device: str) -> dict:
    code = (
        "import json, torch; p = torch.cuda.get_device_properties(0); print(json.dumps({'name': p.name, "
        "'torch': torch.__version__, 'cuda': torch.version.cuda, 'l2_bytes': p.L2_cache_size}))"
        if device == "cuda"
        else "import json, torch; print(json.dumps({'name': 'cpu', 'torch': torch.__version__}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return json.loads(result.stdout) if result.returncode == 0 else {"error": result.stderr[-500:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="verdict_samples.jsonl", help="JSONL path (meta: <out>.meta.json)")
    parser.add_argument("--processes", type=int, default=48, help="processes to start (even; 2 per round)")
    parser.add_argument("--budget-s", type=float, default=200.0, help="stop starting rounds after this")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu = plumbing smoke test")
    parser.add_argument(
        "--timer", choices=("auto", "contract", "inline"), default="auto", help="see the docstring"
    )
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.device, args.timer)), flush=True)
        return 0
    return launch(args)


if __name__ == "__main__":
    sys.exit(main())
