"""profile diff on the captures of tests/fixtures/h200/profile_diff/: two variants of one Triton rmsnorm kernel on
the H200, one of them spilling. The diff of the live details pages must show what the card showed when it read
the .ncu-rep reports itself (diff_reports_json.out)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from hotkernel.insight import kernel_diff as kd
from hotkernel.insight import profile_diff as pd
from hotkernel.insight.top_kernels import short_kernel_name

CAPTURES = Path(__file__).parent.parent / "fixtures" / "h200" / "profile_diff"


def changes(result: kd.ProfileDiff) -> dict[str, kd.MetricChange]:
    (row,) = result.kernels
    return {c.metric: c for c in row.metrics}


def test_a_spilling_variant_shows_registers_local_memory_occupancy_and_time() -> None:
    result = kd.diff_reports(CAPTURES / "details_wide.out", CAPTURES / "details_narrow.out")
    assert result.kernel_count == 1 and result.kernels[0].match == "name"
    moved = changes(result)
    assert moved["registers"].a == 64 and moved["registers"].b == 255
    assert moved["local_bytes"].a == 0 and moved["local_bytes"].b > 1e8
    assert moved["occupancy_pct"].b < moved["occupancy_pct"].a / 3
    assert moved["time_us"].b > moved["time_us"].a * 1.3
    assert all(moved[name].moved for name in ("registers", "local_bytes", "occupancy_pct", "time_us"))
    assert result.moved_most and result.moved_most[0].startswith("rmsnorm_kernel")


def test_the_raw_pages_of_the_saved_reports_agree_with_what_the_card_printed() -> None:
    local = kd.diff_reports(CAPTURES / "rep_a_raw.out", CAPTURES / "rep_b_raw.out")
    assert_agrees(local, json.loads((CAPTURES / "diff_reports_json.out").read_text()))


def test_a_targets_baseline_against_its_candidate_through_the_contract() -> None:
    """--target on the card: torch's layer-norm kernel against the kept Triton row kernel, one unmatched kernel
    on each side paired as before/after; the raw pages say what the card printed from the reports."""
    local = kd.diff_reports(CAPTURES / "target_a_raw.out", CAPTURES / "target_b_raw.out")
    (row,) = local.kernels
    assert row.match == "sole" and short_kernel_name(row.name_a or "") == "vectorized_layer_norm_kernel"
    assert row.kernel == "_rmsnorm_row_kernel" and row.calls_a == row.calls_b == 3
    moved = changes(local)
    assert moved["time_us"].b < 0.7 * moved["time_us"].a and moved["dram_pct"].b > moved["dram_pct"].a
    assert_agrees(local, json.loads((CAPTURES / "diff_target.out").read_text()))


def assert_agrees(local: kd.ProfileDiff, card: dict) -> None:
    (row,) = card["kernels"]
    assert_row_agrees(local.kernels[0], row)


def assert_row_agrees(mine: kd.KernelDiff, card_row: dict) -> None:
    """Every metric of one kernel row on both sides as the card printed it."""
    printed = {c["metric"]: c for c in card_row["metrics"]}
    for change in mine.metrics:
        theirs = printed[change.metric]
        for side in ("a", "b"):
            if theirs[side] is None:
                assert getattr(change, side) is None
            else:
                got = getattr(change, side)
                assert abs(got - theirs[side]) <= 1e-6 * max(1.0, abs(theirs[side])), (change.metric, side)


INT4 = CAPTURES / "int4_target"


def _threads(launch: str) -> tuple[int, int]:
    """(blocks, threads a block) of a launch label, in either form a card has printed: `grid (64, 1024, 1) block
    (32, 1, 1)` or the sizes `grid 65536 block 32` (the module path before it read the dimensions)."""
    grid, block = re.fullmatch(r"grid (.+) block (.+)", launch).groups()
    return tuple(math.prod(int(n) for n in re.findall(r"\d+", part)) for part in (grid, block))


def test_the_int4_targets_harness_kernel_pairs_with_itself_and_the_gemv_kernels_are_before_after() -> None:
    """--target int4_gemv on the card (4 launches a side, the reports read there by NVIDIA's module): the packing
    kernel of the target's derive step (3 launches a side) pairs with itself by name and launch, tinygemm's kernel
    against the kept mma kernel is the sole before/after pair with its launch changed, and the reports' raw pages
    (what a machine without the module reads) give the same rows, metrics and launches."""
    local = kd.diff_reports(INT4 / "rep_a_raw.out", INT4 / "rep_b_raw.out")
    card = json.loads((INT4 / "diff_reports_json.out").read_text())
    rows = {row.kernel: row for row in local.kernels}
    assert (
        sorted(rows)
        == sorted(row["kernel"] for row in card["kernels"])
        == ["_int4_gemv_mma_kernel", "matrix_to_m16n8k16_Bint4_layout"]
    )
    pack, gemv = rows["matrix_to_m16n8k16_Bint4_layout"], rows["_int4_gemv_mma_kernel"]
    # ncu demangled the packing kernel as `matrix_to_...<8>(...)` in A's raw page and `at::matrix_to_...<8>(...)` in
    # B's; NVIDIA's module gives both the same function name. So the raw pages pair it by base name, the card by name.
    card_match = {row["kernel"]: row["match"] for row in card["kernels"]}
    assert pack.name_a != pack.name_b and (pack.match, card_match[pack.kernel]) == ("base", "name")
    assert pack.calls_a == pack.calls_b == 3
    assert pack.launch_a == pack.launch_b == "grid (64, 1024, 1) block (32, 1, 1)"
    assert gemv.match == "sole" and short_kernel_name(gemv.name_a or "") == "tinygemm_m16n8k16_chunk_kernel"
    assert (gemv.launch_a, gemv.launch_b) == ("grid (1, 1024, 1) block (32, 8, 1)", "grid (32, 1, 8) block (128, 1, 1)")
    moved = {c.metric: c for c in gemv.metrics}
    assert moved["time_us"].b < 0.8 * moved["time_us"].a and moved["registers"].b > 2 * moved["registers"].a
    for card_row in card["kernels"]:
        mine = rows[card_row["kernel"]]
        assert (mine.calls_a, mine.calls_b) == (card_row["calls_a"], card_row["calls_b"])
        for side in ("a", "b"):
            assert _threads(getattr(mine, f"launch_{side}")) == _threads(card_row[f"launch_{side}"])
        assert_row_agrees(mine, card_row)
    assert (INT4 / "diff_target.out").read_text() == (INT4 / "diff_reports.out").read_text()


def _side(label: str, *captures: str) -> kd.Side:
    """One report's side from the launches of real captures, as one process that ran them all would show them."""
    launches = [launch for name in captures for launch in kd.parse_ncu_details((CAPTURES / name).read_text())]
    return kd.Side(Path(label), "ncu-csv", len(launches), kd.kernels_of_launches(launches))


def test_one_name_at_two_launch_configurations_is_two_kernels() -> None:
    """A process that launched the wide and the narrow rmsnorm kernel (one name, block 256 and block 32) gives two
    kernels, each labelled with its launch; against the narrow one alone, the narrow launches pair with each other
    and the wide ones are A's only: as a target's harness kernel (its reference) pairs with itself while the same
    library kernel at the function's shape shows as the baseline's alone, instead of the two being averaged."""
    both, narrow = _side("A", "details_wide.out", "details_narrow.out"), _side("B", "details_narrow.out")
    assert [(k.name, k.calls, k.launch) for k in both.kernels] == [
        ("rmsnorm_kernel", 2, "grid (4096, 1, 1) block (256, 1, 1)"),
        ("rmsnorm_kernel", 2, "grid (4096, 1, 1) block (32, 1, 1)"),
    ]
    result = kd.compare(both, narrow)
    rows = {(row.match, row.launch_a, row.launch_b): row for row in result.kernels}
    same = rows[("name", "grid (4096, 1, 1) block (32, 1, 1)", "grid (4096, 1, 1) block (32, 1, 1)")]
    assert not same.moved and same.calls_a == same.calls_b == 2
    wide = rows[("only_a", "grid (4096, 1, 1) block (256, 1, 1)", None)]
    assert wide.kernel == "rmsnorm_kernel (grid (4096, 1, 1) block (256, 1, 1))"
    assert any(
        line.startswith("rmsnorm_kernel (grid (4096, 1, 1) block (256, 1, 1)): only in A") for line in result.moved_most
    )


def test_a_kernel_whose_launch_changed_still_pairs_by_name() -> None:
    """The wide variant against the narrow one: one name, another block size, paired by name, the launch shown."""
    result = kd.compare(_side("A", "details_wide.out"), _side("B", "details_narrow.out"))
    (row,) = result.kernels
    assert row.match == "name" and row.kernel == "rmsnorm_kernel"
    assert (row.launch_a, row.launch_b) == ("grid (4096, 1, 1) block (256, 1, 1)", "grid (4096, 1, 1) block (32, 1, 1)")
    assert "    launch: grid (4096, 1, 1) block (256, 1, 1) -> grid (4096, 1, 1) block (32, 1, 1)" in (
        pd.summary_lines(result)
    )


def test_the_ncu_report_modules_launch_dimensions_make_the_csv_configuration() -> None:
    """Read through NVIDIA's module a launch has no CSV grid/block columns but the launch__{grid,block}_dim_{x,y,z}
    metrics (requested with the others): the configuration reads as the CSV's, so a report and a CSV of the same
    launches pair by launch; without them there is no configuration."""
    dims = {"grid": (1, 1024, 1), "block": (32, 8, 1)}
    metrics = {
        f"launch__{part}_dim_{axis}": (f"{value}.0", "")
        for part, values in dims.items()
        for axis, value in zip("xyz", values, strict=True)
    }
    assert kd.launch_config({"name": "k", "grid": None, "block": None, "metrics": metrics}) == (
        kd.launch_config({"name": "k", "grid": "(1, 1024, 1)", "block": "(32, 8, 1)", "metrics": {}})
    )
    assert kd.launch_config({"name": "k", "metrics": {}}) is None
