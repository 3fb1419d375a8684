"""What GPUs this machine has: NVML first (nvidia-ml-py, imported lazily), ``nvidia-smi`` CSV as the fallback,
and a plain "no NVIDIA GPU or driver found" result (never an exception) when neither answers.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from pydantic import BaseModel, Field

from hotkernel._util.nvml import nvml_session
from hotkernel._util.procs import find_executable, run_command
from hotkernel.errors import HotkernelError
from hotkernel.insight.base import Hints, InsightContext
from hotkernel.insight.specs import find_gpu

SMI_FIELDS = (
    "index",
    "name",
    "uuid",
    "driver_version",
    "memory.total",
    "memory.used",
    "power.limit",
    "power.max_limit",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
    "temperature.gpu",
    "compute_cap",
    "pci.bus_id",
)
SMI_HEADER_ALIASES = {  # nvidia-smi prints some query fields under their long names in the CSV header
    "clocks.current.sm": "clocks.sm",
    "clocks.current.memory": "clocks.mem",
    "clocks.max.memory": "clocks.max.mem",
    "clocks.max.graphics": "clocks.max.gr",
}
SMI_APP_FIELDS = ("gpu_uuid", "pid", "process_name", "used_memory")
SMI_TIMEOUT_S = 20.0
NO_GPU = "no NVIDIA GPU or driver found"


class GpuProcess(BaseModel):
    pid: int
    name: str | None = None
    used_memory_mib: float | None = None


class GpuDevice(BaseModel):
    """One GPU as the driver reports it. Fields the driver does not support are None."""

    index: int
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    power_limit_w: float | None = Field(default=None, description="enforced power limit")
    power_max_w: float | None = Field(default=None, description="largest settable power limit")
    compute_capability: str | None = None
    sm_clock_mhz: int | None = None
    mem_clock_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    mem_clock_max_mhz: int | None = None
    temperature_c: int | None = None
    processes: list[GpuProcess] = []
    roofline_entry: str | None = Field(default=None, description="key in the roofline table, None if unknown")
    roofline_warning: str | None = None


class GpuInfo(BaseModel):
    """Every GPU here; ``source`` is nvml, nvidia-smi or none (then ``message`` says why)."""

    source: str
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    gpus: list[GpuDevice] = []
    message: str | None = None
    warnings: list[str] = []


def gpu_info() -> GpuInfo:
    """Query NVML; on failure ``nvidia-smi``; with neither, a result saying no GPU was found."""
    warnings: list[str] = []
    try:
        info = _from_nvml()
    except Exception as exc:  # NVML raises many library-specific types; any failure means "try nvidia-smi"
        warnings.append(f"NVML unavailable: {_short(exc)}")
    else:
        info.warnings = warnings + info.warnings
        return _with_roofline(info)
    smi = find_executable("nvidia-smi")
    if smi is None:
        return GpuInfo(
            source="none", message=f"{NO_GPU} (NVML failed and nvidia-smi is not on PATH)", warnings=warnings
        )
    result = run_command(
        [str(smi), f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits"],
        timeout_s=SMI_TIMEOUT_S,
        name="nvidia-smi",
    )
    if not result.ok:
        why = _first_line(result.output(2000)) or f"exit {result.returncode}"
        return GpuInfo(source="none", warnings=warnings, message=f"{NO_GPU} (nvidia-smi: {why})")
    gpus = parse_smi_csv(result.stdout(), SMI_FIELDS)
    apps = run_command(
        [str(smi), f"--query-compute-apps={','.join(SMI_APP_FIELDS)}", "--format=csv,noheader,nounits"],
        timeout_s=SMI_TIMEOUT_S,
        name="nvidia-smi-apps",
    )
    if apps.ok:
        _attach_processes(gpus, apps.stdout())
    driver = _smi_driver(result.stdout(), SMI_FIELDS)
    info = GpuInfo(
        source="nvidia-smi",
        driver_version=driver,
        gpus=gpus,
        warnings=warnings,
        message=None if gpus else f"{NO_GPU} (nvidia-smi listed no GPU)",
    )
    if not gpus:
        info.source = "none"
    return _with_roofline(info)


def parse_smi_csv(text: str, fields: tuple[str, ...] | list[str] = SMI_FIELDS) -> list[GpuDevice]:
    """GPUs from ``nvidia-smi --query-gpu=FIELDS --format=csv[,noheader][,nounits]`` output.

    With a header line the columns are taken from it (units like ``[MiB]`` are stripped); without one, from
    ``fields``. ``[N/A]`` / ``[Not Supported]`` become None.
    """
    reader = csv.reader(io.StringIO(text), skipinitialspace=True)
    rows = [row for row in reader if row and any(cell.strip() for cell in row)]
    if not rows:
        return []
    names = list(fields)
    if rows[0][0].strip().split(" [")[0] in {*fields, *SMI_FIELDS}:
        names = [cell.strip().split(" [")[0] for cell in rows[0]]
        names = [SMI_HEADER_ALIASES.get(name, name) for name in names]
        rows = rows[1:]
    gpus = []
    for row in rows:
        if len(row) != len(names):
            continue
        raw = {name: _smi_value(cell) for name, cell in zip(names, row, strict=True)}
        gpus.append(
            GpuDevice(
                index=int(_number(raw.get("index")) or len(gpus)),
                name=raw.get("name") or "unknown",
                uuid=raw.get("uuid"),
                pci_bus_id=raw.get("pci.bus_id"),
                memory_total_mib=_number(raw.get("memory.total")),
                memory_used_mib=_number(raw.get("memory.used")),
                power_limit_w=_number(raw.get("power.limit")),
                power_max_w=_number(raw.get("power.max_limit")),
                compute_capability=raw.get("compute_cap"),
                sm_clock_mhz=_int(raw.get("clocks.sm")),
                mem_clock_mhz=_int(raw.get("clocks.mem")),
                sm_clock_max_mhz=_int(raw.get("clocks.max.sm")),
                mem_clock_max_mhz=_int(raw.get("clocks.max.mem")),
                temperature_c=_int(raw.get("temperature.gpu")),
            )
        )
    return gpus


def _smi_driver(text: str, fields: tuple[str, ...]) -> str | None:
    rows = [row for row in csv.reader(io.StringIO(text), skipinitialspace=True) if row]
    if rows and "driver_version" in fields and len(rows[0]) == len(fields):
        return _smi_value(rows[0][fields.index("driver_version")])
    return None


def _attach_processes(gpus: list[GpuDevice], text: str) -> None:
    by_uuid = {gpu.uuid: gpu for gpu in gpus}
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if len(row) != len(SMI_APP_FIELDS) or not row[1].strip().isdigit():
            continue
        uuid, pid, name, used = (_smi_value(cell) for cell in row)
        if uuid in by_uuid:
            by_uuid[uuid].processes.append(GpuProcess(pid=int(pid), name=name, used_memory_mib=_number(used)))


def _smi_value(cell: str) -> str | None:
    value = cell.strip()
    if not value or value.startswith("[") or value in ("N/A", "Not Supported"):
        return None
    return value


def _number(value: str | None) -> float | None:
    if value is None:
        return None
    match = re.match(r"^-?\d+(\.\d+)?", value.strip())
    return float(match.group(0)) if match else None


def _int(value: str | None) -> int | None:
    number = _number(value)
    return None if number is None else int(round(number))


def _from_nvml() -> GpuInfo:
    """Query NVML (raises when the library or driver is missing)."""
    with nvml_session() as nvml:
        return nvml_snapshot(nvml)


def nvml_snapshot(nvml: Any) -> GpuInfo:
    """Read every device through an initialised ``pynvml``-like module; unsupported queries give None."""
    driver = _text(_try(nvml.nvmlSystemGetDriverVersion))
    get_cuda = getattr(nvml, "nvmlSystemGetCudaDriverVersion_v2", None) or nvml.nvmlSystemGetCudaDriverVersion
    cuda = _try(get_cuda)
    cuda_text = f"{int(cuda) // 1000}.{int(cuda) % 1000 // 10}" if isinstance(cuda, int) else None
    gpus = []
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        memory = _try(nvml.nvmlDeviceGetMemoryInfo, handle)
        power = _try(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
        constraints = _try(nvml.nvmlDeviceGetPowerManagementLimitConstraints, handle)
        cc = _try(nvml.nvmlDeviceGetCudaComputeCapability, handle)
        procs = _try(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
        gpus.append(
            GpuDevice(
                index=index,
                name=_text(_try(nvml.nvmlDeviceGetName, handle)) or "unknown",
                uuid=_text(_try(nvml.nvmlDeviceGetUUID, handle)),
                pci_bus_id=_text(getattr(_try(nvml.nvmlDeviceGetPciInfo, handle), "busId", None)),
                memory_total_mib=round(memory.total / 2**20, 1) if memory is not None else None,
                memory_used_mib=round(memory.used / 2**20, 1) if memory is not None else None,
                power_limit_w=power / 1000 if power is not None else None,
                power_max_w=constraints[1] / 1000 if constraints else None,
                compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
                sm_clock_mhz=_try(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
                mem_clock_mhz=_try(nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM),
                sm_clock_max_mhz=_try(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM),
                mem_clock_max_mhz=_try(nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_MEM),
                temperature_c=_try(nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU),
                processes=[_nvml_process(nvml, p) for p in procs],
            )
        )
    return GpuInfo(
        source="nvml",
        driver_version=driver,
        cuda_driver_version=cuda_text,
        gpus=gpus,
        message=None if gpus else f"{NO_GPU} (NVML lists no device)",
    )


def _nvml_process(nvml: Any, proc: Any) -> GpuProcess:
    used = getattr(proc, "usedGpuMemory", None)
    name = _text(_try(getattr(nvml, "nvmlSystemGetProcessName", None), proc.pid))
    return GpuProcess(
        pid=int(proc.pid), name=name, used_memory_mib=round(used / 2**20, 1) if isinstance(used, int) else None
    )


def _try(func: Any, *args: Any) -> Any:
    if func is None:
        return None
    try:
        return func(*args)
    except Exception:
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode() if isinstance(value, bytes) else str(value)


def _with_roofline(info: GpuInfo) -> GpuInfo:
    for gpu in info.gpus:
        try:
            spec, warning = find_gpu(gpu.name)
        except HotkernelError as err:
            gpu.roofline_warning = str(err)
            continue
        gpu.roofline_entry, gpu.roofline_warning = spec.key, warning
    return info


def _short(exc: Exception) -> str:
    return f"{type(exc).__name__}: {_first_line(str(exc))}"[:200]


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def summary_lines(info: GpuInfo) -> list[str]:
    """One line per GPU (plus driver line), for people and agents."""
    if not info.gpus:
        return [info.message or NO_GPU]
    lines = [f"driver {info.driver_version or '?'}, CUDA driver {info.cuda_driver_version or '?'} (via {info.source})"]
    for gpu in info.gpus:
        memory = f"{gpu.memory_used_mib or 0:.0f}/{gpu.memory_total_mib or 0:.0f} MiB"
        lines.append(
            f"[{gpu.index}] {gpu.name} cc {gpu.compute_capability or '?'} {gpu.uuid or ''} | {memory} | "
            f"power {gpu.power_limit_w or '?'}/{gpu.power_max_w or '?'} W | "
            f"SM {gpu.sm_clock_mhz or '?'}/{gpu.sm_clock_max_mhz or '?'} MHz, "
            f"mem {gpu.mem_clock_mhz or '?'}/{gpu.mem_clock_max_mhz or '?'} MHz | "
            f"{gpu.temperature_c if gpu.temperature_c is not None else '?'} C | {len(gpu.processes)} procs | "
            f"roofline {gpu.roofline_entry or 'unknown'}"
        )
        if gpu.roofline_warning:
            lines.append(f"  warning: {gpu.roofline_warning}")
    return lines


# ---- the insight tool (hotkernel.insight.base.InsightTool) -------------------------------------------------

NAME = "gpu_info"
CLI_NAME = "gpu"
CLI_HELP = (
    "Name, UUID, driver/CUDA version, memory, power limits, clocks, temperature and processes of every GPU, "
    "and its roofline entry. No GPU is a result (exit 0), not an error."
)
DESCRIPTION = """Report every NVIDIA GPU here: name, UUID, memory, clocks, power limit, compute capability, processes.

Reads NVML (falling back to nvidia-smi). With no GPU it says so in 'message' (source 'none') rather than
failing. Use it first to know what roofline and calibrate will measure against; use calibrate to measure
the card's real streaming ceiling.
"""
HINTS = Hints(read_only=True, destructive=False, idempotent=True)
LONG_RUNNING = False
RESULT = GpuInfo


class Params(BaseModel):
    """gpu_info takes no parameters."""


def run(params: Params, ctx: InsightContext) -> GpuInfo:
    """Every GPU here (``gpu_info()``)."""
    return gpu_info()
