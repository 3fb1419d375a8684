"""profile diff on ncu output captured on the H200 (tests/fixtures/h200/): a capture against itself, two ncu runs
of one workload, the details and raw pages of one report, a narrowed run, a chrome trace; the matching rules;
every kind of bad input; the command mode through a stand-in ncu that replays a captured page."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import pytest

from hotkernel.errors import HotkernelError
from hotkernel.insight import kernel_diff as kd
from hotkernel.insight import profile_diff as pd
from hotkernel.insight.base import InsightContext
from hotkernel.insight.top_kernels import parse_ncu_details

H200 = Path(__file__).parent.parent / "fixtures" / "h200"
LIVE = H200 / "ncu_details_csv.out"  # `ncu --csv --page details` of the 5-kernel workload, live
IMPORTED = H200 / "ncu_import_details_csv.out"  # the same workload profiled again, saved, then --import'ed
RAW = H200 / "ncu_import_raw_csv.out"  # the raw page of that saved report
REGEX = H200 / "ncu_kernel_regex_csv.out"  # 2 launches of rmsnorm_kernel only, 2 metrics


def by_kernel(result: kd.ProfileDiff) -> dict[str, kd.KernelDiff]:
    return {row.kernel: row for row in result.kernels}


def values(row: kd.KernelDiff) -> dict[str, kd.MetricChange]:
    return {c.metric: c for c in row.metrics}


def test_a_capture_against_itself_is_all_unchanged():
    result = kd.diff_reports(LIVE, LIVE)
    assert result.kernel_count == 5 and result.launches_a == result.launches_b == 5
    assert result.moved_most == [] and result.total_rel_pct == 0.0
    for row in result.kernels:
        assert row.match == "name" and row.moved == [] and row.calls_a == row.calls_b == 1
        for c in row.metrics:
            assert c.a == c.b and not c.moved
            assert c.delta in (None, 0.0)
    lines = pd.summary_lines(result)
    assert any(line.startswith("nothing moved") for line in lines) and not any(line.endswith("*") for line in lines)


def test_two_runs_of_one_workload_match_by_name_and_nothing_moves():
    result = kd.diff_reports(LIVE, IMPORTED)
    rows = by_kernel(result)
    assert set(rows) == {
        "cunn_SoftMaxForwardReg",
        "vectorized_layer_norm_kernel",
        "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT",
        "vectorized_elementwise_kernel",
        "rmsnorm_kernel",
    }
    assert all(row.match == "name" for row in result.kernels)
    rms = values(rows["rmsnorm_kernel"])
    # ncu printed Duration "35,136" ns (live) and "34.78" us (imported); 64 registers both times
    assert rms["time_us"].a == pytest.approx(35.136) and rms["time_us"].b == pytest.approx(34.78)
    assert rms["time_us"].delta == pytest.approx(34.78 - 35.136)
    assert rms["time_us"].rel_pct == pytest.approx(100 * (34.78 - 35.136) / 35.136)
    assert rms["dram_pct"].a == pytest.approx(77.38) and rms["dram_pct"].b == pytest.approx(78.35)
    assert rms["registers"].a == rms["registers"].b == 64
    # the basic set has neither instructions nor local-memory counters: n/a on both sides, never 0
    assert rms["instructions"].a is None and rms["local_bytes"].b is None
    assert result.moved_most == []  # run-to-run spread stays under 5% / 5 points
    assert [row.kernel for row in result.kernels][0] == "cunn_SoftMaxForwardReg"  # heaviest first


def test_details_and_raw_pages_of_one_report_agree():
    result = kd.diff_reports(IMPORTED, RAW)
    assert (result.kind_a, result.kind_b) == ("ncu-csv", "ncu-raw-csv")
    for row in result.kernels:
        assert row.match == "name"
        for c in row.metrics:
            if c.a is not None:
                assert c.b == pytest.approx(c.a, rel=2e-3, abs=0.01), (row.kernel, c.metric)


def test_a_narrowed_run_flags_what_moved_and_the_kernels_of_one_side():
    result = kd.diff_reports(LIVE, REGEX)
    rows = by_kernel(result)
    rms = rows["rmsnorm_kernel"]
    assert rms.match == "name" and (rms.calls_a, rms.calls_b) == (1, 2)
    time_us = values(rms)["time_us"]
    assert time_us.b == pytest.approx((32.288 + 31.456) / 2) and time_us.moved
    dram = values(rms)["dram_pct"]
    assert dram.delta == pytest.approx((70.40 + 71.14) / 2 - 77.38) and dram.moved
    assert values(rms)["sm_pct"].b is None and not values(rms)["sm_pct"].moved
    assert rms.moved[0].startswith("time 35.14 -> 31.87 us (-9.3%)")
    only_a = {row.kernel for row in result.kernels if row.match == "only_a"}
    assert only_a == set(rows) - {"rmsnorm_kernel"}
    assert result.moved_most[0] == "cunn_SoftMaxForwardReg: only in A (1x, 0.1308 ms)"
    assert any("5 profiled launches, B 2" in note for note in result.notes)


def test_time_only_sides_chrome_trace():
    result = kd.diff_reports(H200 / "torch_trace.json", IMPORTED)
    assert result.kind_a == "chrome-trace" and any("times only" in note for note in result.notes)
    softmax = by_kernel(result)["cunn_SoftMaxForwardReg"]
    # torch.profiler spells the namespace '(anonymous namespace)', ncu '<unnamed>': the base names agree
    assert softmax.match == "base" and "(anonymous namespace)" in softmax.name_a
    assert values(softmax)["time_us"].a is not None and values(softmax)["dram_pct"].a is None


def test_si_units_of_an_imported_report_read_as_the_live_ones():
    """ncu prints a live page's bytes as '32,768 byte' and an imported report's as '32.77 Kbyte'."""
    live = parse_ncu_details(LIVE.read_text())[0]["metrics"]["Shared Memory Configuration Size"]
    imported = parse_ncu_details(IMPORTED.read_text())[0]["metrics"]["Shared Memory Configuration Size"]
    assert (live, imported) == (("32,768", "byte"), ("32.77", "Kbyte"))
    assert kd.si_value(32768.0, live[1]) == 32768.0
    assert kd.si_value(32.77, imported[1]) == pytest.approx(32768, rel=1e-3)
    assert kd.si_value(64.0, "register/thread") == 64.0


def _synthetic(launches: list[dict], name: str, **scale: float) -> list[dict]:
    """SYNTHETIC: the real parsed launches of LIVE with ``name``'s metrics multiplied (or set) as given."""
    changed = copy.deepcopy(launches)
    for launch in changed:
        if launch["name"] != name:
            continue
        for metric, factor in scale.items():
            value, unit = launch["metrics"][metric]
            launch["metrics"][metric] = (str(float(value.replace(",", "")) * factor), unit)
    return changed


