"""The CPU A/A false-verdict rate of the real ``hotkernel verify``, on an idle or a loaded box.

A fresh workspace gets one CPU target (``x * w + 1.0`` at 32x64 fp32 by default, a few microseconds a call, where a
systematic difference between the two sides shows first) and its untouched rendered candidate, which is the
baseline's function itself. Then ``verify -n ROUNDS`` runs COUNT times in a row, while LOAD busy-looping processes
compete for the cores (0: an idle box). Each verify is one JSON line in OUT (``"kind": "aa"``, the target, the
device verify names, verdict, speedup, the point estimate and interval from its reason, rounds, wall seconds;
``lab/benchmarks/crown_real.py`` counts these lines); the last line is the summary: verdict counts and the
Clopper-Pearson 95% upper bound of the rate of verdicts other than ``inconclusive``.

Usage (repo root, CPU torch in this python): python lab/benchmarks/cpu_aa_rate.py OUT.jsonl [--count 40]
[--rounds 3] [--load 1] [--shape 32x64] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crown_sim import upper_bound  # noqa: E402

KERNEL = "def scale_add(x, w):\n    return x * w + 1.0\n"


def burn(stop: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    """A busy loop: one core's worth of competing load until ``stop`` is set."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 31 + 7) % 1_000_003


def hotkernel(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOTKERNEL_WORKSPACE": str(root), "HOTKERNEL_PYTHON": sys.executable}
    return subprocess.run(
        [sys.executable, "-m", "hotkernel", *args], capture_output=True, text=True, env=env, cwd=root, timeout=900
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=40, help="A/A verifies")
    parser.add_argument("--rounds", type=int, default=3, help="verify -n")
    parser.add_argument("--load", type=int, default=1, help="busy-looping processes beside the verifies")
    parser.add_argument("--shape", default="32x64", help="the input x's shape; w is its last dimension")
    parser.add_argument("--keep", type=Path, help="write the whole verify JSON of every decided verify here")
    args = parser.parse_args()
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=burn, args=(stop,), daemon=True) for _ in range(args.load)]
    for proc in burners:
        proc.start()
    counts: dict[str, int] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp, args.out.open("w") as out:
            root = Path(tmp)
            (root / "kern.py").write_text(KERNEL)
            last = args.shape.split("x")[-1]
            new = ["new", "scale", "--from", "./kern.py:scale_add", "--shape", args.shape, "--extra", f"w:{last}"]
            done = hotkernel(root, *new, "--dtype", "fp32", "--device", "cpu")
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                return 1
            for i in range(args.count):
                t0 = time.monotonic()
                done = hotkernel(
                    root,
                    "verify",
                    "targets/scale/baseline.py",
                    "targets/scale/candidate.py",
                    "-n",
                    str(args.rounds),
                    "--json",
                )
                wall = time.monotonic() - t0
                try:
                    result = json.loads(done.stdout)
                except json.JSONDecodeError:
                    result = {"verdict": "error", "reason": done.stderr.strip().splitlines()[-1:]}
                decision = result.get("decision") or {}
                point, low, high = (decision.get(key) for key in ("speedup", "speedup_low", "speedup_high"))
                row = {
                    "kind": "aa",  # lab/benchmarks/crown_real.py counts these lines, on their own device
                    "i": i,
                    "target": "scale",
                    "device": result.get("device"),
                    "shapes": args.shape,
                    "verdict": result.get("verdict"),
                    "speedup": result.get("speedup"),
                    "point": point,
                    "interval": [low, high] if low is not None and high is not None else None,
                    "rounds": result.get("rounds_completed"),
                    "wall_s": round(wall, 2),
                    "reason": result.get("reason"),
                }
                counts[str(row["verdict"])] = counts.get(str(row["verdict"]), 0) + 1
                if args.keep and row["verdict"] in ("faster", "slower"):
                    args.keep.mkdir(parents=True, exist_ok=True)
                    (args.keep / f"verify_{i}.json").write_text(done.stdout)
                out.write(json.dumps(row) + "\n")
                out.flush()
            other = sum(v for k, v in counts.items() if k != "inconclusive")
            summary = {
                "summary": counts,
                "count": args.count,
                "rounds": args.rounds,
                "load": args.load,
                "shape": args.shape,
                "cpus": os.cpu_count(),
                "not_inconclusive": other,
                "upper_95": round(upper_bound(other, args.count), 4),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
            out.write(json.dumps(summary) + "\n")
            print(json.dumps(summary))
    finally:
        stop.set()
        for proc in burners:
            proc.join(timeout=5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
