"""roofline: table sanity (sources for every figure), arithmetic, name matching, bad input, calibration."""

from __future__ import annotations

import math

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.insight.calibration import CalibrationEntry, store_calibration
from hotkernel.insight.roofline import roofline
from hotkernel.insight.specs import DTYPE_RATE_FIELD, find_gpu, gpu_table

REQUIRED = {
    "H200-SXM",
    "H100-SXM",
    "H100-PCIe",
    "A100-80GB",
    "L40S",
    "L4",
    "B200",
    "RTX-5090",
    "RTX-4090",
    "RTX-3090",
}
FIGURES = ("bandwidth_gbps", "bf16_tflops", "fp16_tflops", "fp8_tflops", "fp32_tflops", "l2_mib", "sms", "cc")


def test_table_has_required_cards_with_a_source_for_every_figure():
    table = {spec.key: spec for spec in gpu_table()}
    assert REQUIRED <= set(table)
    for spec in table.values():
        for figure in FIGURES:
            assert spec.sources.get(figure), f"{spec.key}.{figure} has no source"
        assert spec.bandwidth_gbps > 0 and spec.bf16_tflops > 0 and spec.sms > 0


def test_dense_rates_not_sparsity_doubled():
    """Datasheets print tensor rates with 2:4 sparsity; the table must hold the dense halves."""
    table = {spec.key: spec for spec in gpu_table()}
    assert table["H100-SXM"].bf16_tflops == 989 and table["H100-SXM"].fp8_tflops == 1979
    assert table["H200-SXM"].bf16_tflops == 989 and table["A100-80GB"].bf16_tflops == 312
    assert table["A100-80GB"].fp8_tflops is None and table["RTX-3090"].fp8_tflops is None


@pytest.mark.parametrize(
    ("name", "key", "warns"),
    [
        ("NVIDIA H200", "H200-SXM", False),  # NVML's name on the lent H200 (nvml_dump.out)
        ("NVIDIA H100 80GB HBM3", "H100-SXM", False),
        ("NVIDIA H100 PCIe", "H100-PCIe", False),
        ("NVIDIA A100-SXM4-80GB", "A100-80GB", False),
        ("NVIDIA L4", "L4", False),
        ("NVIDIA L40S", "L40S", False),
        ("NVIDIA GeForce RTX 4090", "RTX-4090", False),
        ("b200", "B200", False),
        ("NVIDIA H200 NVL", "H200-SXM", True),
        ("NVIDIA GeForce RTX 4090 D", "RTX-4090", True),
        ("NVIDIA L40", "L40S", True),
    ],
)
def test_find_gpu(name, key, warns):
    spec, warning = find_gpu(name)
    assert spec.key == key
    assert (warning is not None) == warns
    if warns:
        assert "closest" in warning and key in warning


def test_unknown_gpu_lists_known_cards():
    with pytest.raises(HotkernelError, match="H200-SXM.*RTX-3090"):
        find_gpu("Tesla T4")


def test_memory_bound_arithmetic():
    # 128 MiB read + 128 MiB written, no flops: a copy on the H200
    nbytes = 2 * 128 * 2**20
    result = roofline(0, nbytes, gpu="H200")
    assert result.bound == "memory" and result.intensity_flop_per_byte == 0
    assert result.attainable_ms == pytest.approx(nbytes / 4800e9 * 1e3)
    assert result.ridge_flop_per_byte == pytest.approx(989e12 / 4800e9, rel=1e-3)
    assert result.attainable_ms_measured is None


def test_compute_bound_and_measured_bandwidth():
    n = 8192
    flops, nbytes = 2 * n**3, 3 * n * n * 2
    result = roofline(flops, nbytes, gpu="H200", measured_gbps=4020)
    assert result.bound == "compute"
    assert result.attainable_tflops == 989
    assert result.attainable_ms == pytest.approx(flops / 989e12 * 1e3)
    assert result.attainable_ms_measured == pytest.approx(result.attainable_ms)  # compute term dominates both


def test_measured_bandwidth_moves_a_memory_bound_floor():
    result = roofline(1e6, 1e9, gpu="H200", measured_gbps=4020)
    assert result.attainable_ms == pytest.approx(1e9 / 4800e9 * 1e3)
    assert result.attainable_ms_measured == pytest.approx(1e9 / 4020e9 * 1e3)
    assert result.attainable_tflops == pytest.approx(1e6 / 1e9 * 4800e9 / 1e12)


def test_bytes_zero_is_compute_bound():
    result = roofline(1e12, 0, gpu="A100 80GB", dtype="fp32")
    assert result.bound == "compute" and result.intensity_flop_per_byte is None
    assert result.attainable_ms == pytest.approx(1e12 / 19.5e12 * 1e3)


@pytest.mark.parametrize(("flops", "nbytes"), [(-1, 10), (10, -1), (0, 0), (math.nan, 1), (1, math.inf)])
def test_bad_work_is_rejected(flops, nbytes):
    with pytest.raises(HotkernelError, match="roofline"):
        roofline(flops, nbytes, gpu="H200")


def test_fp8_on_ampere_and_unknown_dtype():
    with pytest.raises(HotkernelError, match="no fp8"):
        roofline(1, 1, gpu="A100 80GB", dtype="fp8")
    with pytest.raises(HotkernelError, match="dtype 'int3'"):
        roofline(1, 1, gpu="H200", dtype="int3")
    assert set(DTYPE_RATE_FIELD) >= {"bf16", "fp16", "fp8", "fp32"}


def test_no_gpu_here_requires_gpu_name(monkeypatch):
    from hotkernel.insight import gpu_info

    monkeypatch.setattr(
        "hotkernel.insight.roofline.gpu_info", lambda: gpu_info.GpuInfo(source="none", message="no NVIDIA GPU")
    )
    with pytest.raises(HotkernelError, match="gpu NAME; --gpu on the command line"):
        roofline(1, 1)


def test_workspace_calibration_is_used_by_default(tmp_path, monkeypatch):
    from hotkernel.insight import gpu_info

    uuid = "GPU-dcd798de-e530-41ea-dcaf-589c0d912b05"
    device = gpu_info.GpuDevice(index=0, name="NVIDIA H200", uuid=uuid)
    monkeypatch.setattr("hotkernel.insight.roofline.gpu_info", lambda: gpu_info.GpuInfo(source="nvml", gpus=[device]))
    store_calibration(
        tmp_path,
        CalibrationEntry(
            uuid=uuid,
            name="NVIDIA H200",
            copy_gbps=4020.0,
            read_gbps=3900.0,
            bytes_per_buffer=2**29,
            timer="cuda-events",
            measured_at="2026-11-30T00:00:00",
        ),
    )
    result = roofline(0, 1e9, workspace=tmp_path)
    assert result.gpu == "H200-SXM" and result.measured_bandwidth_gbps == 4020.0
    assert result.attainable_ms_measured == pytest.approx(1e9 / 4020e9 * 1e3)
    assert uuid in result.measured_source
    # by name when the UUID is not known (an explicit --gpu)
    assert roofline(0, 1e9, gpu="NVIDIA H200", workspace=tmp_path).measured_bandwidth_gbps == 4020.0
    assert roofline(0, 1e9, gpu="H100 SXM", workspace=tmp_path).measured_bandwidth_gbps is None