def test_moved_metrics_are_ranked_and_flagged_synthetic():
    """Built from LIVE's parsed rows: rmsnorm 30% faster, 25% fewer registers, +6 points of DRAM; local memory
    from 0 to 4 KiB per launch (counters added to both sides). The rest unchanged."""
    launches = parse_ncu_details(LIVE.read_text())
    for launch in launches:
        launch["metrics"]["l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"] = ("0", "byte")
        launch["metrics"]["l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"] = ("0", "byte")
    after = _synthetic(launches, "rmsnorm_kernel", **{"Duration": 0.7, "Registers Per Thread": 0.75})
    for launch in after:
        if launch["name"] == "rmsnorm_kernel":
            launch["metrics"]["DRAM Throughput"] = ("83.38", "%")
            launch["metrics"]["l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"] = ("1,024", "byte")
            launch["metrics"]["l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum"] = ("3,072", "byte")
    a = kd.Side(LIVE, "ncu-csv", 5, kd.kernels_of_launches(launches))
    b = kd.Side(LIVE, "ncu-csv", 5, kd.kernels_of_launches(after))
    result = kd.compare(a, b)
    rms = by_kernel(result)["rmsnorm_kernel"]
    got = values(rms)
    assert got["time_us"].rel_pct == pytest.approx(-30.0) and got["registers"].b == 48
    assert got["local_bytes"].a == 0 and got["local_bytes"].b == 4096 and got["local_bytes"].moved
    assert got["local_bytes"].rel_pct is None  # from zero: no relative change, still flagged
    assert got["dram_pct"].delta == pytest.approx(6.0) and got["dram_pct"].moved
    assert [m.split(" ")[0] for m in rms.moved] == ["local", "time", "registers", "DRAM"]
    assert result.moved_most == ["rmsnorm_kernel: " + "; ".join(rms.moved)]
    assert all(not row.moved for row in result.kernels if row.kernel != "rmsnorm_kernel")
    text = "\n".join(pd.summary_lines(result))
    assert "local memory 0 -> 4096 B (from 0)" in text and "-30.0%  *" in text


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt"),
        ("_rmsnorm_row_kernel_0d1d2d3de4de", "_rmsnorm_row_kernel"),
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, T1)",
            "vectorized_elementwise_kernel",
        ),
        ("nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT", "nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT"),
        ("rmsnorm_kernel", "rmsnorm_kernel"),
        ("kernel_3f9a0c12d4e5b6a7", "kernel"),
    ],
)
def test_base_name(name, base):
    assert kd.base_name(name) == base


