"""gpu_info: NVML snapshot, nvidia-smi CSV fallback (output captured on the H200), no-GPU result."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

from hotkernel.insight import gpu_info as gi

H200 = Path(__file__).parent.parent / "fixtures" / "h200"
H200_UUID = "GPU-dcd798de-e530-41ea-dcaf-589c0d912b05"


def test_parse_smi_noheader_nounits_captured_on_h200():
    (gpu,) = gi.parse_smi_csv((H200 / "nvidia_smi_query.out").read_text(), gi.SMI_FIELDS)
    assert gpu.name == "NVIDIA H200" and gpu.uuid == H200_UUID
    assert gpu.memory_total_mib == 143771 and gpu.memory_used_mib == 0
    assert gpu.power_limit_w == 700.0 and gpu.power_max_w == 700.0
    assert gpu.compute_capability == "9.0"
    assert (gpu.sm_clock_max_mhz, gpu.mem_clock_max_mhz) == (1980, 3201)
    assert gpu.sm_clock_mhz == 495 and gpu.temperature_c == 33
    assert gpu.pci_bus_id == "00000000:00:06.0"


def test_parse_smi_with_header_and_units_gives_the_same_device():
    """The header spells some fields differently (clocks.current.sm) and values carry units (MiB, W, MHz)."""
    plain = gi.parse_smi_csv((H200 / "nvidia_smi_query.out").read_text())
    headed = gi.parse_smi_csv((H200 / "nvidia_smi_query_header.out").read_text())
    assert headed == plain


def test_parse_smi_empty_and_garbage():
    assert gi.parse_smi_csv("") == []
    assert gi.parse_smi_csv("No devices were found\n") == []


class DumpNvml:
    """A pynvml stand-in that answers from the NVML dump captured on the H200 (nvml_dump.out)."""

    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 2, 0

    def __init__(self, dump: dict):
        self.dump = dump

    def nvmlSystemGetDriverVersion(self):  # noqa: N802 - pynvml's names
        return self.dump["driver"]

    def nvmlSystemGetCudaDriverVersion_v2(self):  # noqa: N802
        return self.dump["cuda_driver"]

    def nvmlDeviceGetCount(self):  # noqa: N802
        return len(self.dump["gpus"])

    def nvmlDeviceGetHandleByIndex(self, i):  # noqa: N802
        return self.dump["gpus"][i]

    def nvmlDeviceGetName(self, h):  # noqa: N802
        return h["name"]

    def nvmlDeviceGetUUID(self, h):  # noqa: N802
        return h["uuid"]

    def nvmlDeviceGetPciInfo(self, h):  # noqa: N802
        raise RuntimeError("not in the dump")

    def nvmlDeviceGetMemoryInfo(self, h):  # noqa: N802
        return SimpleNamespace(total=h["memory_total"], used=h["memory_used"])

    def nvmlDeviceGetEnforcedPowerLimit(self, h):  # noqa: N802
        return h["power_limit_mw"]

    def nvmlDeviceGetPowerManagementLimitConstraints(self, h):  # noqa: N802
        return (0, h["power_max_mw"])

    def nvmlDeviceGetCudaComputeCapability(self, h):  # noqa: N802
        return tuple(h["cc"])

    def nvmlDeviceGetClockInfo(self, h, which):  # noqa: N802
        return h["clock_sm"] if which == self.NVML_CLOCK_SM else h["clock_mem"]

    def nvmlDeviceGetMaxClockInfo(self, h, which):  # noqa: N802
        return h["max_clock_sm"] if which == self.NVML_CLOCK_SM else h["max_clock_mem"]

    def nvmlDeviceGetTemperature(self, h, which):  # noqa: N802
        return h["temperature"]

    def nvmlDeviceGetComputeRunningProcesses(self, h):  # noqa: N802
        return [SimpleNamespace(pid=pid, usedGpuMemory=None) for pid in h["procs"]]


def test_nvml_snapshot_from_h200_dump():
    dump = json.loads((H200 / "nvml_dump.out").read_text())
    info = gi._with_roofline(gi.nvml_snapshot(DumpNvml(dump)))
    assert info.source == "nvml" and info.driver_version == "580.159.04" and info.cuda_driver_version == "13.0"
    (gpu,) = info.gpus
    assert gpu.uuid == H200_UUID and gpu.compute_capability == "9.0"
    assert gpu.memory_total_mib == round(150754820096 / 2**20, 1)
    assert gpu.power_limit_w == 700.0 and gpu.sm_clock_max_mhz == 1980 and gpu.temperature_c == 32
    assert gpu.pci_bus_id is None  # a failing query gives None, not an exception
    assert gpu.roofline_entry == "H200-SXM" and gpu.roofline_warning is None


def test_no_nvml_no_smi_is_a_result_not_an_exception(monkeypatch, tmp_path):
    monkeypatch.setattr(gi, "_from_nvml", lambda: (_ for _ in ()).throw(OSError("libnvidia-ml.so.1 missing")))
    monkeypatch.setenv("PATH", str(tmp_path))
    info = gi.gpu_info()
    assert info.source == "none" and info.gpus == []
    assert "no NVIDIA GPU or driver found" in info.message
    assert any("NVML unavailable" in w for w in info.warnings)
    assert gi.summary_lines(info) == [info.message]


def test_nvidia_smi_fallback_runs_the_tool(monkeypatch, tmp_path):
    """A stand-in nvidia-smi on PATH replays the H200 capture; gpu_info must run it and parse it."""
    capture = H200 / "nvidia_smi_query.out"
    smi = tmp_path / "nvidia-smi"
    smi.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "if any(a.startswith('--query-gpu=') for a in sys.argv):\n"
        f"    sys.stdout.write(open({str(capture)!r}).read())\n"
        "else: print('" + H200_UUID + ", 4242, python3, 512')\n"
    )
    smi.chmod(0o755)
    monkeypatch.setattr(gi, "_from_nvml", lambda: (_ for _ in ()).throw(OSError("no NVML")))
    monkeypatch.setenv("PATH", str(tmp_path))
    info = gi.gpu_info()
    assert info.source == "nvidia-smi" and info.driver_version == "580.159.04"
    (gpu,) = info.gpus
    assert gpu.name == "NVIDIA H200" and gpu.roofline_entry == "H200-SXM"
    assert [(p.pid, p.name, p.used_memory_mib) for p in gpu.processes] == [(4242, "python3", 512.0)]


def test_failing_nvidia_smi_is_a_result(monkeypatch, tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the driver'\nexit 9\n")
    smi.chmod(0o755)
    monkeypatch.setattr(gi, "_from_nvml", lambda: (_ for _ in ()).throw(OSError("no NVML")))
    monkeypatch.setenv("PATH", str(tmp_path))
    info = gi.gpu_info()
    assert info.source == "none" and "could not communicate with the driver" in info.message
