"""The tables lab/speedrun.md quotes from two H200 evidence folders, recomputed from their raw files.

    python lab/benchmarks/drift_tables.py rows  lab/benchmarks/evidence/speedrun/h200_c41/row_waves.jsonl ...
    python lab/benchmarks/drift_tables.py watch lab/benchmarks/evidence/h200_sync/drift_watch_1655
    python lab/benchmarks/drift_tables.py spread lab/benchmarks/evidence/h200_sync/placement_ab_1729/verify_*_plain.json ...
    python lab/benchmarks/drift_tables.py records gemv rows_bm4_bk2048_w4
    python lab/benchmarks/drift_tables.py pair lab/benchmarks/evidence/h200_sync/run_1933
    python lab/benchmarks/drift_tables.py rounds lab/benchmarks/evidence/h200_sync/drift_watch_1941/verify_*_decode*.json
    python lab/benchmarks/drift_tables.py ideal
    python lab/benchmarks/drift_tables.py perturb lab/benchmarks/evidence/contract_v2/perturb_ab_1846
    python lab/benchmarks/drift_tables.py shares lab/benchmarks/evidence/contract_v2/perturb_ab_1846
    python lab/benchmarks/drift_tables.py reruns lab/benchmarks/evidence/h200_sync/run_1933 ...

`rows`: per row count, each kernel's GB/s from `lab/benchmarks/device/row_waves.py` and the kept kernels' share of what
`torch.neg` moves on the same bytes. `watch`: per verify of the drift watch (`hotkernel verify --json` outputs and
the `steps.txt` lines "ROUND TARGET rc=.. wall_s=S at=END"), the speedup, both sides' median times, and the mean
GPU temperature, memory temperature, power and the SM clocks of its busy seconds (SMs over 20% busy) in
`nvidia-smi dmon -o DT`. `spread`: for one group of verifies of the same files (the paths given, each a
`hotkernel verify --json` output), the range of their speedups, their intervals' widths, and the share of ordered
pairs (i, j), i != j, whose speedup j lies inside interval i: how often a rerun lands inside a verify's interval.
`records TARGET VARIANT`: the `faster` candidate records under `results/` whose `who` names VARIANT (vouched, not
invalidated), all of them and then per (contract, candidate file): how many, their speedups' range, on how many
cards, and their intervals' widths. `pair FOLDER`: a sync pair's headlines (`sync_1.json`, `sync_2.json` and their
records), each second speedup against the first run's interval. `rounds`: each side's per-round times with their
runs' placement pads. `ideal`: how often a rerun would land inside the interval if rounds were independent normal
draws, the model the interval assumes. `perturb FOLDER`: per target, the verify under the contract ("perturbed")
against the one without the per-call perturbation (``lab/benchmarks/device/perturb_ab.sh``, "plain"), and what the
perturbation cost each side beyond what the timer subtracts. `shares FOLDER`: the candidates' times there as shares of
the calibrated copy ceiling. `reruns FOLDER...`: over the sync pairs' headlines,
each difference between the two runs' log speedups in units of its standard error from the verifies' own
round-to-round spread, whose variance the interval's model puts at about 1.2 (simulated with the same rounds).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import statistics
import sys
from pathlib import Path

from speedrun_summary import copy_ceiling_gbps

from hotkernel.run.verdict import student_t_quantile
from hotkernel.store.leaderboard import load_records

ROOT = Path(__file__).resolve().parents[2]
SHARE_OF_NEG = ("rmsnorm_candidate", "softmax_candidate")


def rows_table(paths: list[Path]) -> str:
    """Markdown: one line per (file, row count), GB/s of every kernel and the kept kernels' share of neg's."""
    lines = []
    for path in paths:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        kernels = list(dict.fromkeys(r["kernel"] for r in rows))
        lines += [f"{path}:", "", "| rows | rows an SM | " + " | ".join(f"{k} GB/s" for k in kernels)
                  + " | " + " | ".join(f"{k} / neg" for k in SHARE_OF_NEG) + " |",
                  "| " + " | ".join(["---"] * (2 + len(kernels) + len(SHARE_OF_NEG))) + " |"]
        gbps = {(r["kernel"], r["rows"]): r["gbps"] for r in rows}
        for n in sorted({r["rows"] for r in rows}):
            per_sm = next(r["rows_per_sm"] for r in rows if r["rows"] == n)
            shares = [f"{100 * gbps[(k, n)] / gbps[('neg', n)]:.1f}%" for k in SHARE_OF_NEG]
            lines.append(f"| {n} | {per_sm} | " + " | ".join(f"{gbps[(k, n)]:.0f}" for k in kernels) + " | "
                         + " | ".join(shares) + " |")
        lines.append("")
    return "\n".join(lines)


def _dmon(path: Path) -> list[tuple[dt.datetime, float, float, float, int, int]]:
    """(time, GPU temperature C, memory temperature C, power W, SM clock MHz, SM busy %) per second of
    `nvidia-smi dmon -s pucm -o DT`."""
    samples = []
    for line in path.read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        samples.append((dt.datetime.strptime(f[0] + f[1], "%Y%m%d%H:%M:%S"), float(f[4]), float(f[5]),
                        float(f[3]), int(f[13]), int(f[6])))
    return samples


def decided(result: dict) -> tuple[float, float, float, str]:
    """(speedup, low, high, verdict) of a verify's result: from its decision, which an inconclusive verify also
    carries (its top-level ``speedup`` and ``interval`` are then null)."""
    decision = result["decision"]
    return decision["speedup"], decision["speedup_low"], decision["speedup_high"], decision["verdict"]


def watch_table(folder: Path) -> str:
    """Markdown: one line per verify of the drift watch, with the card's state over its seconds."""
    samples = _dmon(folder / "dmon.txt")
    lines = ["| verify | target | speedup [interval] | baseline us | candidate us | GPU C | memory C | W | SM MHz |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for step in (folder / "steps.txt").read_text().splitlines():
        index, target, _, wall, at = step.split()
        end = dt.datetime.strptime(at.removeprefix("at="), "%Y-%m-%dT%H:%M:%SZ")
        window = [s for s in samples if end - dt.timedelta(seconds=int(wall.removeprefix("wall_s="))) <= s[0] <= end]
        result = json.loads((folder / f"verify_{index}_{target}.json").read_text())
        speedup, low, high, _ = decided(result)
        busy = sorted({s[4] for s in window if s[5] > 20})  # the clocks of the seconds the SMs were > 20% busy
        mean = [sum(s[i] for s in window) / len(window) for i in (1, 2, 3)]
        lines.append(f"| {index} | {target} | {speedup:.4f} [{low:.4f}, {high:.4f}] | "
                     f"{1e3 * result['baseline']['stats']['median_ms']:.3f} | "
                     f"{1e3 * result['candidate']['stats']['median_ms']:.3f} | {mean[0]:.1f} | {mean[1]:.1f} | "
                     f"{mean[2]:.0f} | {', '.join(map(str, busy))} |")
    temperatures = [s[1] for s in samples]
    lines.append(f"GPU temperature over the watch: {min(temperatures):.0f}-{max(temperatures):.0f} C")
    return "\n".join(lines)


def records_lines(target: str, variant: str, results_dir: Path = ROOT / "results") -> str:
    """One line for every counted `faster` record of the variant, then one per (contract, candidate file)."""
    found = [record for _, record in load_records(results_dir)
             if record.target == target and record.role == "candidate" and record.invalidated is None
             and record.result.verdict == "faster" and (record.who or "").split()[-1:] == [variant]]
    groups: dict[str, list] = {"all": found}
    for record in found:
        key = f"contract {record.result.contract_sha256[:8]}, candidate {record.result.candidate.sha256[:8]}"
        groups.setdefault(key, []).append(record)
    lines = []
    for label, records in groups.items():
        speedups = [r.result.speedup for r in records]
        widths = [100 * (r.result.interval[1] - r.result.interval[0]) / r.result.speedup for r in records]
        cards = {r.provenance.gpu_uuid for r in records}
        lines.append(f"{target} {variant} {label}: {len(records)} records, {min(speedups):.4f}-{max(speedups):.4f}x, "
                     f"{len(cards)} cards, intervals {min(widths):.2f}-{max(widths):.2f}% wide")
    return "\n".join(lines)


def spread_line(paths: list[Path]) -> str:
    """One line: how many verifies, their speedups' range, their intervals' widths (% of the speedup), and the
    share of ordered pairs whose second speedup lies inside the first's interval."""
    results = [json.loads(path.read_text()) for path in sorted(paths)]
    files = {(r["target"], r["baseline"]["sha256"], r["candidate"]["sha256"]) for r in results}
    if len(files) != 1:
        raise SystemExit(f"spread: give verifies of one target's same baseline and candidate, got {len(files)} "
                         f"(targets {', '.join(sorted({f[0] for f in files}))})")
    decisions = [decided(r) for r in results]
    speedups = [d[0] for d in decisions]
    widths = sorted(100 * (high - low) / speedup for speedup, low, high, _ in decisions)
    pairs = [(a, b) for a in decisions for b in decisions if a is not b]
    inside = sum(a[1] <= b[0] <= a[2] for a, b in pairs)
    verdicts = sorted({d[3] for d in decisions} - {"faster"})
    contracts = sorted({r["contract_sha256"][:8] for r in results})
    return (f"{len(results)} verifies (contract {', '.join(contracts)}): {min(speedups):.4f}-{max(speedups):.4f}x "
            f"({100 * (max(speedups) / min(speedups) - 1):.2f}%), intervals {widths[0]:.2f}-{widths[-1]:.2f}% wide, "
            f"{inside}/{len(pairs)} reruns inside an interval"
            + "".join(f", {sum(d[3] == v for d in decisions)} {v}" for v in verdicts))


def pair_records(folder: Path) -> list[tuple[str, dict, dict]]:
    """(headline, first run's record, second run's record) for each headline of a sync pair (``sync_1.json``,
    ``sync_2.json`` in FOLDER, their records under ``results/``)."""
    runs = [{item["name"]: item for item in json.loads((folder / f"sync_{i}.json").read_text())["items"]}
            for i in (1, 2)]
    return [(name, *(json.loads((ROOT / run[name]["record"]).read_text()) for run in runs)) for name in runs[0]]


def pair_table(folder: Path) -> str:
    """Markdown: each headline of a sync pair (``pair_records``), the first run's speedup and interval, the second
    run's speedup, and whether it lies inside; outside, by how much beyond the nearer end, in % of that end. Ends
    with the count inside."""
    pairs = pair_records(folder)
    lines = ["| target | run 1 [99% interval] | run 2 | inside run 1's interval |", "| --- | --- | --- | --- |"]
    inside_count = 0
    for name, record, again_record in pairs:
        speedup, low, high, _ = decided(record["result"])
        again, _, _, verdict = decided(again_record["result"])
        who = record["who"]
        label = name if " competitor " in name else f"{name} (`{who.split()[-1]}`)"
        inside = low <= again <= high
        inside_count += inside
        beyond = 100 * (again / (high if again > high else low) - 1)
        where = "yes" if inside else f"**no** ({beyond:+.1f}%)" if abs(beyond) >= 0.05 else f"**no** ({beyond:+.3f}%)"
        second = f"{again:.3f}x" + ("" if verdict == "faster" else f" ({verdict})")
        lines.append(f"| {label} | {speedup:.3f}x [{low:.3f}, {high:.3f}] | {second} | {where} |")
    lines.append(f"{inside_count} of {len(pairs)} second-run speedups inside the first run's interval")
    return "\n".join(lines)


def rounds_lines(paths: list[Path]) -> str:
    """Per verify (``hotkernel verify --json`` outputs, or records), each side's per-round time in order and its
    run's placement pad; then, over all of them, each side's correlation of time with pad size."""
    lines, pairs = [], {"baseline": [], "candidate": []}
    for path in paths:
        data = json.loads(path.read_text())
        runs = data.get("result", data)["runs"]
        for role in pairs:
            mine = [(run["data"]["ms"] * 1e3, run["data"]["placement_pad_bytes"] >> 20) for run in runs
                    if run["role"] == role and run["data"].get("ms")]
            pairs[role] += mine
            lines.append(f"{path.name} {role} us (pad MiB): " + " ".join(f"{us:.2f} ({pad})" for us, pad in mine))
    for role, points in pairs.items():
        lines.append(f"{role}: correlation of time with pad over {len(points)} runs: "
                     f"{statistics.correlation([p[0] for p in points], [p[1] for p in points]):+.2f}")
    return "\n".join(lines)


def ideal_line(rounds: int = 7, headlines: int = 7, trials: int = 100_000, seed: int = 1) -> str:
    """How often a rerun lands inside a verify's 99% interval when every round is independent and normal (the
    verify's own model): simulated verifies of ``rounds`` log-ratios, the t interval of the first, the mean of
    the second; and how often all of ``headlines`` such pairs do."""
    rng = random.Random(seed)
    t_critical = student_t_quantile(0.995, rounds - 1)  # verify's two-sided 99% interval
    inside = 0
    for _ in range(trials):
        first = [rng.gauss(0.0, 1.0) for _ in range(rounds)]
        second = statistics.fmean(rng.gauss(0.0, 1.0) for _ in range(rounds))
        half = t_critical * statistics.stdev(first) / rounds**0.5
        inside += abs(second - statistics.fmean(first)) <= half
    rate = inside / trials
    return (f"independent normal rounds, n={rounds}: a rerun inside the 99% interval in {100 * rate:.1f}% of "
            f"{trials} simulated pairs; all {headlines} headlines of a sync pair inside: {100 * rate**headlines:.0f}%")


def _median_us(result: dict, role: str) -> float:
    return 1e3 * statistics.median(run["data"]["ms"] for run in result["runs"] if run["role"] == role)


def perturb_results(folder: Path) -> dict[str, dict[str, dict]]:
    """target -> mode -> verify result of a ``perturb_ab.sh`` folder (round 1), modes in the order perturbed (the
    contract of the day), fused (the one-copy patch, only in ``fused_ab_2041``), plain (no perturbation), each
    where the folder has it."""
    found: dict[str, dict[str, dict]] = {}
    for path in sorted(folder.glob("verify_1_*_perturbed.json")):
        target = path.name.removeprefix("verify_1_").removesuffix("_perturbed.json")
        found[target] = {mode: json.loads((folder / f"verify_1_{target}_{mode}.json").read_text())
                         for mode in ("perturbed", "fused", "plain")
                         if (folder / f"verify_1_{target}_{mode}.json").is_file()}
    return found


def perturb_table(folder: Path) -> str:
    """Markdown: per target (``perturb_results``) the speedup in each mode, each side's median time in each, and the
    cost: its time in a mode less its time in "plain", what that mode's copies cost the side beyond the overhead
    the timer subtracted."""
    results_by_target = perturb_results(folder)
    if not results_by_target:
        raise SystemExit(f"perturb: {folder} has no verify_1_*_perturbed.json (lab/benchmarks/device/perturb_ab.sh)")
    modes = list(next(iter(results_by_target.values())))
    times = " / ".join(modes)
    costs = " / ".join(f"{m} cost" for m in modes if m != "plain")
    lines = ["| target | " + " | ".join(f"{m} [99% interval]" for m in modes) + f" | baseline us ({times} / {costs}) | "
             f"candidate us ({times} / {costs}) | subtracted overhead us |",
             "| " + " | ".join(["---"] * (len(modes) + 4)) + " |"]
    for target, results in results_by_target.items():
        cells = []
        for mode in modes:
            if mode not in results:  # the budget stopped the run before this verify
                cells.append("not run")
                continue
            speedup, low, high, verdict = decided(results[mode])
            cells.append(f"{speedup:.3f}x [{low:.3f}, {high:.3f}]" + ("" if verdict == "faster" else f" ({verdict})"))
        for role in ("baseline", "candidate"):
            us = {mode: _median_us(results[mode], role) for mode in modes if mode in results}
            cells.append(" / ".join(f"{us[m]:.2f}" if m in us else "-" for m in modes) + "".join(
                f" / {us[m] - us['plain']:+.2f}" if m in us and "plain" in us else " / -"
                for m in modes if m != "plain"))
        overhead = statistics.median(run["data"]["per_shape"][0]["overhead_ms"] for run in results["perturbed"]["runs"])
        lines.append(f"| {target} | " + " | ".join(cells) + f" | {1e3 * overhead:.2f} |")
    return "\n".join(lines)


def shares_lines(folder: Path) -> str:
    """Per target and mode (``perturb_results``) the candidate's median time and its share of the calibrated copy
    ceiling: the manifest's bytes per call (the run's ``bytes``) over that time."""
    ceiling = copy_ceiling_gbps()
    lines = []
    for target, results in perturb_results(folder).items():
        cells = []
        for mode, result in results.items():
            us = _median_us(result, "candidate")
            cells.append(f"{mode} {us:.2f} us, {100 * result['runs'][0]['data']['bytes'] / us / 1e3 / ceiling:.1f}%")
        lines.append(f"{target} candidate: " + "; ".join(cells) + f" of the {ceiling:.0f} GB/s copy ceiling")
    return "\n".join(lines)


def _pair_z(folder: Path) -> list[tuple[str, float]]:
    """(headline, z) for each headline of a sync pair: the second run's log speedup minus the first's, over the
    standard error the two verifies' round-to-round spreads give it."""
    found = []
    for name, first, second in pair_records(folder):
        a, b = first["result"]["decision"], second["result"]["decision"]
        error = (a["log_ratio_sd"] ** 2 / a["n"] + b["log_ratio_sd"] ** 2 / b["n"]) ** 0.5
        found.append((name, (math.log(b["speedup"]) - math.log(a["speedup"])) / error))
    return found


def model_z_variance(rounds: int = 7, trials: int = 100_000, seed: int = 1) -> float:
    """The variance of that z when both verifies' rounds are independent normal draws (the interval's model)."""
    rng = random.Random(seed)
    total = 0.0
    for _ in range(trials):
        a, b = ([rng.gauss(0.0, 1.0) for _ in range(rounds)] for _ in range(2))
        error = (statistics.variance(a) / rounds + statistics.variance(b) / rounds) ** 0.5
        total += ((statistics.fmean(b) - statistics.fmean(a)) / error) ** 2
    return total / trials


def reruns_lines(folders: list[Path], trials: int = 100_000) -> str:
    """Per sync pair its headlines' z, then over all pairs their mean (a second run that leans one way) and mean
    square against the model's."""
    lines, zs = [], []
    for folder in folders:
        pair = _pair_z(folder)
        zs += [z for _, z in pair]
        lines.append(f"{folder.name}: " + ", ".join(f"{name} {z:+.2f}" for name, z in pair))
    observed = statistics.fmean(z * z for z in zs)
    lines.append(f"{len(zs)} headlines in {len(folders)} pairs: mean z {statistics.fmean(zs):+.2f}, mean z^2 "
                 f"{observed:.2f}, against "
                 f"{model_z_variance(trials=trials):.2f} if rounds were independent normal draws; "
                 f"{sum(abs(z) > 2.58 for z in zs)} beyond |z| 2.58; {sum(z < 0 for z in zs)} second runs lower")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    modes = {"rows": lambda paths: rows_table(paths), "watch": lambda paths: watch_table(paths[0]),
             "spread": lambda paths: spread_line(paths), "pair": lambda paths: pair_table(paths[0]),
             "rounds": lambda paths: rounds_lines(paths), "perturb": lambda paths: perturb_table(paths[0]),
             "shares": lambda paths: shares_lines(paths[0]),
             "reruns": lambda paths: reruns_lines(paths)}
    if argv[:1] == ["ideal"]:
        print(ideal_line())
        return
    if argv[:1] == ["records"] and len(argv) == 3:
        print(records_lines(argv[1], argv[2]))
        return
    if len(argv) < 2 or argv[0] not in modes:
        sys.exit("usage: python lab/benchmarks/drift_tables.py rows FILE.jsonl ... | watch FOLDER | spread VERIFY.json ... "
                 "| records TARGET VARIANT | pair FOLDER | rounds VERIFY.json ... | ideal | perturb FOLDER "
                 "| shares FOLDER | reruns FOLDER ...")
    print(modes[argv[0]]([Path(p) for p in argv[1:]]))


if __name__ == "__main__":
    main(sys.argv[1:])
