"""Run a user script under torch.profiler and write what ``hotkernel trace`` reads.

Run by ``hotkernel trace`` in the user's interpreter:
    python trace_wrapper.py --out DIR [--top N] [--no-chrome-trace] -- SCRIPT [ARGS...]
Writes into DIR: ``ops.json`` (aten ops grouped by input shape, and GPU kernels), ``table.txt`` (the full
key_averages table), ``trace.json`` (chrome trace) and ``status.json`` (ok, or the script's error).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time
import traceback


def attr(obj, *names, default=0.0):
    """The first attribute present (torch renamed cuda_* to device_* in 2.4)."""
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return default


def is_device_event(event, torch):
    device_type = getattr(event, "device_type", None)
    return device_type is not None and device_type != torch.autograd.DeviceType.CPU


def summarise_ops(prof, torch, use_device):
    """aten ops grouped by input shape, heaviest first (device time when a GPU ran, else CPU time)."""
    rows = []
    for avg in prof.key_averages(group_by_input_shape=True):
        if not avg.key.startswith("aten::"):
            continue
        rows.append(
            {
                "name": avg.key,
                "input_shapes": [list(s) if isinstance(s, (list, tuple)) else s for s in (avg.input_shapes or [])],
                "calls": int(avg.count),
                "cpu_time_total_us": float(avg.cpu_time_total),
                "self_cpu_time_total_us": float(avg.self_cpu_time_total),
                "device_time_total_us": float(attr(avg, "device_time_total", "cuda_time_total")),
                "self_device_time_total_us": float(attr(avg, "self_device_time_total", "self_cuda_time_total")),
            }
        )
    key = "device_time_total_us" if use_device else "self_cpu_time_total_us"
    rows.sort(key=lambda row: row[key], reverse=True)
    return rows, key


def summarise_kernels(prof, torch):
    """Device kernels by name: total/mean time and calls, from the profiler's events."""
    kernels = {}
    for event in prof.events():
        if not is_device_event(event, torch):
            continue
        duration = float(event.time_range.elapsed_us())
        entry = kernels.setdefault(event.name, {"name": event.name, "calls": 0, "total_us": 0.0})
        entry["calls"] += 1
        entry["total_us"] += duration
    return sorted(kernels.values(), key=lambda k: k["total_us"], reverse=True)


def main() -> int:
    argv = sys.argv[1:]
    if "--" not in argv:
        print("usage: trace_wrapper.py --out DIR [--top N] -- SCRIPT [ARGS...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--no-chrome-trace", action="store_true")
    args = parser.parse_args(argv[:split])
    script, script_args = argv[split + 1], argv[split + 2 :]
    os.makedirs(args.out, exist_ok=True)
    status = {"ok": False, "script": script}

    import torch
    from torch.profiler import ProfilerActivity, profile

    use_cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_cuda else [])
    status.update(torch=torch.__version__, cuda=use_cuda, device=torch.cuda.get_device_name(0) if use_cuda else "cpu")
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    start = time.perf_counter()
    with profile(activities=activities, record_shapes=True) as prof:
        try:
            runpy.run_path(script, run_name="__main__")
            status["ok"] = True
        except SystemExit as exc:
            status["ok"] = exc.code in (None, 0)
            if not status["ok"]:
                status["error"] = f"SystemExit({exc.code!r})"
        except BaseException as exc:  # noqa: BLE001 - reported in status.json, the tool says it in one line
            status["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
            status["traceback"] = traceback.format_exc()
        if use_cuda:
            torch.cuda.synchronize()
    status["wall_s"] = round(time.perf_counter() - start, 3)
    ops, sort_key = summarise_ops(prof, torch, use_cuda)
    kernels = summarise_kernels(prof, torch)
    with open(os.path.join(args.out, "ops.json"), "w") as handle:
        json.dump({"ops": ops, "ops_sorted_by": sort_key, "kernels": kernels}, handle)
    averages = prof.key_averages(group_by_input_shape=True)
    try:  # torch >= 2.4 names it device_time_total; older releases only know cuda_time_total
        table = averages.table(sort_by="device_time_total" if use_cuda else "cpu_time_total", row_limit=-1)
    except (AttributeError, KeyError):
        table = averages.table(sort_by="cuda_time_total", row_limit=-1)
    with open(os.path.join(args.out, "table.txt"), "w") as handle:
        handle.write(table)
    if not args.no_chrome_trace:
        prof.export_chrome_trace(os.path.join(args.out, "trace.json"))
    with open(os.path.join(args.out, "status.json"), "w") as handle:
        json.dump(status, handle)
    return 0 if status["ok"] else 3


if __name__ == "__main__":
    sys.exit(main())
