"""Where a forked worker's first torch.compile call spends its time, against an exec'd process's.

A child runs what a worker runs for the rmsnorm `compile` competitor: ``torch.cuda.init()``, import of
``targets/rmsnorm/competitor_compile.py``, then one call on the target's inputs, with the inductor cache already
warm. It runs exec'd (a new interpreter, as workers were before the fork server) and forked from a parent that
did what the fork server does (``import torch``, Triton's key), optionally after more set-up in the parent
(``--modes``). Each child writes its phase times and a cProfile of the import and the first call.

Usage (device, repo root): python3 lab/benchmarks/device/compile_fork_diag.py OUT_DIR [--repeat 2]
(HK_DIAG_DEVICE=cpu runs the same on the CPU.)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import cProfile, importlib.util, io, json, os, pstats, sys, time
def child(out_prefix, marks):
    import torch
    marks["import_torch"] = time.perf_counter()
    dev = os.environ.get("HK_DIAG_DEVICE", "cuda")
    if dev == "cuda":
        torch.cuda.init()
        torch.ones(1, device="cuda")
    marks["cuda_init"] = time.perf_counter()
    prof = cProfile.Profile()
    prof.enable()
    spec = importlib.util.spec_from_file_location("hk_competitor", "targets/rmsnorm/competitor_compile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    marks["import_script"] = time.perf_counter()
    gen = torch.Generator(device=dev).manual_seed(0)
    x = torch.randn(4096, 8192, device=dev, dtype=torch.bfloat16, generator=gen)
    w = torch.randn(8192, device=dev, dtype=torch.bfloat16, generator=gen)
    with torch.no_grad():
        module.kernel(x, w)
    if dev == "cuda":
        torch.cuda.synchronize()
    prof.disable()
    marks["first_call"] = time.perf_counter()
    with torch.no_grad():
        module.kernel(x, w)
    if dev == "cuda":
        torch.cuda.synchronize()
    marks["second_call"] = time.perf_counter()
    for order in ("cumulative", "tottime"):
        buf = io.StringIO()
        pstats.Stats(prof, stream=buf).sort_stats(order).print_stats(45)
        with open(f"{out_prefix}_{order}.txt", "w") as handle:
            handle.write(buf.getvalue())
    names = list(marks)
    phases = {b: round(marks[b] - marks[a], 3) for a, b in zip(names, names[1:])}
    print(json.dumps(phases), flush=True)
"""

PARENT = r"""
import os, sys, time
marks = {"start": time.perf_counter()}
mode = sys.argv[1]
out_prefix = sys.argv[2]
exec(compile(CHILD_SRC, "child", "exec"))
if mode == "exec":
    child(out_prefix, marks)
    sys.exit(0)
import torch
import contextlib
with contextlib.suppress(Exception):
    import triton.runtime.cache as triton_cache
    triton_cache.triton_key()
if mode in ("fork_preimport", "fork_warm"):
    import torch._dynamo, torch._inductor.compile_fx
    print("parent_cuda_initialized", torch.cuda.is_initialized(), flush=True)
if mode == "fork_warm":
    torch.compile(lambda t: (t + 1).sum())(torch.randn(8))
    torch._dynamo.reset()
parent_s = time.perf_counter() - marks["start"]
pid = os.fork()
if pid == 0:
    marks = {"start": time.perf_counter()}
    try:
        child(out_prefix, marks)
    except BaseException:
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(0)
os.waitpid(pid, 0)
print("parent_s", round(parent_s, 3), flush=True)
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--modes", default="exec,fork,fork_preimport,fork_warm")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="hk_diag_inductor_"))
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    env["CHILD_SRC"] = CHILD
    parent = PARENT.replace("CHILD_SRC", "os.environ['CHILD_SRC']")
    rows = []
    runs = [("exec", 0)]  # the first run fills the inductor cache
    runs += [(mode, i) for i in range(1, args.repeat + 1) for mode in args.modes.split(",")]
    for mode, i in runs:
        prefix = os.path.join(args.out, f"prof_{mode}_{i}")
        started = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", parent, mode, prefix], env=env, capture_output=True, text=True, timeout=600
        )
        wall = round(time.perf_counter() - started, 3)
        phases = None
        for line in proc.stdout.splitlines():
            if line.startswith("{"):
                phases = json.loads(line)
        row = {"mode": mode, "repeat": i, "rc": proc.returncode, "wall_s": wall, "phases_s": phases}
        row["stdout_tail"] = proc.stdout[-300:]
        row["stderr_tail"] = proc.stderr[-1500:]
        rows.append(row)
        print(json.dumps(row), flush=True)
    with open(os.path.join(args.out, "diag.jsonl"), "w") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
