"""Where a Triton candidate's first launch goes in a fresh worker-like process, and what a pre-start could take.

Each trial is a fresh ``python3`` that imports torch and torch._dynamo (as the contract's worker does before its
job), then optionally runs a ``preload`` (CPU-side Triton set-up, asserting no CUDA context exists after it),
then creates the CUDA context, imports the candidate script, and times its first and second call on the
rmsnorm example's inputs (cProfile of the first call kept). Trials alternate plain / preload, ``--trials`` each.

Usage (device, repo root): ``python3 lab/benchmarks/device/triton_first_launch.py OUT [--trials 3]``; writes
OUT/triton_first_launch.jsonl and OUT/triton_first_launch_profile.txt.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

TRIAL = r'''
import cProfile, importlib.util, io, json, pstats, subprocess, sys, time
t0 = time.perf_counter()
import torch
import torch._dynamo
marks = {"import_torch_dynamo": time.perf_counter() - t0}
preload = sys.argv[1] == "preload"
if preload:
    t = time.perf_counter()
    import triton
    from triton.runtime.driver import driver
    active = driver.active
    utils = active.utils
    marks["preload"] = time.perf_counter() - t
    marks["cuda_initialized_after_preload"] = torch.cuda.is_initialized()
    smi = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"], capture_output=True,
                         text=True).stdout.split()
    marks["own_pid_on_gpu_after_preload"] = str(__import__("os").getpid()) in smi
t = time.perf_counter()
torch.cuda.init()
torch.empty(1, device="cuda")
marks["cuda_init"] = time.perf_counter() - t
t = time.perf_counter()
spec = importlib.util.spec_from_file_location("cand", sys.argv[2])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
marks["import_script"] = time.perf_counter() - t
x = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16)
w = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
profiler = cProfile.Profile()
t = time.perf_counter()
profiler.enable()
module.kernel(x, w, eps=1e-6)
torch.cuda.synchronize()
profiler.disable()
marks["first_call"] = time.perf_counter() - t
t = time.perf_counter()
module.kernel(x, w, eps=1e-6)
torch.cuda.synchronize()
marks["second_call"] = time.perf_counter() - t
text = io.StringIO()
pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(35)
print(json.dumps({"mode": sys.argv[1], **{k: (round(v, 4) if isinstance(v, float) else v) for k, v in marks.items()},
                  "profile": text.getvalue()}))
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    candidate = str(REPO / "targets" / "rmsnorm" / "candidate.py")
    profiles = []
    with open(args.out / "triton_first_launch.jsonl", "a", encoding="utf-8") as log:
        for trial in range(args.trials):
            for mode in ("plain", "preload"):
                started = time.monotonic()
                proc = subprocess.run([sys.executable, "-c", TRIAL, mode, candidate], capture_output=True, text=True,
                                      timeout=120)
                try:
                    row = json.loads(proc.stdout.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    row = {"mode": mode, "error": proc.stderr[-2000:]}
                profiles.append(f"## trial {trial} {mode}\n{row.pop('profile', '')}")
                row.update(trial=trial, process_wall_s=round(time.monotonic() - started, 3))
                log.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)
    (args.out / "triton_first_launch_profile.txt").write_text("\n".join(profiles), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
