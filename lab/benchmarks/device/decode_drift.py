"""What moves the decode attention candidate's time inside one process: the card's state over time, new CUDA
graphs, or which function ran first on fresh inputs?

`decode_placement.py` (lab/benchmarks/evidence/speedrun/decode_placement_1829/) found, in one process, the candidate's
time rising with the sample's index (about 36.9 to 37.4 us over a minute) while cuDNN's did not, a repeated pad
not giving its time again, and cuDNN about 0.7 us slower when it was timed first on a placement's fresh inputs
than when it came after the candidate. Phases, one JSON line per second (medians of that second's samples) or per
sample:

- ``steady`` (STEADY_S): one graph of each, captured once, replayed back to back (median of 7 replays of CALLS
  calls per sample, candidate and baseline alternating), so nothing but the card's state can change;
- ``rest`` (REST_S): the card idle, then ``again`` (AGAIN_S): the same graphs; a time that came back down after
  the rest moved with the card's load (heat), one that did not with something the process holds;
- ``fresh`` (FRESH_S): a new graph of each per sample, on the same inputs (what `decode_placement.py` did);
- ``first`` (FIRST_PLACEMENTS): per placement (a seeded pad, fresh copies of the inputs), one function timed
  twice, then the other twice, the first function alternating: is the first timing on fresh inputs slower, and
  for which function?

Run ``nvidia-smi dmon -s pucm -o DT`` beside it for the card's temperatures and clocks (each line has the UTC time).
Usage (CUDA, repo root): python lab/benchmarks/device/decode_drift.py OUT.jsonl
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "lab" / "speedrun"), str(ROOT / "lab" / "benchmarks" / "device")]

import torch  # noqa: E402
from check_variants import graph_replay_ms, load_module  # noqa: E402
from decode_placement import CALLS, KV_SHAPE, Q_SHAPE, ROTATION, SEED, capture, drawn_pad_bytes, timed_us  # noqa: E402

STEADY_S, REST_S, AGAIN_S, FRESH_S = 60.0, 30.0, 20.0, 20.0  # seconds of each phase
FIRST_PLACEMENTS = 16


def per_second(phase: str, seconds: float, sample, out) -> None:
    """Call ``sample()`` -> (candidate us, baseline us) for ``seconds``; write one line per elapsed second."""
    start = time.monotonic()
    bucket, second = [], 0
    while (elapsed := time.monotonic() - start) < seconds:
        if int(elapsed) != second and bucket:
            emit(out, phase, second, bucket)
            bucket, second = [], int(elapsed)
        bucket.append(sample())
    if bucket:
        emit(out, phase, second, bucket)


def emit(out, phase: str, second: int, bucket: list[tuple[float, float]]) -> None:
    row = {"phase": phase, "second": second, "utc": datetime.now(timezone.utc).strftime("%H:%M:%S"),
           "samples": len(bucket), "candidate_us": round(statistics.median(c for c, _ in bucket), 3),
           "baseline_us": round(statistics.median(b for _, b in bucket), 3)}
    print(json.dumps(row), flush=True)
    out.write(json.dumps(row) + "\n")


def main() -> None:
    out_path = Path(sys.argv[1])
    candidate = load_module(ROOT / "targets" / "decode_attention" / "candidate.py").kernel
    baseline = load_module(ROOT / "targets" / "decode_attention" / "baseline.py").kernel
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    master = [torch.randn(Q_SHAPE, generator=gen, device="cuda", dtype=torch.bfloat16)]
    master += [torch.randn(KV_SHAPE, generator=gen, device="cuda", dtype=torch.bfloat16) for _ in range(2 * ROTATION)]
    sets = [(master[0], master[1 + 2 * s], master[2 + 2 * s]) for s in range(ROTATION)]
    with out_path.open("w") as out:
        graphs = {"candidate": capture(candidate, sets), "baseline": capture(baseline, sets)}

        def replayed() -> tuple[float, float]:
            c = 1e3 * graph_replay_ms(graphs["candidate"], CALLS)
            return c, 1e3 * graph_replay_ms(graphs["baseline"], CALLS)

        per_second("steady", STEADY_S, replayed, out)
        time.sleep(REST_S)
        per_second("again", AGAIN_S, replayed, out)
        per_second("fresh", FRESH_S, lambda: (timed_us(candidate, sets), timed_us(baseline, sets)), out)
        graphs.clear()
        draw = random.Random(SEED + 1)
        functions = {"candidate": candidate, "baseline": baseline}
        for index in range(FIRST_PLACEMENTS):
            pad_bytes = drawn_pad_bytes(draw)
            pad = torch.empty(pad_bytes, dtype=torch.uint8, device="cuda") if pad_bytes else None
            copies = [t.clone() for t in master]
            fresh = [(copies[0], copies[1 + 2 * s], copies[2 + 2 * s]) for s in range(ROTATION)]
            order = ["candidate", "baseline"] if index % 2 == 0 else ["baseline", "candidate"]
            times = {name: [timed_us(functions[name], fresh), timed_us(functions[name], fresh)] for name in order}
            row = {"phase": "first", "index": index, "pad_mib": pad_bytes >> 20, "first": order[0],
                   "utc": datetime.now(timezone.utc).strftime("%H:%M:%S"),
                   **{f"{name}_us": [round(t, 3) for t in times[name]] for name in order}}
            print(json.dumps(row), flush=True)
            out.write(json.dumps(row) + "\n")
            del pad, copies, fresh
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
