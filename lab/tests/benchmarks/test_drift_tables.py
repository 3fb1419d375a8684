"""lab/benchmarks/drift_tables.py on the committed H200 evidence: the figures lab/speedrun.md quotes from the row-count
sweep and the drift watch come out of the raw files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hotkernel.store.compact import decode

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "lab" / "benchmarks"))
import drift_tables  # noqa: E402

EVIDENCE = ROOT / "lab" / "benchmarks" / "evidence"


def _cells(table: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in table.splitlines() if line.startswith("| ")]


def test_rows_table_gives_the_kept_kernels_share_of_neg_at_the_headline_and_twice_it() -> None:
    table = drift_tables.rows_table([EVIDENCE / "speedrun" / "h200_c41" / "row_waves.jsonl"])
    rows = {r[0]: r for r in _cells(table)[2:]}
    assert rows["4096"][1:3] == ["31.03", "3917"] and rows["4096"][-2:] == ["96.4%", "98.1%"], rows["4096"]
    assert rows["8192"][-2] == "99.6%" and rows["4224"][2] == "3923", (rows["8192"], rows["4224"])


def test_watch_table_has_each_verify_with_the_clock_of_its_busy_seconds() -> None:
    rows = _cells(drift_tables.watch_table(EVIDENCE / "h200_sync" / "drift_watch_1655"))[2:]
    assert [r[1] for r in rows] == ["gemv", "int4_gemv"] * 6
    assert {r[-1] for r in rows} == {"1980"}
    gemv = [float(r[2].split()[0]) for r in rows if r[1] == "gemv"]
    candidate_us = [float(r[4]) for r in rows if r[1] == "gemv"]
    assert (min(gemv), max(gemv)) == (1.0588, 1.0662) and max(candidate_us) - min(candidate_us) < 0.05


def test_spread_shows_the_placement_pad_keeping_reruns_inside_the_interval() -> None:
    """gemv on one card, verifies alternating between the contract as it is and one whose workers first allocate a
    pad of random size (lab/benchmarks/device/placement_pad_patch.py): the reruns land inside each other's intervals
    with the pad (all 90 ordered pairs of ten verifies), not without it (4 of 12)."""
    ab = EVIDENCE / "h200_sync" / "placement_ab_1729"
    padded = sorted(ab.glob("verify_*_padded.json")) + sorted(
        (EVIDENCE / "h200_sync" / "placement_pad_1724").glob("verify_?_gemv.json"))
    assert drift_tables.spread_line(padded).endswith("(0.31%), intervals 0.60-1.00% wide, 90/90 reruns inside an "
                                                     "interval")
    plain = drift_tables.spread_line(sorted(ab.glob("verify_*_plain.json")))
    assert plain.startswith("4 verifies (contract 2660899c): 1.0602-1.0662x") and plain.endswith("4/12 reruns inside "
                                                                                                  "an interval")


def test_records_gives_the_spread_the_docs_quote_for_the_kept_gemv_and_int4_kernels() -> None:
    """lab/speedrun.md and docs/leaderboard.md: gemv's 16 records of one contract and candidate file on nine cards,
    1.057-1.077x, intervals 0.4-1.8% wide; the int4 kernel's six records on four cards under that contract,
    1.495-1.507x, and six on three cards under the contract with the placement pad, 1.491-1.504x."""
    gemv = drift_tables.records_lines("gemv", "rows_bm4_bk2048_w4")
    assert "contract 2660899c, candidate 8fdde4b0: 16 records, 1.0574-1.0773x, 9 cards, intervals 0.38-1.80% wide" \
        in gemv, gemv
    assert "contract 41b7e6fa, candidate 8fdde4b0: 6 records, 1.0577-1.0660x, 3 cards, intervals 0.69-1.25% wide" \
        in gemv, gemv
    int4 = drift_tables.records_lines("int4_gemv", "mma_szbfx_bn256_sk8_w4_st3")
    for line in ("contract 2660899c, candidate a46cee2a: 3 records, 1.4951-1.4985x, 2 cards",
                 "contract 2660899c, candidate e4c78d4f: 3 records, 1.4997-1.5065x, 2 cards",
                 "contract 41b7e6fa, candidate e4c78d4f: 6 records, 1.4912-1.5042x, 3 cards, intervals 0.87-1.26%"):
        assert line in int4, int4


def test_pair_gives_each_second_speedup_against_the_first_interval() -> None:
    """lab/speedrun.md's reproducibility tables: 4 of 7 at 3eb5ecf (before the placement pad), 6 of 7 in each of
    the two pairs with it; outside, by how much beyond the interval's nearer end."""
    before = drift_tables.pair_table(EVIDENCE / "h200_sync" / "run_1647").splitlines()
    assert before[-1].startswith("4 of 7") and "| 1.057x [1.055, 1.060] | 1.067x | **no** (+0.7%) |" in before[3]
    first = drift_tables.pair_table(EVIDENCE / "h200_sync" / "run_1933").splitlines()
    assert first[-1].startswith("6 of 7")
    assert first[2] == ("| decode_attention (`pdl_2wave_bn64_st4`) | 1.024x [1.019, 1.029] | 1.016x (inconclusive) | "
                        "**no** (-0.3%) |")
    second = drift_tables.pair_table(EVIDENCE / "h200_sync" / "run_1950").splitlines()
    assert second[-1].startswith("6 of 7") and second[5].endswith("| 1.566x | **no** (-0.027%) |"), second[5]
    third = drift_tables.pair_table(EVIDENCE / "h200_sync" / "run_1829").splitlines()
    assert third[-1].startswith("6 of 7") and third[8].endswith("| 1.611x | **no** (+0.1%) |"), third[8]
    assert sum(line.endswith("| yes |") for line in first + second + third) == 18


