"""Capture real tool outputs on the lent H200 for the parsers' test fixtures (run on the device).

Usage (device): python3 lab/benchmarks/device/capture_fixtures.py OUT_DIR
Writes OUT_DIR/h200/... and OUT_DIR/capture_log.txt (every command, its exit code and timing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(sys.argv[1]) / "h200"
OUT.mkdir(parents=True, exist_ok=True)
LOG = OUT / "capture_log.txt"
NCU = shutil.which("ncu") or "/opt/nvidia/nsight-compute/2025.3.1/ncu"


def sh(name: str, argv: list[str], *, timeout: float = 240, env: dict | None = None, save: bool = True) -> int:
    """Run argv, save stdout/stderr under OUT/<name>.{out,err}, log the command."""
    t0 = time.time()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = 124, (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or ""), f"TIMEOUT after {timeout}s"
    except FileNotFoundError as exc:
        rc, out, err = 127, "", str(exc)
    if save:
        (OUT / f"{name}.out").write_text(out)
        if err:
            (OUT / f"{name}.err").write_text(err)
    with LOG.open("a") as log:
        log.write(f"$ {' '.join(argv)}\n# rc={rc} wall={time.time() - t0:.1f}s stdout={len(out)}B stderr={len(err)}B\n")
    return rc


WORKLOAD = r'''
import torch, triton, triton.language as tl, torch.nn.functional as F

@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * n_cols + offs, (x * rstd * w).to(tl.bfloat16), mask=mask)

def rmsnorm(x, w, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=8)
    return y

torch.manual_seed(0)
x = torch.randn(4096, 8192, device="cuda", dtype=torch.bfloat16)
w = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
W = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
v = torch.randn(8192, device="cuda", dtype=torch.bfloat16)
for _ in range(3):
    rmsnorm(x, w); F.rms_norm(x, (8192,), w, 1e-6); torch.softmax(x, -1); torch.mv(W, v); torch.neg(x)
torch.cuda.synchronize()
'''

TRACE = r'''
import json, sys, torch
exec(open(sys.argv[1]).read())
from torch.profiler import profile, ProfilerActivity, record_function
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    for _ in range(5):
        with record_function("step"):
            rmsnorm(x, w); F.rms_norm(x, (8192,), w, 1e-6); torch.softmax(x, -1); torch.mv(W, v)
    torch.cuda.synchronize()
print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25))
print("=====BY_SHAPE=====")
print(prof.key_averages(group_by_input_shape=True).table(sort_by="cuda_time_total", row_limit=25))
prof.export_chrome_trace(sys.argv[2])
'''


def main() -> None:
    work = OUT / "work"
    work.mkdir(exist_ok=True)
    (work / "workload.py").write_text(WORKLOAD)
    (work / "trace.py").write_text(TRACE)
    cache = Path("/tmp/hk_triton_cache")
    shutil.rmtree(cache, ignore_errors=True)
    env = {"TRITON_CACHE_DIR": str(cache)}

    fields = ("index,name,uuid,driver_version,memory.total,memory.used,power.limit,power.max_limit,"
              "clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,compute_cap,pci.bus_id")
    sh("nvidia_smi_query", ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"])
    sh("nvidia_smi_query_header", ["nvidia-smi", f"--query-gpu={fields}", "--format=csv"])
    sh("nvidia_smi_q", ["nvidia-smi", "-q"])
    sh("nvidia_smi_apps", ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv"])
    sh("versions", ["bash", "-c", f"python3 -c 'import torch,triton;print(torch.__version__, triton.__version__, torch.version.cuda)'; {NCU} --version; nvcc --version; cuobjdump --version; uname -a; python3 --version"])
    sh("nvml_dump", ["python3", "-c", NVML_DUMP])

    # the workload once, to fill the Triton cache (real cubin + metadata)
    sh("workload_run", ["python3", str(work / "workload.py")], env=env)
    # torch.profiler
    sh("torch_profiler_table", ["python3", str(work / "trace.py"), str(work / "workload.py"), str(OUT / "torch_trace.json")], env=env)
    # Nsight Compute: details CSV, raw CSV and a .ncu-rep
    rep = OUT / "ncu_workload"
    base = [NCU, "--clock-control", "none", "--cache-control", "none", "--launch-skip", "5", "--launch-count", "5"]
    sh("ncu_details_csv", base + ["--csv", "--page", "details", "python3", str(work / "workload.py")], env=env)
    sh("ncu_rep", base + ["--set", "basic", "-f", "-o", str(rep), "python3", str(work / "workload.py")], env=env)
    sh("ncu_import_details_csv", [NCU, "--import", str(rep) + ".ncu-rep", "--csv", "--page", "details"])
    sh("ncu_import_raw_csv", [NCU, "--import", str(rep) + ".ncu-rep", "--csv", "--page", "raw"])
    sh("ncu_kernel_regex_csv", [NCU, "--clock-control", "none", "-k", "regex:rmsnorm", "-c", "2", "--csv", "--page", "details",
                                "--metrics", "gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed",
                                "python3", str(work / "workload.py")], env=env)
    sh("ncu_report_module", ["bash", "-c", f"ls -d $(dirname $(readlink -f {NCU}))/extras/python 2>&1; find / -name ncu_report.py -not -path '*/proc/*' 2>/dev/null | head"])
    sh("ncu_bad_binary", [NCU, "--csv", "/bin/true"])
    # nsys: the known failure (qdstrm without importer)
    nsys = "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys"
    sh("nsys_which", ["bash", "-c", "command -v nsys; ls /opt/nvidia 2>&1; ls /opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64 | head -50"])
    sh("nsys_profile", [nsys, "profile", "-o", "/tmp/hk_nsys", "-f", "true", "python3", "-c", "import torch; x=torch.ones(10,device='cuda'); torch.cuda.synchronize()"], timeout=120)
    sh("nsys_ls", ["bash", "-c", "ls -la /tmp/hk_nsys* 2>&1; rm -f /tmp/hk_nsys*"])
    # Triton cache: copy the rmsnorm kernel's directory, and disassemble its cubin
    dest = OUT / "triton_cache"
    for cubin in cache.rglob("*.cubin"):
        if "rmsnorm" in cubin.name:
            shutil.copytree(cubin.parent, dest / cubin.parent.name, dirs_exist_ok=True)
            sh("cuobjdump_sass", ["cuobjdump", "-sass", str(cubin)])
            sh("cuobjdump_res_usage", ["cuobjdump", "-res-usage", str(cubin)])
            sh("cuobjdump_ptx_from_cubin", ["cuobjdump", "-ptx", str(cubin)])
    sh("cuobjdump_non_cuda", ["cuobjdump", "-sass", "/bin/ls"])
    shutil.rmtree(work, ignore_errors=True)


NVML_DUMP = r'''
import json, pynvml as n
n.nvmlInit()
out = {"driver": n.nvmlSystemGetDriverVersion(), "cuda_driver": n.nvmlSystemGetCudaDriverVersion_v2(), "gpus": []}
for i in range(n.nvmlDeviceGetCount()):
    h = n.nvmlDeviceGetHandleByIndex(i)
    mem = n.nvmlDeviceGetMemoryInfo(h)
    g = {"index": i, "name": n.nvmlDeviceGetName(h), "uuid": n.nvmlDeviceGetUUID(h),
         "memory_total": mem.total, "memory_used": mem.used,
         "power_limit_mw": n.nvmlDeviceGetEnforcedPowerLimit(h),
         "power_max_mw": n.nvmlDeviceGetPowerManagementLimitConstraints(h)[1],
         "cc": n.nvmlDeviceGetCudaComputeCapability(h),
         "clock_sm": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM), "clock_mem": n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM),
         "max_clock_sm": n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM), "max_clock_mem": n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_MEM),
         "temperature": n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU),
         "procs": [p.pid for p in n.nvmlDeviceGetComputeRunningProcesses(h)],
         "sm_count_attr": None}
    out["gpus"].append(g)
print(json.dumps(out, indent=1, default=str))
'''

if __name__ == "__main__":
    main()
