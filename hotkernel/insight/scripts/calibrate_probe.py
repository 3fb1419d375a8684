"""Measure this device's streaming ceilings: a copy (read + write) and a read-only reduction.

Run by ``hotkernel calibrate`` in the user's interpreter:
    python calibrate_probe.py --out RESULT.json [--contract hk_contract.py] [--device cuda|cpu] [--mib N]
Writes one JSON object to --out. Bandwidth counts every byte read and written (decimal GB/s). Timed with the
contract's ``measure`` (a CUDA graph of N calls rotating over K buffer sets that together exceed 4x the L2),
so the ceiling is measured the way kernels are; the probe's own event loop is the fallback, flagged.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import statistics
import sys
import time
import traceback

CACHE_MULTIPLE = 4  # the rotated buffers together exceed this multiple of the L2


def load_contract(path):
    """The contract module loaded by file path, or (None, why)."""
    if not path:
        return None, "no contract file given"
    try:
        spec = importlib.util.spec_from_file_location("hk_contract_for_calibration", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - report it, then use the probe's own timer
        return None, f"{type(exc).__name__}: {exc}"
    if not callable(getattr(module, "measure", None)):
        return None, "the contract has no measure()"
    return module, None


def contract_ms(contract, torch, call, n_sets, device):
    """Per-call ms and timer name from the contract's ``measure``: the buffers never change, so nothing is
    refilled, perturbed, poisoned or checked (every hook but the timer's own is a no-op)."""
    timing = contract.measure(
        call,
        n_sets,
        overhead_call=lambda j: None,  # the perturbation overhead: there is no perturbation
        torch=torch,
        device_kind=device,
        resize=lambda n: None,
        prepare=lambda index: None,
        pick_calls=lambda n: set(),
        pointers=lambda out: (),
        on_sample_done=lambda index, kept, writers, n_calls: None,
        poison=lambda kept: None,
        flush=lambda: None,
        clock=time.perf_counter,
        wall=time.perf_counter,
        elapsed_ms=lambda start, end: start.elapsed_time(end),
    )
    return float(timing["ms"]), str(timing["timer"]), list(timing.get("samples_ms", []))


def event_ms(torch, call, n_sets, device, reps=20, rounds=7):
    """Fallback: median over ``rounds`` of ``reps`` rotated calls between CUDA events (or perf_counter)."""
    for j in range(2 * n_sets):
        call(j)
    samples = []
    for _ in range(rounds):
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for j in range(reps):
                call(j)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / reps)
        else:
            t0 = time.perf_counter()
            for j in range(reps):
                call(j)
            samples.append((time.perf_counter() - t0) * 1e3 / reps)
    return statistics.median(samples), ("cuda-events" if device == "cuda" else "cpu-perf-counter"), samples


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--contract", default=None)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--mib", type=int, default=0, help="MiB per buffer (0: 256 on CUDA, 64 on CPU)")
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
            cache = int(getattr(props, "L2_cache_size", 0) or 0)
            result.update(
                device=props.name,
                uuid=uuid if uuid.startswith("GPU-") else f"GPU-{uuid}",
                l2_bytes=cache,
                sms=props.multi_processor_count,
            )
            size = (args.mib or 256) * 2**20
            free = torch.cuda.mem_get_info()[0]
        else:
            import platform

            cache = 32 * 2**20
            result.update(device=f"cpu ({platform.processor() or platform.machine()})", uuid="cpu")
            size = (args.mib or 64) * 2**20
            free = 16 * size
        n_sets = max(2, math.ceil(CACHE_MULTIPLE * cache / (2 * size)))
        while n_sets > 2 and 2 * n_sets * size > free // 2:
            n_sets -= 1
        if 2 * n_sets * size > free // 2:
            raise RuntimeError(
                f"not enough free device memory for 2 x {n_sets} buffers of {size >> 20} MiB: pass a smaller --mib"
            )
        numel = size // 4
        sources = [torch.rand(numel, device=args.device) for _ in range(n_sets)]
        targets = [torch.empty_like(s) for s in sources]
        contract, why = load_contract(args.contract)
        notes = [] if contract is not None else [f"contract timer not used ({why}); timed with the probe's loop"]

        def copy(j):
            return targets[j % n_sets].copy_(sources[j % n_sets])

        def read(j):
            return torch.sum(sources[j % n_sets])

        timings = {}
        for label, call in (("copy", copy), ("read", read)):
            if contract is not None:
                try:
                    timings[label] = contract_ms(contract, torch, call, n_sets, args.device)
                    continue
                except Exception as exc:  # noqa: BLE001 - fall back, flagged
                    notes.append(
                        f"contract measure failed for {label} ({type(exc).__name__}: {exc}); "
                        "timed with the probe's loop"
                    )
            timings[label] = event_ms(torch, call, n_sets, args.device)
        bytes_per_buffer = numel * 4
        result.update(
            ok=True,
            bytes_per_buffer=bytes_per_buffer,
            rotation=n_sets,
            copy_ms=timings["copy"][0],
            read_ms=timings["read"][0],
            copy_gbps=2 * bytes_per_buffer / (timings["copy"][0] * 1e-3) / 1e9,
            read_gbps=bytes_per_buffer / (timings["read"][0] * 1e-3) / 1e9,
            timer=timings["copy"][1],
            copy_samples_ms=timings["copy"][2],
            read_samples_ms=timings["read"][2],
            notes=notes,
        )
    except Exception as exc:  # noqa: BLE001 - the tool turns this into one line
        result.update(ok=False, error=f"{type(exc).__name__}: {exc}", traceback=traceback.format_exc())
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1)
    return 0 if result["ok"] else 3


if __name__ == "__main__":
    sys.exit(main())