def test_reruns_puts_the_pairs_spread_at_twice_what_the_interval_assumes() -> None:
    """lab/speedrun.md: over the 21 headlines of the three sync pairs under the placement pad, the second run's
    log speedup minus the first's, in units of the standard error the verifies' own rounds give, has a mean
    square of 2.42 where independent rounds would give about 1.21, and leans low (mean -0.46)."""
    sync = EVIDENCE / "h200_sync"
    last = drift_tables.reruns_lines([sync / "run_1933", sync / "run_1950", sync / "run_1829"],
                                     trials=20_000).splitlines()[-1]
    head, model = last.split(", against ")
    assert head == "21 headlines in 3 pairs: mean z -0.46, mean z^2 2.42", last
    assert 1.15 <= float(model.split()[0]) <= 1.27 and last.endswith("2 beyond |z| 2.58; 16 second runs lower"), last


def test_perturb_gives_what_the_inline_perturbation_costs_each_side() -> None:
    """docs/verdicts.md and lab/speedrun.md: on one card, each kernel ran 0.46-1.41 us slower per call with the
    two one-element copies around it than without them, beyond the 2.85-2.92 us of their own that the timer
    subtracts; the speedups moved from 1.026x to 1.020x (decode attention) ... 3.721x to 3.798x (softmax)."""
    rows = {r[0]: r for r in _cells(drift_tables.perturb_table(EVIDENCE / "contract_v2" / "perturb_ab_1846"))[2:]}
    assert rows["decode_attention"][1:3] == ["1.026x [1.023, 1.028]", "1.020x [1.016, 1.024]"]
    assert rows["int4_gemv"][1:3] == ["1.501x [1.497, 1.506]", "1.520x [1.515, 1.524]"]
    costs = [float(rows[t][i].split(" / ")[2]) for t in rows for i in (3, 4)]
    assert (min(costs), max(costs)) == (0.46, 1.41) and len(costs) == 10
    assert rows["softmax"][4] == "35.09 / 34.00 / +1.09" and rows["gemv"][5] == "2.86"


