"""Summarise the H200 speedrun from the committed records: speedups, share of the measured copy ceiling, goals.

    python lab/benchmarks/speedrun_summary.py     # prints the markdown table used in lab/speedrun.md

Reads every candidate record under results/<target>/ (through hotkernel's own loader; invalidated ones and
competitors such as torch.compile skipped), the manifest's `bytes` per target and the calibrated copy ceiling in
lab/benchmarks/evidence/calibration/calibrate_h200.json; first it prints the range of the copy ceilings the judge
measured in the counted H200 records (docs/calibration.md quotes it). The kept variant is the last word of the
best record's `who` when it names one ("..., variant NAME"), else "-".
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hotkernel.manifest import load_manifest
from hotkernel.store.leaderboard import ResultsScan, board_rows, scan_results
from hotkernel.workspace.paths import Workspace

ROOT = Path(__file__).resolve().parents[2]
VARIANT = re.compile(r"\bvariant (\S+)$")  # lab/speedrun/check_variants.py's WHO ends with the variant
GOALS = {
    "rmsnorm": ("faster than F.rms_norm", lambda s: s > 1.0),
    "softmax": (">= 3x torch.softmax", lambda s: s >= 3.0),
    "gemv": ("level with or better than cuBLAS", lambda s: s >= 0.99),
    "decode_attention": ("faster than the best SDPA path", lambda s: s > 1.0),
    "int4_gemv": (">= 1.5x tinygemm", lambda s: s >= 1.5),
}


def kept_variant(who: str) -> str:
    """The variant a record's ``who`` names (``"..., variant NAME"``), else "-"."""
    found = VARIANT.search(who.strip())
    return found.group(1) if found else "-"


def copy_ceiling_gbps() -> float:
    """The calibrated copy ceiling the shares of ceiling are taken against (GB/s, read + write counted)."""
    return json.loads((ROOT / "lab/benchmarks/evidence/calibration/calibrate_h200.json").read_text())["copy_gbps"]


def judge_ceilings_gbps(scan: ResultsScan | None = None, device: str = "NVIDIA H200") -> tuple[int, float, float]:
    """(records, lowest, highest) of the copy ceiling each verify's judge measured (``ceiling_gbps``), over the
    counted records on ``device`` (of ``scan``, else a new scan of results/): the README headline and the roofline
    chart use the highest."""
    ws = Workspace(ROOT)
    found = [row.ceiling_gbps for row in board_rows(ws, scan=scan or scan_results(ws))
             if row.device == device and row.counted and row.ceiling_gbps]
    return len(found), min(found), max(found)


def main() -> None:
    ceiling_gbps = copy_ceiling_gbps()
    manifest = load_manifest(ROOT / "hotkernel.yaml")
    scan = scan_results(Workspace(ROOT))
    records = [(path, rec) for path, rec in scan.records if rec.invalidated is None and rec.role == "candidate"]
    n_judged, low, high = judge_ceilings_gbps(scan)
    print(f"Copy ceiling (calibrated): {ceiling_gbps:.0f} GB/s")
    print(f"Copy ceiling each verify's judge measured, over the {n_judged} counted NVIDIA H200 records: "
          f"{low / 1e3:.2f}-{high / 1e3:.2f} TB/s\n")
    print("| target | experiments (faster / slower / inconclusive / other) | kept | speedup [99% interval] | "
          "baseline ms | kept ms | share of ceiling | goal | met |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for target, (goal, met) in GOALS.items():
        mine = [(p, r) for p, r in records if r.target == target and (r.provenance.device or "").startswith("NVIDIA")]
        verdicts = [r.result.verdict for _, r in mine]
        counts = "/".join(str(verdicts.count(v)) for v in ("faster", "slower", "inconclusive"))
        other = len(verdicts) - sum(verdicts.count(v) for v in ("faster", "slower", "inconclusive"))
        faster = [(p, r) for p, r in mine if r.result.verdict == "faster"]
        best = max(faster, key=lambda pr: pr[1].result.speedup, default=None)
        bytes_moved = manifest.targets[target].bytes_
        if best is None:
            base = min(r.result.baseline.stats.median_ms for _, r in mine)
            share = bytes_moved / (base * 1e-3) / (ceiling_gbps * 1e9)
            print(f"| {target} | {counts} / {other} | none (baseline kept) | - | {base:.4f} | - | "
                  f"{share:.1%} (baseline) | {goal} | no |")
            continue
        _, rec = best
        res = rec.result
        kept_ms = res.candidate.stats.median_ms
        share = bytes_moved / (kept_ms * 1e-3) / (ceiling_gbps * 1e9)
        low, high = res.interval or (None, None)
        print(f"| {target} | {counts} / {other} | {kept_variant(rec.who)} | {res.speedup:.3f}x "
              f"[{low:.3f}, {high:.3f}] | {res.baseline.stats.median_ms:.4f} | {kept_ms:.4f} | {share:.1%} | "
              f"{goal} | {'yes' if met(res.speedup) else 'no'} |")


if __name__ == "__main__":
    main()