def _k(name: str, order: int) -> kd.Kernel:
    return kd.Kernel(name, order, 1, 0.01, {})


def test_matching_rules():
    a = [_k("common", 0), _k("triton_poi_fused_add_0", 1), _k("triton_poi_fused_add_1", 2), _k("old", 3)]
    b = [_k("common", 0), _k("triton_poi_fused_add_7", 1), _k("triton_poi_fused_add_8", 2), _k("new", 3)]
    pairs = [(x.name if x else None, y.name if y else None, how) for x, y, how in kd.match_kernels(a, b)]
    assert pairs == [
        ("common", "common", "name"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_7", "base"),  # same base: in launch order
        ("triton_poi_fused_add_1", "triton_poi_fused_add_8", "base"),
        ("old", "new", "sole"),  # the one kernel left on each side
    ]
    two_left = kd.match_kernels([_k("x", 0), _k("y", 1)], [_k("z", 0), _k("w", 1)])
    assert [how for _, _, how in two_left] == ["only_a", "only_a", "only_b", "only_b"]


def test_bad_inputs_are_one_line_errors(tmp_path):
    with pytest.raises(HotkernelError, match=r"B '.*nope.csv' is not a file"):
        kd.diff_reports(LIVE, tmp_path / "nope.csv")
    with pytest.raises(HotkernelError, match=r"profile diff: B .*versions.out: not a kernel summary CSV"):
        kd.diff_reports(LIVE, H200 / "versions.out")
    with pytest.raises(HotkernelError, match=r"profile diff: A .*no kernel rows"):
        kd.diff_reports(H200 / "ncu_bad_binary.out", LIVE)
    with pytest.raises(HotkernelError, match="top=0"):
        kd.diff_reports(LIVE, LIVE, top=0)


def test_ncu_rep_without_nsight_says_how_to_export(bare_path):
    with pytest.raises(HotkernelError) as err:
        kd.diff_reports(H200 / "insight" / "ncu" / "report.ncu-rep", LIVE)
    text = str(err.value)
    assert "\n" not in text and text.startswith("profile diff: A: reading") and "--page raw" in text


def _stand_in_ncu(bindir: Path, page: Path) -> Path:
    """A stand-in ncu: records its argv, writes a report; `--import` replays a page captured on the H200."""
    log = bindir / "argv.log"
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / "ncu"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"open({str(log)!r}, 'a').write(repr(sys.argv) + '\\n')\n"
        "if '--import' in sys.argv:\n"
        f"    sys.stdout.write(open({str(page)!r}).read()); sys.exit(0)\n"
        "out = sys.argv[sys.argv.index('-o') + 1]\n"
        "open(out + '.ncu-rep', 'wb').write(b'rep')\n"
    )
    script.chmod(0o755)
    return log