def test_perturb_gives_a_column_per_mode_and_the_fused_copy_costs_less() -> None:
    """perturb_ab.sh with HK_MODES='perturbed fused plain' at f4279c7: two copies per call, the one-copy patch
    the contract then adopted, none. The figures lab/speedrun.md quotes."""
    header, _, *body = _cells(drift_tables.perturb_table(EVIDENCE / "contract_v2" / "fused_ab_2041"))
    rows = {row[0]: row for row in body}
    assert header[1:4] == ["perturbed [99% interval]", "fused [99% interval]", "plain [99% interval]"]
    assert rows["int4_gemv"][1:4] == ["1.496x [1.495, 1.498]", "1.507x [1.504, 1.509]", "1.518x [1.514, 1.521]"]
    assert rows["rmsnorm"][2] == "1.572x [1.570, 1.575]" and rows["softmax"][2] == "3.769x [3.756, 3.782]"
    two = [float(rows[t][i].split(" / ")[3]) for t in rows for i in (4, 5)]
    one = [float(rows[t][i].split(" / ")[4]) for t in rows for i in (4, 5)]
    assert all(o < t for o, t in zip(one, two, strict=True)) and len(one) == 10
    assert (min(one), max(one)) == (0.33, 1.88) and (min(two), max(two)) == (0.48, 2.31)


def test_rounds_shows_decode_candidate_slow_and_fast_stretches_the_pad_does_not_set() -> None:
    watch = EVIDENCE / "h200_sync" / "drift_watch_1941"
    lines = drift_tables.rounds_lines(sorted(watch.glob("verify_*_decode_attention.json"))).splitlines()
    fifth = [line for line in lines if line.startswith("verify_5_decode_attention.json candidate")][0]
    times = [float(word) for word in fifth.split(": ")[1].split()[::2]]
    assert min(times) >= 38.24 and len(times) == 7  # all seven rounds slow, whatever their pads
    assert lines[-1] == "candidate: correlation of time with pad over 35 runs: +0.38"


def test_ideal_rounds_land_a_rerun_inside_the_interval_about_96_percent_of_the_time() -> None:
    line = drift_tables.ideal_line(trials=20_000)
    rate = float(line.split(" in ")[1].split("%")[0])
    assert 95.0 <= rate <= 97.0, line


def test_watch_ends_with_the_temperature_range_of_the_whole_watch() -> None:
    table = drift_tables.watch_table(EVIDENCE / "h200_sync" / "drift_watch_1655")
    assert table.splitlines()[-1] == "GPU temperature over the watch: 36-51 C"


def test_shares_put_the_kept_row_kernels_near_94_percent_without_the_copies() -> None:
    """lab/speedrun.md: without the copies the kept rmsnorm and softmax kernels ran at 94.1% and 93.8% of the
    calibrated copy ceiling, with them 91.2% and 90.9%."""
    lines = drift_tables.shares_lines(EVIDENCE / "contract_v2" / "perturb_ab_1846").splitlines()
    rmsnorm = next(line for line in lines if line.startswith("rmsnorm"))
    softmax = next(line for line in lines if line.startswith("softmax"))
    assert rmsnorm == ("rmsnorm candidate: perturbed 34.97 us, 91.2%; plain 33.90 us, 94.1% of the 4209 GB/s copy "
                       "ceiling")
    assert "perturbed 35.09 us, 90.9%; plain 34.00 us, 93.8%" in softmax


def test_shares_with_one_copy_per_call_sit_between_two_copies_and_none() -> None:
    """lab/speedrun.md: one copy per call (fused_ab_2041) put rmsnorm and softmax at 92.4% and 92.3%."""
    lines = drift_tables.shares_lines(EVIDENCE / "contract_v2" / "fused_ab_2041").splitlines()
    rmsnorm = next(line for line in lines if line.startswith("rmsnorm"))
    softmax = next(line for line in lines if line.startswith("softmax"))
    assert "perturbed 34.94 us, 91.3%; fused 34.51 us, 92.4%; plain 33.93 us, 94.0%" in rmsnorm
    assert "perturbed 35.10 us, 90.8%; fused 34.55 us, 92.3%; plain 34.02 us, 93.7%" in softmax


