"""Error rates of the verdict rule (hotkernel.run.verdict.decide) and of the seed's rule, by simulation.

    python lab/benchmarks/verdict_sim.py --out verdict_sim.json                      # parametric mode only
    python lab/benchmarks/verdict_sim.py --samples verdict_samples.jsonl --out verdict_sim.json   # + H200 mode

Two modes, named in every output row:
* ``parametric``: synthetic rounds, an assumption, not a measurement. ln(time) = ln(mu) + drift_i + e_arm,i
  with drift_i ~ N(0, cv_round²) shared by both runs of round i, e ~ N(0, cv_run²) per run (log-normal
  run noise), and optionally a positive outlier delay |N(0, outlier_size²)| with probability outlier_prob
  per run.
* ``samples``: rounds resampled with replacement from per-process times recorded on the GPU by
  lab/benchmarks/device/verdict_samples.py (A and B ran identical code). Simulated round j takes the first-run
  process of a recorded round as the baseline when j is even and the second-run one when j is odd, i.e. the
  ABBA order of ``hotkernel verify``, so position effects are kept, not averaged away.

For every n: (a) A/A: how often each rule gives a verdict other than ``inconclusive`` on identical code; (b)
power: the smallest true speedup s (candidate times divided by s) that each rule calls ``faster`` in 80% and
95% of simulations. For ``decide`` this is exact per simulation (a shift of every d_i by ln s shifts the
interval), for the seed rule it is found by bisection per simulation (its decision is monotone in s). The
"no margin" power columns are decide's interval with epsilon = 0: what the interval alone could detect.
Reproducible: fixed seed; numpy is used here (never in the tool process).

``--sequential`` adds the rows of ``decide_sequential`` (a look after every round, alpha spent over the looks,
up to max_rounds = 2n): for identical code and for true speedups SHIFTS, how often it errs (any verdict for
identical code; the wrong direction for a true difference), how many rounds it runs, and how often its verdict
is the one ``decide`` gives on the first n rounds (the fixed-n verify) of the same simulated verify.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from hotkernel.run.verdict import (
    DEFAULT_ALPHA,
    MIN_EPSILON,
    MIN_ROUNDS,
    LookPlan,
    aa_noise,
    decide,
    decide_sequential,
    seed_rule,
    student_t_cdf,
)
from hotkernel.run.verdict import student_t_quantile as t_quantile

ROUNDS = (5, 7, 10, 15)  # n values simulated
SIMULATIONS = 20000  # per (mode, scenario or kernel, n)
SEED = 20261130
CANDIDATES_SCREENED = 20  # for the "any false faster among this many unchanged candidates" column
REFERENCE_CHECKS = 300  # simulations re-decided with the real hotkernel.run.verdict functions (must agree)
SHIFTS = (1.0, 1.01, 1 / 1.01, 1.02, 1.05, 1.2, 3.7)  # true speedups of the sequential rows (1.0: A/A)


@dataclass(frozen=True)
class Scenario:
    """Parametric noise model; every knob is a fraction of the kernel time (0.01 = 1%)."""

    name: str
    cv_run: float  # sd of ln(time) per process run
    cv_round: float  # sd of the drift shared by the two runs of one round
    outlier_prob: float = 0.0  # chance per run of an extra positive delay
    outlier_size: float = 0.0  # sd of that delay's half-normal distribution (fraction)


DEFAULT_SCENARIOS = (
    Scenario("independent runs, cv 1%", cv_run=0.01, cv_round=0.0),
    Scenario("independent runs, cv 0.5%", cv_run=0.005, cv_round=0.0),
    Scenario("round drift 1% + runs 0.5%", cv_run=0.005, cv_round=0.01),
    Scenario(
        "runs 0.5% + 5% chance of a 3% delay",
        cv_run=0.005,
        cv_round=0.0,
        outlier_prob=0.05,
        outlier_size=0.03,
    ),
)


def parametric_rounds(rng: np.random.Generator, sims: int, n: int, scenario: Scenario) -> tuple:
    """(baseline_ms, candidate_ms), each (sims, n), identical code: an A/A draw of the noise model."""
    drift = rng.normal(0.0, scenario.cv_round, (sims, n, 1))
    log_time = math.log(0.035) + drift + rng.normal(0.0, scenario.cv_run, (sims, n, 2))
    if scenario.outlier_prob > 0:
        hit = rng.random((sims, n, 2)) < scenario.outlier_prob
        log_time += np.log1p(hit * np.abs(rng.normal(0.0, scenario.outlier_size, (sims, n, 2))))
    times = np.exp(log_time)
    return times[..., 0], times[..., 1]


def sample_rounds(rng: np.random.Generator, sims: int, n: int, rounds: np.ndarray) -> tuple:
    """(baseline_ms, candidate_ms) resampled from recorded rounds (rows: first-run, second-run ms), ABBA."""
    picked = rounds[rng.integers(0, len(rounds), (sims, n))]  # (sims, n, 2)
    baseline_first = (np.arange(n) % 2 == 0)[None, :]
    baseline = np.where(baseline_first, picked[..., 0], picked[..., 1])
    candidate = np.where(baseline_first, picked[..., 1], picked[..., 0])
    return baseline, candidate


def decide_interval(baseline: np.ndarray, candidate: np.ndarray, alpha: float) -> tuple:
    """Vectorised decide: lower and upper end of the log-speedup interval, per simulation."""
    n = baseline.shape[1]
    log_ratio = np.log(baseline / candidate)
    half_width = t_quantile(1 - alpha / 2, n - 1) * log_ratio.std(axis=1, ddof=1) / math.sqrt(n)
    mean = log_ratio.mean(axis=1)
    return mean - half_width, mean + half_width


def verdict_codes(low: np.ndarray, high: np.ndarray, epsilon: float) -> np.ndarray:
    """+1 faster, -1 slower, 0 inconclusive (decide's rule on log intervals)."""
    return np.where(low > math.log1p(epsilon), 1, np.where(high < -math.log1p(epsilon), -1, 0))


def seed_codes(baseline: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """+1 faster, -1 slower, 0 inconclusive (the seed's unpaired rule)."""
    n = baseline.shape[1]
    gap = baseline.mean(axis=1) - candidate.mean(axis=1)
    bound = 2 * np.sqrt(baseline.var(axis=1, ddof=1) / n + candidate.var(axis=1, ddof=1) / n)
    return np.where(np.abs(gap) > bound, np.sign(gap), 0).astype(int)


def seed_threshold(baseline: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    """Per simulation: the smallest s at which the seed rule calls candidate/s faster (bisection)."""
    low, high = np.full(len(baseline), 0.5), np.full(len(baseline), 2.0)
    for _ in range(50):
        mid = 0.5 * (low + high)
        faster = seed_codes(baseline, candidate / mid[:, None]) == 1
        high, low = np.where(faster, mid, high), np.where(faster, low, mid)
    never = seed_codes(baseline, candidate / 2.0) != 1
    return np.where(never, np.inf, high)


def check_against_reference(baseline: np.ndarray, candidate: np.ndarray, alpha: float, epsilon: float) -> None:
    """The vectorised rules must agree with hotkernel.run.verdict on the first REFERENCE_CHECKS simulations."""
    codes = {"faster": 1, "slower": -1, "inconclusive": 0}
    low, high = decide_interval(baseline, candidate, alpha)
    fast, seed = verdict_codes(low, high, epsilon), seed_codes(baseline, candidate)
    for i in range(min(REFERENCE_CHECKS, len(baseline))):
        b, c = baseline[i].tolist(), candidate[i].tolist()
        reference = decide(b, c, alpha=alpha, epsilon=epsilon)
        near_edge = abs(low[i] - math.log1p(epsilon)) < 1e-9 or abs(high[i] + math.log1p(epsilon)) < 1e-9
        if (codes[reference.verdict] != fast[i] and not near_edge) or codes[seed_rule(b, c)] != seed[i]:
            raise SystemExit(f"verdict_sim: vectorised rule disagrees with hotkernel.run.verdict on simulation {i}")


def sequential_codes(
    baseline: np.ndarray, candidate: np.ndarray, alpha: float, epsilon: float, plan: LookPlan
) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised decide_sequential on max_rounds columns: (+1/-1/0 per simulation, rounds it ran)."""
    sims = len(baseline)
    codes, rounds = np.zeros(sims, dtype=int), np.full(sims, plan.max_rounds)
    open_ = np.ones(sims, dtype=bool)
    margin = math.log1p(epsilon)
    for k in range(MIN_ROUNDS, plan.max_rounds + 1):
        low, high = decide_interval(baseline[:, :k], candidate[:, :k], plan.look_alpha(k, alpha))
        code = verdict_codes(low, high, epsilon)
        within = np.zeros(sims, dtype=bool)
        if plan.within_alpha(k) > 0:
            low_w, high_w = decide_interval(baseline[:, :k], candidate[:, :k], plan.within_alpha(k))
            within = (low_w >= -margin) & (high_w <= margin)
        if k == plan.n:
            within |= np.abs(0.5 * (low + high)) <= margin
        stop = open_ & ((code != 0) | within | (k == plan.max_rounds))
        codes[stop], rounds[stop] = code[stop], k
        open_ &= ~stop
    return codes, rounds


def check_sequential_against_reference(
    baseline: np.ndarray, candidate: np.ndarray, alpha: float, epsilon: float, plan: LookPlan
) -> None:
    """The vectorised sequential rule must agree with hotkernel.run.verdict.decide_sequential."""
    codes, rounds = sequential_codes(baseline, candidate, alpha, epsilon, plan)
    names = {"faster": 1, "slower": -1, "inconclusive": 0}
    for i in range(min(REFERENCE_CHECKS // 3, len(baseline))):
        k = int(rounds[i])
        reference = decide_sequential(
            baseline[i, :k].tolist(), candidate[i, :k].tolist(), alpha=alpha, epsilon=epsilon, plan=plan
        )
        if names[reference.verdict] != codes[i] or reference.n != k:
            raise SystemExit(f"verdict_sim: vectorised sequential rule disagrees with decide_sequential on {i}")


def evaluate_sequential(baseline: np.ndarray, candidate: np.ndarray, n: int, alpha: float, epsilon: float) -> list:
    """Per true speedup in SHIFTS: error, verdict and agreement rates, rounds run (columns: max_rounds)."""
    plan = LookPlan.for_rounds(n)
    rows = []
    for shift in SHIFTS:
        shifted = candidate / shift
        check_sequential_against_reference(baseline, shifted, alpha, epsilon, plan)
        codes, rounds = sequential_codes(baseline, shifted, alpha, epsilon, plan)
        low, high = decide_interval(baseline[:, :n], shifted[:, :n], alpha)
        fixed = verdict_codes(low, high, epsilon)
        wrong = codes != 0 if shift == 1.0 else codes == (-1 if shift > 1 else 1)
        sims = len(codes)
        rows.append(
            {
                "speedup": shift,
                "false_rate": float(np.mean(wrong)),
                "false_rate_upper95": wilson_upper(int(np.count_nonzero(wrong)), sims),
                "faster_rate": float(np.mean(codes == 1)),
                "slower_rate": float(np.mean(codes == -1)),
                "same_as_fixed_n": float(np.mean(codes == fixed)),
                "same_as_fixed_n_when_stopped_by_n": float(np.mean((codes == fixed)[rounds <= n]))
                if np.any(rounds <= n)
                else None,
                "went_past_n": float(np.mean(rounds > n)),
                "mean_rounds": float(np.mean(rounds)),
                "stopped_by_n": float(np.mean(rounds <= n)),
            }
        )
    return rows


def wilson_upper(count: int, total: int, z: float = 1.96) -> float:
    """Upper end of the Wilson 95% interval of a binomial rate (Monte Carlo uncertainty of a rate)."""
    rate = count / total
    centre = rate + z * z / (2 * total)
    spread = z * math.sqrt(rate * (1 - rate) / total + z * z / (4 * total * total))
    return (centre + spread) / (1 + z * z / total)


def evaluate(baseline: np.ndarray, candidate: np.ndarray, alpha: float, epsilon: float) -> dict:
    """A/A false-verdict rates and power (smallest speedups detected 80% / 95%) of both rules."""
    sims = len(baseline)
    check_against_reference(baseline, candidate, alpha, epsilon)
    low, high = decide_interval(baseline, candidate, alpha)
    rules = {
        "decide": verdict_codes(low, high, epsilon),
        "decide_no_margin": verdict_codes(low, high, 0.0),
        "seed_rule": seed_codes(baseline, candidate),
    }
    aa = {}
    for rule, codes in rules.items():
        false, false_faster = int(np.count_nonzero(codes)), int(np.count_nonzero(codes == 1))
        aa[rule] = {
            "false_verdicts": false,
            "false_faster": false_faster,
            "simulations": sims,
            "false_rate": false / sims,
            "false_rate_upper95": wilson_upper(false, sims),
            "false_faster_rate": false_faster / sims,
            f"p_any_false_faster_in_{CANDIDATES_SCREENED}": 1 - (1 - false_faster / sims) ** CANDIDATES_SCREENED,
        }
    thresholds = {
        "decide": np.exp(math.log1p(epsilon) - low),  # per simulation: detected iff true speedup > this
        "decide_no_margin": np.exp(-low),  # the interval alone: how much of decide's threshold is the margin
        "seed_rule": seed_threshold(baseline, candidate),
    }
    power = {
        rule: {f"speedup_detected_{int(100 * q)}pct": float(np.quantile(values, q)) for q in (0.8, 0.95)}
        for rule, values in thresholds.items()
    }
    log_ratio = np.log(baseline / candidate)
    return {"aa": aa, "power": power, "median_log_ratio_sd": float(np.median(log_ratio.std(axis=1, ddof=1)))}


def load_samples(path: Path) -> dict[str, dict]:
    """Per kernel: rounds as (first-run ms, second-run ms) in process order, plus descriptive statistics."""
    by_kernel: dict[str, dict[int, list[dict]]] = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        missing = {"kernel", "process_index", "arm", "ms"} - record.keys()
        if missing:
            raise SystemExit(f"verdict_sim: {path}:{number} lacks {sorted(missing)}; record it with verdict_samples.py")
        round_index = record.get("round", record["process_index"] // 2)
        by_kernel.setdefault(record["kernel"], {}).setdefault(round_index, []).append(record)
    kernels = {}
    for kernel, rounds in sorted(by_kernel.items()):
        pairs = [sorted(runs, key=lambda r: r["process_index"]) for _, runs in sorted(rounds.items())]
        pairs = [p for p in pairs if len(p) == 2]
        if len(pairs) < 3:
            raise SystemExit(f"verdict_sim: {path}: kernel {kernel} has {len(pairs)} complete rounds, need >= 3")
        first_second = np.array([[p[0]["ms"], p[1]["ms"]] for p in pairs])
        arm_a = [r["ms"] for p in pairs for r in p if r["arm"] == "A"]
        arm_b = [r["ms"] for p in pairs for r in p if r["arm"] == "B"]
        within = [np.std(r["samples"], ddof=1) / np.median(r["samples"]) for p in pairs for r in p if r.get("samples")]
        every = first_second.ravel()
        few = f"only {len(pairs)} rounds recorded: too few to resample from" if len(pairs) < 15 else None
        kernels[kernel] = {
            "rounds": first_second,
            "stats": {
                "rounds": len(pairs),
                "timer": sorted({r.get("timer", "?") for p in pairs for r in p}),
                "median_ms": float(np.median(every)),
                "between_process_cv": float(np.std(every, ddof=1) / np.mean(every)),
                "within_process_cv_median": float(np.median(within)) if within else None,
                "log_ratio_sd_a_vs_b": float(np.std(np.log(np.array(arm_a) / np.array(arm_b)), ddof=1)),
                "mean_log_first_over_second": float(np.mean(np.log(first_second[:, 0] / first_second[:, 1]))),
                "max_abs_log_first_over_second": float(np.max(np.abs(np.log(first_second[:, 0] / first_second[:, 1])))),
                "aa_noise_all_rounds": aa_noise(arm_a, arm_b),
                "decide_all_rounds_a_vs_b": decide(arm_a, arm_b).summary(),
                "warning": few,
            },
        }
    return kernels


def analytic_seed_rule() -> dict[str, float]:
    """P(|T| > 2) for the seed rule's Welch statistic at df 6 (very unequal variances) .. 12 (equal), n=7."""
    return {str(df): 2 * (1 - student_t_cdf(2.0, df)) for df in range(6, 13)}


def run(args: argparse.Namespace) -> dict:
    rng = np.random.default_rng(args.seed)
    rows = []
    sources: list[tuple[str, str, object]] = [("parametric", s.name, s) for s in (args.scenarios or DEFAULT_SCENARIOS)]
    sample_stats = {}
    for path in args.samples or []:
        for kernel, data in load_samples(Path(path)).items():
            label = f"{Path(path).stem}:{kernel}" if len(args.samples) > 1 else kernel
            sample_stats[label] = data["stats"]
            sources.append(("samples", label, data["rounds"]))
    sequential = []
    for mode, name, source in sources:
        for n in args.rounds:
            draw = parametric_rounds if mode == "parametric" else sample_rounds
            if args.sequential:
                columns = LookPlan.for_rounds(n).max_rounds
                baseline, candidate = draw(rng, args.sims, columns, source)
                for row in evaluate_sequential(baseline, candidate, n, args.alpha, args.epsilon):
                    sequential.append({"mode": mode, "source": name, "n": n, **row})
            baseline, candidate = draw(rng, args.sims, n, source)
            rows.append(
                {
                    "mode": mode,
                    "source": name,
                    "n": n,
                    **evaluate(baseline, candidate, args.alpha, args.epsilon),
                }
            )
        print(f"done: {mode} / {name}", file=sys.stderr)
    return {
        "command": " ".join(["python", *sys.argv]),
        "seed": args.seed,
        "simulations": args.sims,
        "alpha": args.alpha,
        "epsilon": args.epsilon,
        "samples_file": args.samples,
        "sample_stats": sample_stats,
        "scenarios": [asdict(s) for s in (args.scenarios or DEFAULT_SCENARIOS)],
        "analytic_seed_rule_false_rate_by_df": analytic_seed_rule(),
        "rows": rows,
        "sequential_rows": sequential,
    }


def _pct(rate: float) -> str:
    return f"{100 * rate:.2f}%"


def markdown(results: dict) -> str:
    """The tables docs/verdicts.md quotes."""
    eps, alpha = results["epsilon"], results["alpha"]
    key = f"p_any_false_faster_in_{CANDIDATES_SCREENED}"
    lines = [
        f"alpha={alpha}, epsilon={_pct(eps)}, {results['simulations']} simulations per row, seed {results['seed']}.",
        "",
        "### A/A false-verdict rate (identical code; any verdict other than inconclusive)",
        "",
        f"| mode | source | n | decide (upper 95%) | decide, no margin | seed rule | "
        f"P(>=1 false faster in {CANDIDATES_SCREENED}): decide / seed |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        aa = row["aa"]
        lines.append(
            f"| {row['mode']} | {row['source']} | {row['n']} | {_pct(aa['decide']['false_rate'])} "
            f"({_pct(aa['decide']['false_rate_upper95'])}) | {_pct(aa['decide_no_margin']['false_rate'])} | "
            f"{_pct(aa['seed_rule']['false_rate'])} | "
            f"{_pct(aa['decide'][key])} / {_pct(aa['seed_rule'][key])} |"
        )
    lines += [
        "",
        "### Power: smallest true speedup called faster in 80% / 95% of simulations",
        "",
        "| mode | source | n | sd of d_i (median) | decide 80% | decide 95% | no margin 80% | no margin 95% "
        "| seed 80% | seed 95% |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in results["rows"]:
        power = row["power"]
        cells = [
            f"+{_pct(power[rule][f'speedup_detected_{q}pct'] - 1)}"
            for rule in ("decide", "decide_no_margin", "seed_rule")
            for q in (80, 95)
        ]
        lines.append(
            f"| {row['mode']} | {row['source']} | {row['n']} | {_pct(row['median_log_ratio_sd'])} | "
            + " | ".join(cells)
            + " |"
        )
    lines += ["", "### Seed rule, analytic: P(|T| > 2) at the Welch df (n=7 per arm: df 6..12)", ""]
    lines.append("| df | " + " | ".join(results["analytic_seed_rule_false_rate_by_df"]) + " |")
    lines.append("|---" * (1 + len(results["analytic_seed_rule_false_rate_by_df"])) + "|")
    lines.append("| P | " + " | ".join(_pct(v) for v in results["analytic_seed_rule_false_rate_by_df"].values()) + " |")
    if results.get("sequential_rows"):
        lines += [
            "",
            "### Sequential rule (decide_sequential, max_rounds = 2n): errors, rounds, agreement with fixed n",
            "",
            "| mode | source | n | true speedup | false verdicts (upper 95%) | faster | slower | mean rounds "
            "| stopped by n | same verdict as fixed n | same, of those stopped by n |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in results["sequential_rows"]:
            lines.append(
                f"| {row['mode']} | {row['source']} | {row['n']} | {row['speedup']:.4g}x | "
                f"{_pct(row['false_rate'])} ({_pct(row['false_rate_upper95'])}) | {_pct(row['faster_rate'])} | "
                f"{_pct(row['slower_rate'])} | {row['mean_rounds']:.2f} | {_pct(row['stopped_by_n'])} | "
                f"{_pct(row['same_as_fixed_n'])} | {_pct(row['same_as_fixed_n_when_stopped_by_n'] or 0.0)} |"
            )
    for kernel, stats in results["sample_stats"].items():
        lines += ["", f"### Recorded samples: {kernel}", ""]
        lines += [
            f"- {name}: {value:.4g}" if isinstance(value, float) else f"- {name}: {value}"
            for name, value in stats.items()
        ]
    return "\n".join(lines)


def _scenario(text: str) -> Scenario:
    """NAME:CV_RUN:CV_ROUND[:OUTLIER_PROB:OUTLIER_SIZE], fractions (0.01 = 1%)."""
    name, *numbers = text.split(":")
    return Scenario(name, *(float(x) for x in numbers))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="JSON results path")
    parser.add_argument(
        "--samples",
        action="append",
        help="JSONL from lab/benchmarks/device/verdict_samples.py (adds 'samples' rows; repeatable)",
    )
    parser.add_argument("--sims", type=int, default=SIMULATIONS, help="simulations per row")
    parser.add_argument("--rounds", type=int, nargs="+", default=list(ROUNDS), help="n values")
    parser.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, help="two-sided, of decide's interval")
    parser.add_argument("--epsilon", type=float, default=MIN_EPSILON, help="practical margin, fraction")
    parser.add_argument("--seed", type=int, default=SEED, help="numpy seed")
    parser.add_argument("--sequential", action="store_true", help="add the rows of decide_sequential")
    parser.add_argument(
        "--scenario",
        dest="scenarios",
        type=_scenario,
        action="append",
        help=_scenario.__doc__ + " (repeatable)",
    )
    args = parser.parse_args()
    results = run(args)
    text = markdown(results)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({**results, "markdown": text}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