@pytest.fixture
def bare_path(tmp_path, monkeypatch):
    """PATH with only a bin dir for stand-ins; no Nsight install, no ncu_report module."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr("hotkernel.insight.ncu_report.glob.glob", lambda pattern: [])
    monkeypatch.setattr("hotkernel.insight.profile.glob.glob", lambda pattern: [])
    monkeypatch.setattr("hotkernel.insight.ncu_report.load_ncu_report_module", lambda: None)
    return bindir


def test_ncu_rep_read_through_ncu_import_raw(bare_path, tmp_path):
    """The report bytes are a stand-in; the page `ncu --import` prints is the H200's raw page of a report."""
    log = _stand_in_ncu(bare_path, RAW)
    rep = tmp_path / "x.ncu-rep"
    rep.write_bytes(b"rep")
    result = kd.diff_reports(rep, IMPORTED)
    assert result.kind_a == "ncu-rep" and result.kernel_count == 5
    assert all(row.match == "name" for row in result.kernels) and result.moved_most == []
    assert "'--page', 'raw'" in log.read_text()


def test_commands_are_profiled_with_the_extra_metrics(bare_path, tmp_path):
    log = _stand_in_ncu(bare_path, RAW)
    params = pd.Params(command=["python3 before.py --n 3", "python3 'after dir/x.py'"], kernel_regex="norm")
    ctx = InsightContext.at(tmp_path, confined=False)
    params.out = str(tmp_path / "diff")
    result = pd.run(params, ctx)
    assert result.profile_a is not None and result.profile_a.report == str(tmp_path / "diff" / "a" / "report.ncu-rep")
    assert result.profile_b is not None and result.profile_b.report.startswith(str(tmp_path / "diff" / "b"))
    runs = [line for line in log.read_text().splitlines() if "'-o'" in line]
    assert len(runs) == 2
    assert "'--set', 'basic', '--metrics', '" + ",".join(kd.EXTRA_METRICS) + "'" in runs[0]
    assert runs[0].endswith("'python3', 'before.py', '--n', '3']") and "'after dir/x.py'" in runs[1]
    assert "'regex:norm'" in runs[0] and result.moved_most == []


@pytest.mark.parametrize("cache_control", ["all", "none"])
def test_both_sides_are_profiled_with_the_cache_control_asked(bare_path, tmp_path, cache_control):
    """ncu flushes the caches by default; 'none' gives times comparable with verify's (lab/speedrun.md)."""
    log = _stand_in_ncu(bare_path, RAW)
    params = pd.Params(
        command=["python3 a.py", "python3 b.py"],
        kernel_regex="norm",
        cache_control=cache_control,
        out=str(tmp_path / "diff"),
    )
    pd.run(params, InsightContext.at(tmp_path, confined=False))
    runs = [line for line in log.read_text().splitlines() if "'-o'" in line]
    assert len(runs) == 2 and all(f"'--cache-control', '{cache_control}'" in run for run in runs)
    with pytest.raises(ValueError, match="cache_control"):
        pd.Params(target="rmsnorm", cache_control="warm")


def test_a_failed_side_is_an_error_naming_it(bare_path, tmp_path):
    with pytest.raises(HotkernelError, match=r"profiling A \('python3 x.py'\) failed: ncu \(Nsight Compute\) not"):
        pd.run(pd.Params(command=["python3 x.py", "python3 y.py"]), InsightContext.at(tmp_path, confined=False))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({}, "give two reports"),
        ({"a": "x.csv"}, "give two reports"),
        ({"a": "x", "b": "y", "target": "t"}, "give two reports"),
        ({"command": ["python3 x.py"]}, "given 1 time"),
        ({"command": ["python3 x.py", "python3 'y"]}, "--command B .*No closing quotation"),
        ({"command": ["python3 x.py", " "]}, "--command B is empty"),
    ],
)
def test_bad_parameters(tmp_path, kwargs, match):
    with pytest.raises(HotkernelError, match=match):
        pd.run(pd.Params(**kwargs), InsightContext.at(tmp_path, confined=False))
