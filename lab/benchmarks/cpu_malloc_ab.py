"""An experiment, not the contract: CPU samples with and without the worker's fixed malloc thresholds.

The contract sets glibc's mmap and trim thresholds in every worker (``steady_malloc``, knobs
WORKER_MMAP_THRESHOLD_BYTES / WORKER_TRIM_THRESHOLD_BYTES). This patches this checkout's built contract
(templates/hk_contract.py, which verify runs, and targets/hk_contract.py, which must equal it) so that the call is
skipped when the run's environment holds HK_LAB_DEFAULT_MALLOC=1, then runs, alternately, A/A verifies of a CPU
target with the thresholds (arm ``steady``) and with glibc's defaults (arm ``default``), and rebuilds the contract
after. Per arm: the spread of the runs' medians (coefficient of variation), the mean within-run spread
(interquartile range of a run's samples over its median) and each verify's interval.

Usage (repo root, an otherwise idle machine): python lab/benchmarks/cpu_malloc_ab.py OUT_DIR [PAIRS] [TARGET]
OUT_DIR receives <arm><i>.json (each verify's VerifyResult) and summary.txt.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIES = (ROOT / "templates" / "hk_contract.py", ROOT / "targets" / "hk_contract.py")
CALL = "        steady_malloc()\n"
PATCH = '        if not os.environ.get("HK_LAB_DEFAULT_MALLOC"):  # lab/benchmarks/cpu_malloc_ab.py\n    ' + CALL


def patch() -> None:
    subprocess.run([sys.executable, "-m", "hotkernel.contract.build"], cwd=ROOT, check=True, capture_output=True)
    for path in COPIES:
        text = path.read_text(encoding="utf-8")
        if text.count(CALL) != 1:
            sys.exit(f"{path}: expected one steady_malloc() call")
        path.write_text(text.replace(CALL, PATCH), encoding="utf-8")


def verify(target: str, env: dict[str, str]) -> dict:
    folder = f"targets/{target}"
    args = [sys.executable, "-m", "hotkernel", "verify", f"{folder}/baseline.py", f"{folder}/candidate.py"]
    args += ["-n", "7", "--max-rounds", "7", "--json"]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env={**os.environ, **env})
    if not done.stdout.strip():
        sys.exit(f"verify gave no JSON: {done.stderr[-400:]}")
    return json.loads(done.stdout)


def spread(results: list[dict]) -> str:
    medians, within = [], []
    for result in results:
        for run in result["runs"]:
            samples = run["data"]["per_shape"][0]["samples_ms"]
            medians.append(run["ms"])
            q1, _, q3 = statistics.quantiles(samples, n=4)
            within.append((q3 - q1) / statistics.median(samples))
    cv = statistics.stdev(medians) / statistics.mean(medians)
    return (
        f"{len(medians)} runs: run medians {min(medians):.3f}-{max(medians):.3f} ms, CV {cv:.3f}; "
        f"within-run IQR/median {statistics.mean(within):.3f}"
    )


def main() -> None:
    out = Path(sys.argv[1])
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    target = sys.argv[3] if len(sys.argv) > 3 else "cpu_rmsnorm"
    out.mkdir(parents=True, exist_ok=True)
    arms: dict[str, list[dict]] = {"steady": [], "default": []}
    lines = []
    patch()
    try:
        for pair in range(pairs):
            for arm, env in (("steady", {}), ("default", {"HK_LAB_DEFAULT_MALLOC": "1"})):
                result = verify(target, env)
                (out / f"{arm}{pair}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
                arms[arm].append(result)
                line = f"{arm}{pair}: {result['verdict']} {result['reason']}"
                print(line, flush=True)
                lines.append(line)
    finally:
        subprocess.run([sys.executable, "-m", "hotkernel.contract.build"], cwd=ROOT, check=True, capture_output=True)
    lines += [f"{arm}: {spread(results)}" for arm, results in arms.items()]
    (out / "summary.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines[-2:]))


if __name__ == "__main__":
    main()
