"""How often identical code gets crowned `faster` under the two-verify rule, by simulation on H200 A/A noise.

    python lab/benchmarks/crown_sim.py --pairs 1000000 --out lab/benchmarks/evidence/verdict/crown_sim_h200.json

A simulated verify is ``max_rounds`` rounds resampled with replacement from rounds recorded on the H200 with
identical code on both sides, decided by the verdict rule itself (``hotkernel.run.verdict.decide_sequential``
with ``LookPlan.for_rounds(n)``: it stops at the look that decides). The pools of rounds:

* ``contract:<kernel>``: per-process times of ``verdict_samples_contract.jsonl`` (the contract's timer, arms A
  and B identical), paired by round and alternated ABBA as ``hotkernel verify`` runs them (``verdict_sim``);
* ``verify``: the rounds of the three A/A ``hotkernel verify`` runs of ``aa_verify_h200.jsonl``, as recorded
  (baseline, candidate).

A pair is two independent verifies of the same files. It is crowned when the board crowns it: both are faster
and ``hotkernel.store.rows.mark_best`` marks them confirmed (intervals overlap) and one of them best. The rate
is crowned pairs / pairs, with a one-sided 95% Clopper-Pearson upper bound; the goal is at most 1 in 10,000.

Speed: a vectorised screen (``verdict_sim.sequential_codes``) finds the verifies that may be faster; each of
those, and ``--checks`` others per pool, is decided again by ``decide_sequential``, and only that decision
counts. A verify the screen left out that the rule calls faster is a disagreement (reported; must be 0).
A user who re-verifies the same unchanged candidate k times gets about k(k-1)/2 chances: ``faster_per_verify``
gives the per-verify rate to work that out. Reproducible: fixed seed; numpy is used here (never in the tool).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict_sim import load_samples, sample_rounds, sequential_codes  # noqa: E402

from hotkernel.run.verdict import DEFAULT_ALPHA, MIN_EPSILON, Decision, LookPlan, decide_sequential  # noqa: E402
from hotkernel.store.models import LeaderboardRow  # noqa: E402
from hotkernel.store.rows import mark_best  # noqa: E402

EVIDENCE = Path(__file__).resolve().parent / "evidence" / "verdict"
SEED = 20261205
CHUNK = 100_000  # verifies screened at once
GOAL = 1e-4


def pools(evidence: Path) -> dict[str, tuple[np.ndarray, bool]]:
    """Per pool: rounds (rows of two times, ms) and whether they alternate ABBA (first/second run)."""
    found: dict[str, tuple[np.ndarray, bool]] = {}
    for kernel, data in load_samples(evidence / "verdict_samples_contract.jsonl").items():
        found[f"contract:{kernel}"] = (data["rounds"], True)
    rows = [json.loads(line) for line in (evidence / "aa_verify_h200.jsonl").read_text().splitlines() if line.strip()]
    pairs = [pair for row in rows for pair in zip(row["baseline_ms"], row["candidate_ms"], strict=True)]
    found["verify"] = (np.array(pairs, dtype=float), False)
    return found


def resample(rng: np.random.Generator, sims: int, k: int, rounds: np.ndarray, abba: bool) -> tuple:
    """(baseline, candidate) arrays of shape (sims, k) drawn with replacement from ``rounds``."""
    if abba:
        return sample_rounds(rng, sims, k, rounds)
    picked = rounds[rng.integers(0, len(rounds), (sims, k))]
    return picked[..., 0], picked[..., 1]


def crowned(first: Decision, second: Decision) -> bool:
    """Whether the board crowns a pair of records of the same files with these decisions (store/rows.py)."""
    return board_crowns([(d.verdict, d.speedup, d.speedup_low, d.speedup_high) for d in (first, second)])


def board_crowns(pair: list[tuple[str, float | None, float | None, float | None]]) -> bool:
    """Whether ``mark_best`` crowns one of two records of the same files, each given as (verdict, speedup, interval
    low, interval high): the board's own confirmation code, not a copy of its rule."""
    decided = ("faster", "slower")
    rows = [
        LeaderboardRow(
            target="aa",
            device="pair",
            path=f"results/aa/{i}.json",
            verdict=verdict,
            speedup=speedup if verdict in decided else None,
            interval=[low, high] if verdict in decided and low is not None and high is not None else None,
            who="pair",
            note="",
            counted=True,
            files="b:c",
            point=speedup if speedup is not None else 1.0,
        )
        for i, (verdict, speedup, low, high) in enumerate(pair)
    ]
    mark_best(rows)
    return any(r.best for r in rows)