def test_the_one_copy_records_subtract_half_the_two_copy_overhead() -> None:
    """lab/speedrun.md, "One copy per call": the 14 GPU records of the pair at 4012007 subtracted 1.41-1.68 us per
    call, where two copies took about 2.85 (perturb_ab_1846's subtracted overhead: 2.85-2.92 us)."""

    records = sorted((ROOT / "results").glob("*/20261204T205*.json"))
    found = [run["data"]["per_shape"][0]["overhead_ms"] for path in records
             for run in decode(json.loads(path.read_text()))["result"]["runs"]]  # compact records: decoded
    assert len(records) == 14 and len(found) == 14 * 14  # seven rounds, two runs each
    assert (round(1e3 * min(found), 2), round(1e3 * max(found), 2)) == (1.41, 1.68)


def test_the_second_card_repeats_the_two_copy_cost() -> None:
    """lab/speedrun.md: perturb_ab_2057 ran the two-copy contract (its perturbed runs say contract 41b7e6fa);
    two copies cost 0.43-1.25 us per call per kernel there, int4 1.500x against 1.521x without."""
    folder = EVIDENCE / "contract_v2" / "perturb_ab_2057"
    for path in folder.glob("verify_*_perturbed.json"):  # "plain" runs a patched copy of it
        assert "41b7e6fa87ad3b93" in path.read_text()
    _, _, *body = _cells(drift_tables.perturb_table(folder))
    rows = {row[0]: row for row in body}
    costs = [float(rows[t][i].split(" / ")[2]) for t in rows if t != "softmax" for i in (3, 4)]
    assert (min(costs), max(costs)) == (0.43, 1.25)
    assert rows["int4_gemv"][1:3] == ["1.500x [1.491, 1.509]", "1.521x [1.519, 1.523]"]
    assert rows["softmax"][2] == "not run"


def test_both_pairs_under_one_copy_per_call_put_every_rerun_inside() -> None:
    """lab/speedrun.md, "Reproducibility with one copy per call": 7 of 7 on each of two cards, and the
    standardised differences of the 14 headlines near the model's spread."""
    sync = EVIDENCE / "h200_sync"
    first = drift_tables.pair_table(sync / "run_2052").splitlines()
    second = drift_tables.pair_table(sync / "run_2112").splitlines()
    assert first[-1].startswith("7 of 7") and second[-1].startswith("7 of 7")
    assert first[4] == "| int4_gemv (`mma_szbfx_bn256_sk8_w4_st3`) | 1.508x [1.505, 1.511] | 1.508x | yes |"
    assert second[4] == "| int4_gemv (`mma_szbfx_bn256_sk8_w4_st3`) | 1.512x [1.501, 1.523] | 1.510x | yes |"
    last = drift_tables.reruns_lines([sync / "run_2052", sync / "run_2112"], trials=20_000).splitlines()[-1]
    head, model = last.split(", against ")
    assert head == "14 headlines in 2 pairs: mean z +0.10, mean z^2 1.29", last
    assert 1.15 <= float(model.split()[0]) <= 1.27 and last.endswith("0 beyond |z| 2.58; 7 second runs lower"), last


def test_one_copy_per_call_costs_a_third_to_a_half_of_a_microsecond() -> None:
    """lab/speedrun.md, "One copy per call": under the contract of 4012007 on a third card (perturb_ab_2118) the
    one copy cost int4 0.37/0.36 us and rmsnorm 0.53/0.63 us per call (baseline/candidate) beyond what is
    subtracted; int4 1.508x against 1.521x without, rmsnorm at 92.5% of the ceiling against 94.2%."""
    folder = EVIDENCE / "contract_v2" / "perturb_ab_2118"
    for path in folder.glob("verify_*_perturbed.json"):
        assert "ee84c307c4c8287f" in path.read_text()
    rows = {r[0]: r for r in _cells(drift_tables.perturb_table(folder))[2:]}
    assert rows["int4_gemv"][1:5] == ["1.508x [1.506, 1.511]", "1.521x [1.518, 1.523]", "20.84 / 20.46 / +0.37",
                                      "13.82 / 13.46 / +0.36"]
    assert rows["rmsnorm"][3:6] == ["54.14 / 53.61 / +0.53", "34.49 / 33.86 / +0.63", "1.42"]
    shares = drift_tables.shares_lines(folder)
    assert "rmsnorm candidate: perturbed 34.49 us, 92.5%; plain 33.86 us, 94.2%" in shares
