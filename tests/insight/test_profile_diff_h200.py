"""profile diff on the captures of tests/fixtures/h200/profile_diff/: two variants of one Triton rmsnorm kernel on
the H200, one of them spilling. The diff of the live details pages must show what the card showed when it read
the .ncu-rep reports itself (diff_reports_json.out)."""

from __future__ import annotations

import json
from pathlib import Path

from hotkernel.insight import profile_diff as pd
from hotkernel.insight.top_kernels import short_kernel_name

CAPTURES = Path(__file__).parent.parent / "fixtures" / "h200" / "profile_diff"


def changes(result: pd.ProfileDiff) -> dict[str, pd.MetricChange]:
    (row,) = result.kernels
    return {c.metric: c for c in row.metrics}


def test_a_spilling_variant_shows_registers_local_memory_occupancy_and_time() -> None:
    result = pd.diff_reports(CAPTURES / "details_wide.out", CAPTURES / "details_narrow.out")
    assert result.kernel_count == 1 and result.kernels[0].match == "name"
    moved = changes(result)
    assert moved["registers"].a == 64 and moved["registers"].b == 255
    assert moved["local_bytes"].a == 0 and moved["local_bytes"].b > 1e8
    assert moved["occupancy_pct"].b < moved["occupancy_pct"].a / 3
    assert moved["time_us"].b > moved["time_us"].a * 1.3
    assert all(moved[name].moved for name in ("registers", "local_bytes", "occupancy_pct", "time_us"))
    assert result.moved_most and result.moved_most[0].startswith("rmsnorm_kernel")


def test_the_raw_pages_of_the_saved_reports_agree_with_what_the_card_printed() -> None:
    local = pd.diff_reports(CAPTURES / "rep_a_raw.out", CAPTURES / "rep_b_raw.out")
    assert_agrees(local, json.loads((CAPTURES / "diff_reports_json.out").read_text()))


def test_a_targets_baseline_against_its_candidate_through_the_contract() -> None:
    """--target on the card: torch's layer-norm kernel against the kept Triton row kernel, one unmatched kernel
    on each side paired as before/after; the raw pages say what the card printed from the reports."""
    local = pd.diff_reports(CAPTURES / "target_a_raw.out", CAPTURES / "target_b_raw.out")
    (row,) = local.kernels
    assert row.match == "sole" and short_kernel_name(row.name_a or "") == "vectorized_layer_norm_kernel"
    assert row.kernel == "_rmsnorm_row_kernel" and row.calls_a == row.calls_b == 3
    moved = changes(local)
    assert moved["time_us"].b < 0.7 * moved["time_us"].a and moved["dram_pct"].b > moved["dram_pct"].a
    assert_agrees(local, json.loads((CAPTURES / "diff_target.out").read_text()))


def assert_agrees(local: pd.ProfileDiff, card: dict) -> None:
    (row,) = card["kernels"]
    printed = {c["metric"]: c for c in row["metrics"]}
    for name, mine in changes(local).items():
        theirs = printed[name]
        for side in ("a", "b"):
            if theirs[side] is None:
                assert getattr(mine, side) is None
            else:
                assert abs(getattr(mine, side) - theirs[side]) <= 1e-6 * max(1.0, abs(theirs[side])), (name, side)


def _side(label: str, *captures: str) -> pd.Side:
    """One report's side from the launches of real captures, as one process that ran them all would show them."""
    launches = [launch for name in captures for launch in pd.parse_ncu_details((CAPTURES / name).read_text())]
    return pd.Side(Path(label), "ncu-csv", len(launches), pd.kernels_of_launches(launches))


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
    result = pd.compare(both, narrow)
    rows = {(row.match, row.launch_a, row.launch_b): row for row in result.kernels}
    same = rows[("name", "grid (4096, 1, 1) block (32, 1, 1)", "grid (4096, 1, 1) block (32, 1, 1)")]
    assert not same.moved and same.calls_a == same.calls_b == 2
    wide = rows[("only_a", "grid (4096, 1, 1) block (256, 1, 1)", None)]
    assert wide.kernel == "rmsnorm_kernel (grid (4096, 1, 1) block (256, 1, 1))"
    assert any(line.startswith("rmsnorm_kernel (grid (4096, 1, 1) block (256, 1, 1)): only in A")
               for line in result.moved_most)


def test_a_kernel_whose_launch_changed_still_pairs_by_name() -> None:
    """The wide variant against the narrow one: one name, another block size, paired by name, the launch shown."""
    result = pd.compare(_side("A", "details_wide.out"), _side("B", "details_narrow.out"))
    (row,) = result.kernels
    assert row.match == "name" and row.kernel == "rmsnorm_kernel"
    assert (row.launch_a, row.launch_b) == ("grid (4096, 1, 1) block (256, 1, 1)", "grid (4096, 1, 1) block (32, 1, 1)")
    assert "    launch: grid (4096, 1, 1) block (256, 1, 1) -> grid (4096, 1, 1) block (32, 1, 1)" in (
        pd.summary_lines(result))


def test_the_ncu_report_modules_launch_sizes_make_the_configuration() -> None:
    """Read through NVIDIA's module a launch has no CSV grid/block columns but launch__grid_size and
    launch__block_size metrics (requested with the others); without either there is no configuration."""
    launch = {"name": "k", "grid": None, "block": None,
              "metrics": {"launch__grid_size": ("1024.0", ""), "launch__block_size": ("256.0", "")}}
    assert pd.launch_config(launch) == "grid 1024 block 256"
    assert pd.launch_config({"name": "k", "metrics": {}}) is None
