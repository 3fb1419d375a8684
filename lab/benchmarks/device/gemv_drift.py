"""Does the gemv baseline's time move with the process or with where its weight lies in memory?

Two syncs on one H200 (lab/benchmarks/evidence/h200_sync/run_1320/) timed the Triton candidate at 32.94 us both times
and torch.mv (cuBLAS) at 35.54 us, then 34.82 us: the second headline fell outside the first's interval. This
times both, in one process, on ``--placements`` weights allocated side by side (each a different physical range),
by CUDA-graph replay of ``--iters`` calls alternating over two rotated weights as the contract does, and names the
kernel cuBLAS ran. The placements are timed in order, then again in reverse (``--passes 2``): a placement that keeps
its time in both passes, while others keep theirs, points at memory placement rather than drift in time; run it in
several fresh processes to see what moves only from process to process. ``--pad-mib`` allocates that much before
anything else, which moves every later allocation: fresh processes with the same pad show whether the same
allocations land in the same place, and different pads whether the time follows.

Usage (CUDA, repo root):
    python lab/benchmarks/device/gemv_drift.py OUT.jsonl [--placements 6] [--passes 2] [--pad-mib 0] [--iters 256] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "lab" / "speedrun")]

import torch  # noqa: E402
from check_variants import graph_replay_ms, load_module  # noqa: E402

from kernels.gemv import gemv as baseline  # noqa: E402


def replay_ms(fn: object, weights: list[torch.Tensor], x: torch.Tensor, iters: int, reps: int) -> float:
    """Median per-call ms of ``iters`` calls alternating over ``weights``, captured in one CUDA graph, over ``reps``
    replays (lab/speedrun/check_variants.py's `graph_replay_ms`)."""
    for w in weights:
        fn(w, x)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(iters):
            fn(weights[i % len(weights)], x)
    graph.replay()
    torch.cuda.synchronize()
    return graph_replay_ms(graph, iters, reps)


def cublas_kernel_name(w: torch.Tensor, x: torch.Tensor) -> str:
    """The name of the CUDA kernel torch.mv launches for this weight."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        baseline(w, x)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    return names[0] if names else "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="JSONL file to append one line per placement to")
    parser.add_argument("--placements", type=int, default=6, help="weight pairs allocated side by side")
    parser.add_argument("--passes", type=int, default=2, help="passes over the placements, every other reversed")
    parser.add_argument("--pad-mib", type=int, default=0, help="MiB allocated (and kept) before the inputs")
    parser.add_argument("--iters", type=int, default=256, help="calls per CUDA-graph replay")
    parser.add_argument("--reps", type=int, default=5, help="replays timed per placement and side")
    args = parser.parse_args()
    torch.manual_seed(0)
    pad = torch.empty(args.pad_mib << 20, device="cuda", dtype=torch.uint8) if args.pad_mib else None
    candidate = load_module(ROOT / "targets" / "gemv" / "candidate.py").kernel
    x = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
    pairs = [[torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
             for _ in range(args.placements)]
    kernel = cublas_kernel_name(pairs[0][0], x)
    with args.out.open("a") as out:
        order = [(p, i) for p in range(args.passes) for i in (range(len(pairs)) if p % 2 == 0
                                                              else reversed(range(len(pairs))))]
        for pass_index, index in order:
            weights = pairs[index]
            row = {"pid": os.getpid(), "pad_mib": args.pad_mib, "pass": pass_index, "placement": index,
                   "address": weights[0].data_ptr(), "cublas_kernel": kernel}
            for side, fn in (("baseline", baseline), ("candidate", candidate)):
                row[f"{side}_us"] = round(replay_ms(fn, weights, x, args.iters, args.reps) * 1e3, 3)
            row["speedup"] = round(row["baseline_us"] / row["candidate_us"], 4)
            out.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    del pad


if __name__ == "__main__":
    main()
