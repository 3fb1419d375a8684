"""Measure this device's streaming ceilings: a copy (read + write) and a read-only reduction.

Run by ``hotkernel calibrate`` in the user's interpreter:
    python calibrate_probe.py --out RESULT.json [--contract hk_contract.py] [--device cuda|cpu] [--mib N]
Writes one JSON object to --out. Bandwidth counts every byte read and written (decimal GB/s).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
import traceback


def load_contract_measure(path):
    """The contract's ``measure`` timer, loaded by file path (None when absent or unloadable)."""
    if not path:
        return None, "no contract given"
    try:
        spec = importlib.util.spec_from_file_location("hk_contract_for_calibration", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, "measure", None), None
    except Exception as exc:  # noqa: BLE001 - report, then use the probe's own timer
        return None, f"{type(exc).__name__}: {exc}"


def ms_from_measure_result(value):
    """Accept what a timer may return: a float of ms, a dict with 'ms', or an object with ``.ms``."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict) and "ms" in value:
        return float(value["ms"])
    if hasattr(value, "ms"):
        return float(value.ms)
    raise TypeError(f"cannot read milliseconds from {type(value).__name__}")


def event_timer_ms(torch, fn, device, reps, rounds):
    """Median over ``rounds`` of (time of ``reps`` back-to-back calls) / reps, CUDA events or perf_counter."""
    for _ in range(3):
        fn()
    samples = []
    for _ in range(rounds):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(reps):
                fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / reps)
        else:
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            samples.append((time.perf_counter() - t0) * 1e3 / reps)
    return statistics.median(samples), samples


def time_fn(torch, fn, device, measure, notes, reps, rounds):
    """Time with the contract's ``measure`` when it takes ``measure(fn)``; else the probe's event timer."""
    if measure is not None and device == "cuda":
        try:
            return ms_from_measure_result(measure(fn)), "contract-measure", []
        except Exception as exc:  # noqa: BLE001
            notes.append(f"contract measure(fn) unusable ({type(exc).__name__}: {exc}); used CUDA events")
    ms, samples = event_timer_ms(torch, fn, device, reps, rounds)
    return ms, ("cuda-events" if device == "cuda" else "cpu-perf-counter"), samples


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--contract", default=None)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--mib", type=int, default=0, help="MiB per buffer (0: from L2 size)")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    result = {"ok": False}
    try:
        import torch

        result["torch"] = torch.__version__
        if args.device == "cuda":
            if not torch.cuda.is_available():
                raise RuntimeError("torch.cuda.is_available() is False in this interpreter")
            props = torch.cuda.get_device_properties(0)
            uuid = str(getattr(props, "uuid", "") or "")
            result.update(device=props.name, uuid=uuid if uuid.startswith("GPU-") else f"GPU-{uuid}",
                          l2_bytes=getattr(props, "L2_cache_size", None), sms=props.multi_processor_count)
            free, _total = torch.cuda.mem_get_info()
            l2 = int(result["l2_bytes"] or 0)
            size = args.mib * 2**20 if args.mib else max(256 * 2**20, 8 * l2)
            size = min(size, free // 6)
        else:
            import platform

            cpu_name = platform.processor() or platform.machine()
            result.update(device=f"cpu ({cpu_name})", uuid="cpu", l2_bytes=None)
            size = (args.mib or 64) * 2**20
        n = size // 4
        src = torch.rand(n, device=args.device, dtype=torch.float32)
        dst = torch.empty_like(src)
        measure, load_error = load_contract_measure(args.contract)
        notes = [] if load_error is None else [f"contract not loaded: {load_error}"]
        copy_ms, timer, copy_samples = time_fn(
            torch, lambda: dst.copy_(src), args.device, measure, notes, args.reps, args.rounds)
        read_ms, _, read_samples = time_fn(
            torch, lambda: torch.sum(src), args.device, measure, notes, args.reps, args.rounds)
        bytes_per_buffer = n * 4
        result.update(
            ok=True,
            bytes_per_buffer=bytes_per_buffer,
            copy_ms=copy_ms,
            read_ms=read_ms,
            copy_gbps=2 * bytes_per_buffer / (copy_ms * 1e-3) / 1e9,
            read_gbps=bytes_per_buffer / (read_ms * 1e-3) / 1e9,
            timer=timer,
            copy_samples_ms=copy_samples,
            read_samples_ms=read_samples,
            notes=notes,
        )
    except Exception as exc:  # noqa: BLE001 - the tool turns this into one line
        result.update(ok=False, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1)
    return 0 if result["ok"] else 3


if __name__ == "__main__":
    sys.exit(main())
