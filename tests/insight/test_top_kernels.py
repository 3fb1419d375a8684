"""top_kernels on ncu output captured on the H200 (details page live and imported, raw page, regex run),
the nsys CSV format, chrome traces, and every kind of bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.insight.top_kernels import bound_hint, short_kernel_name, summary_lines, top_kernels

H200 = Path(__file__).parent.parent / "fixtures" / "h200"


def test_ncu_details_captured_live():
    result = top_kernels(H200 / "ncu_details_csv.out", n=10)
    assert result.kind == "ncu-csv" and result.kernel_count == 5 and result.launches == 5
    by_name = {row.short_name: row for row in result.rows}
    rms = by_name["rmsnorm_kernel"]
    # values as printed by ncu 2025.3.1: Duration "35,136" ns, DRAM 77.38 %, SM 28.47 %, 64 registers
    assert rms.avg_us == pytest.approx(35.136) and rms.calls == 1
    assert rms.dram_pct == pytest.approx(77.38) and rms.sm_pct == pytest.approx(28.47)
    assert rms.occupancy_pct == pytest.approx(45.67) and rms.registers == 64
    assert rms.block_size == "(256, 1, 1)" and rms.grid_size == "(4096, 1, 1)"
    assert rms.hint.startswith("memory-bound")
    assert result.rows[0].short_name == "cunn_SoftMaxForwardReg"  # the heaviest first
    assert sum(row.share_pct for row in result.rows) == pytest.approx(100, abs=0.05)
    assert any("est. speedup" in rule for rule in rms.rules)


def test_details_and_raw_pages_of_the_same_report_agree():
    details = top_kernels(H200 / "ncu_import_details_csv.out")
    raw = top_kernels(H200 / "ncu_import_raw_csv.out")
    assert details.kind == "ncu-csv" and raw.kind == "ncu-raw-csv"
    assert [r.name for r in details.rows] == [r.name for r in raw.rows]
    for a, b in zip(details.rows, raw.rows, strict=True):
        assert a.avg_us == pytest.approx(b.avg_us, rel=1e-3)  # details rounds to 2 decimals in us
        assert a.registers == b.registers
        assert a.sm_pct == pytest.approx(b.sm_pct, abs=0.01)
        assert a.dram_pct == pytest.approx(b.dram_pct, abs=0.01)


def test_regex_run_merges_launches_of_one_kernel():
    result = top_kernels(H200 / "ncu_kernel_regex_csv.out")
    (row,) = result.rows
    assert row.name == "rmsnorm_kernel" and row.calls == 2
    assert row.min_us == pytest.approx(31.456) and row.max_us == pytest.approx(32.288)
    assert row.total_ms == pytest.approx((31.456 + 32.288) / 1e3)
    assert row.dram_pct == pytest.approx((70.40 + 71.14) / 2) and row.sm_pct is None
    assert "memory-bound" in row.hint and "compute n/a" in row.hint


def test_n_limits_rows_but_not_totals():
    result = top_kernels(H200 / "ncu_details_csv.out", n=2)
    assert len(result.rows) == 2 and result.kernel_count == 5
    assert len(summary_lines(result)) < 12


# Synthetic: the documented `nsys stats --report cuda_gpu_kern_sum --format csv` layout (the lent H200's
# nsys cannot import its capture, so there is no real one). Not GPU data; only the parser's contract.
NSYS_FORMAT = (
    "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
    '75.0,3000,3,1000.0,1000.0,900,1100,100.0,"void kern_a<float>(float *, int)"\n'
    "25.0,1000,1,1000.0,1000.0,1000,1000,0.0,kern_b\n"
)


def test_nsys_kern_sum_format(tmp_path):
    report = tmp_path / "stats_cuda_gpu_kern_sum.csv"
    report.write_text("Processing [report.sqlite] with [cuda_gpu_kern_sum.py]...\n" + NSYS_FORMAT)
    result = top_kernels(report)
    assert result.kind == "nsys-csv" and result.kernel_count == 2 and result.launches == 4
    first = result.rows[0]
    assert first.short_name == "kern_a" and first.calls == 3 and first.total_ms == pytest.approx(0.003)
    assert first.avg_us == pytest.approx(1.0) and first.std_us == pytest.approx(0.1) and first.share_pct == 75
    assert first.hint is None


def test_chrome_trace_kernels(tmp_path):
    result = top_kernels(H200 / "torch_trace.json", n=5)
    assert result.kind == "chrome-trace" and result.rows and result.rows[0].calls >= 1


def test_chrome_trace_without_kernels(tmp_path):
    trace = tmp_path / "cpu.json"
    trace.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "dur": 5}]}))
    result = top_kernels(trace)
    assert result.rows == [] and "no GPU kernel events" in result.note


@pytest.mark.parametrize(
    ("fixture", "match"),
    [
        ("nvidia_smi_query.out", "not a kernel summary CSV"),
        ("ncu_bad_binary.out", "No kernels were profiled"),
        ("nvml_dump.out", "no traceEvents"),
        ("does-not-exist.csv", "not found"),
    ],
)
def test_wrong_input_is_one_line(fixture, match):
    with pytest.raises(HotkernelError, match=match) as info:
        top_kernels(H200 / fixture)
    assert "\n" not in str(info.value)


def test_ncu_rep_without_nsight_compute(tmp_path, monkeypatch):
    report = tmp_path / "r.ncu-rep"
    report.write_bytes(b"\x00not really")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("hotkernel.insight.ncu_report.load_ncu_report_module", lambda: None)
    monkeypatch.setattr("hotkernel.insight.ncu_report.find_ncu", lambda: None)
    with pytest.raises(HotkernelError, match="needs Nsight Compute.*--page details"):
        top_kernels(report)


def test_bad_n_and_short_names():
    with pytest.raises(HotkernelError, match="n=0"):
        top_kernels(H200 / "ncu_details_csv.out", n=0)
    # As captured on the H200: the details page spells the anonymous namespace "<unnamed>", the raw page of an
    # imported report drops its "<" (profile_diff/target_a_raw.out).
    for capture, spelling in (
        ("ncu_details_csv.out", "void at::<unnamed>::"),
        ("profile_diff/target_a_raw.out", "void unnamed>::"),
    ):
        names = set(
            re.findall(
                r'"(' + re.escape(spelling) + r'vectorized_layer_norm_kernel[^"]*)"', (H200 / capture).read_text()
            )
        )
        assert len(names) == 1, capture
        assert short_kernel_name(names.pop()) == "vectorized_layer_norm_kernel"
    assert short_kernel_name("void at::native::(anonymous namespace)::k<float>(float *)") == "k"
    assert short_kernel_name("rmsnorm_kernel") == "rmsnorm_kernel"
    assert short_kernel_name("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT") == "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT"


def test_bound_hint_latency():
    from hotkernel.insight.top_kernels import KernelRow

    row = KernelRow(name="k", short_name="k", calls=1, memory_pct=20, dram_pct=18, sm_pct=30, occupancy_pct=12)
    assert bound_hint(row).startswith("latency-bound") and "occupancy 12%" in bound_hint(row)
    row = KernelRow(name="k", short_name="k", calls=1, memory_pct=20, sm_pct=85)
    assert bound_hint(row).startswith("compute-bound")
    assert bound_hint(KernelRow(name="k", short_name="k", calls=1)) is None