def upper_bound(k: int, n: int, confidence: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of a binomial rate with k successes in n trials."""
    if k >= n:
        return 1.0

    def cdf(p: float) -> float:
        terms = [
            math.lgamma(n + 1)
            - math.lgamma(i + 1)
            - math.lgamma(n - i + 1)
            + i * math.log(p)
            + (n - i) * math.log1p(-p)
            for i in range(k + 1)
        ]
        top = max(terms)
        return math.exp(top) * sum(math.exp(t - top) for t in terms)

    low, high = 0.0, 1.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if cdf(mid) > 1 - confidence else (low, mid)
    return high


def simulate_pool(rng: np.random.Generator, rounds: np.ndarray, abba: bool, pairs: int, plan: LookPlan, checks: int):
    """Counts for one pool: verifies the rule called faster, pairs crowned, screen disagreements."""
    alpha, epsilon = DEFAULT_ALPHA, MIN_EPSILON
    decisions: list[Decision | None] = []  # per verify: the rule's decision when faster, else None
    checked = disagree = 0
    for start in range(0, 2 * pairs, CHUNK):
        sims = min(CHUNK, 2 * pairs - start)
        baseline, candidate = resample(rng, sims, plan.max_rounds, rounds, abba)
        codes, _ = sequential_codes(baseline, candidate, alpha, epsilon, plan)
        others = np.flatnonzero(codes != 1)
        sample = set(rng.choice(others, size=min(checks, len(others)), replace=False).tolist()) if checks else set()
        chunk: list[Decision | None] = [None] * sims
        for i in sorted(set(np.flatnonzero(codes == 1).tolist()) | sample):
            d = decide_sequential(baseline[i].tolist(), candidate[i].tolist(), plan=plan, alpha=alpha, epsilon=epsilon)
            if i in sample:
                checked += 1
                disagree += d.verdict == "faster"
            chunk[i] = d if d.verdict == "faster" else None
        decisions += chunk
        checks = 0  # the sample of screened-out verifies is taken once per pool
    faster = sum(d is not None for d in decisions)
    crowns = sum(
        1
        for a, b in zip(decisions[0::2], decisions[1::2], strict=True)
        if a is not None and b is not None and crowned(a, b)
    )
    return {"faster_verifies": faster, "crowned_pairs": crowns, "screen_checked": checked, "screen_missed": disagree}


def run(pairs: int, n: int, checks: int, evidence: Path = EVIDENCE, seed: int = SEED) -> dict:
    """Simulate ``pairs`` pairs of A/A verifies per pool; every count, rate and bound, overall and per pool."""
    plan = LookPlan.for_rounds(n)
    rng = np.random.default_rng(seed)
    rows = []
    for name, (rounds, abba) in sorted(pools(evidence).items()):
        counts = simulate_pool(rng, rounds, abba, pairs, plan, checks)
        rows.append({"pool": name, "rounds_recorded": len(rounds), "pairs": pairs, **counts})
    total_pairs = pairs * len(rows)
    crowns = sum(r["crowned_pairs"] for r in rows)
    for r in rows:
        r["crown_rate"] = r["crowned_pairs"] / pairs
        r["crown_rate_upper_95"] = upper_bound(r["crowned_pairs"], pairs)
        r["faster_per_verify"] = r["faster_verifies"] / (2 * pairs)
    return {
        "rule": f"decide_sequential, alpha {DEFAULT_ALPHA:g}, epsilon {MIN_EPSILON:g}, n {plan.n}, "
        f"max_rounds {plan.max_rounds}",
        "confirmation": "two faster verifies of the same files with overlapping intervals (store/rows.py mark_best)",
        "seed": seed,
        "pairs": total_pairs,
        "crowned_pairs": crowns,
        "crown_rate": crowns / total_pairs,
        "crown_rate_upper_95": upper_bound(crowns, total_pairs),
        "goal": GOAL,
        "meets_goal": all(r["crown_rate_upper_95"] <= GOAL for r in rows),
        "screen_missed": sum(r["screen_missed"] for r in rows),
        "pools": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000, help="simulated pairs of verifies per pool")
    parser.add_argument("-n", type=int, default=7, help="rounds planned per verify (max_rounds: the rule's 2n)")
    parser.add_argument("--checks", type=int, default=2000, help="screened-out verifies re-decided per pool")
    parser.add_argument("--out", type=Path, help="write the result as JSON here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    result = run(args.pairs, args.n, args.checks)
    result["command"] = "python lab/benchmarks/crown_sim.py " + " ".join(argv if argv is not None else sys.argv[1:])
    result["wall_s"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0 if result["meets_goal"] and result["screen_missed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
