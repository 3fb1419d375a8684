"""Does the decode attention candidate's speed follow where its inputs lie, inside one process?

Under the placement pad the kept decode pair runs at two speeds, about 37.95 and 38.1-38.4 us, in stretches of
rounds that are separate processes with different pads (lab/speedrun.md, "Reproducibility with the placement
pad"). This separates the two explanations. In one process it draws PLACEMENTS pads (0-1 GiB in 2 MiB steps, a
seeded generator, the first REPEATS drawn again at the end), and for each: holds the pad, copies the target's
inputs (q, and ROTATION sets of k and v, as the contract rotates them) onto fresh memory, and times the kept
candidate and the baseline (SDPA, cuDNN) by CUDA-graph replay (`lab/speedrun/check_variants.py graph_replay_ms`:
median of 7 replays of CALLS calls), the candidate twice, the order swapped every placement; then frees it all
and empties the allocator's cache. If the candidate's time moves between placements here and a repeated pad
gives its time again, placement alone sets its speed; if it does not move, what sets it lives across processes.

One JSON line per placement: pad, the inputs' addresses, candidate (twice) and baseline us.
Usage (CUDA, repo root): python lab/benchmarks/device/decode_placement.py OUT.jsonl [PLACEMENTS] [REPEATS]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "lab" / "speedrun")]

import torch  # noqa: E402
from check_variants import graph_replay_ms, load_module  # noqa: E402

SEED = 20261204
PAD_MAX_BYTES = 1 << 30  # as the contract's PLACEMENT_PAD_MAX_BYTES ...
PAD_STEP_BYTES = 2 << 20  # ... and PLACEMENT_PAD_STEP_BYTES
ROTATION = 2  # input sets, as the contract's rotation gives at the headline (128 MiB a set against 50 MiB of L2)
CALLS = 20  # calls per captured graph, cycling through the sets
Q_SHAPE, KV_SHAPE = (1, 32, 1, 128), (1, 8, 32768, 128)


def drawn_pad_bytes(draw: random.Random) -> int:
    """A pad size as the contract draws one: a multiple of PAD_STEP_BYTES in [0, PAD_MAX_BYTES]."""
    return draw.randrange(PAD_MAX_BYTES // PAD_STEP_BYTES + 1) * PAD_STEP_BYTES


def capture(fn, sets: list[tuple[torch.Tensor, ...]]) -> torch.cuda.CUDAGraph:
    """One CUDA graph of CALLS calls of ``fn`` cycling through ``sets`` (after one eager call of each set)."""
    for args in sets:
        fn(*args, enable_gqa=True)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(CALLS):
            fn(*sets[i % len(sets)], enable_gqa=True)
    return graph


def timed_us(fn, sets: list[tuple[torch.Tensor, ...]]) -> float:
    """Median us per call of ``fn`` over CALLS calls cycling through ``sets``, replayed from a new CUDA graph."""
    graph = capture(fn, sets)
    us = 1e3 * graph_replay_ms(graph, CALLS)
    del graph
    return us


def main() -> None:
    out_path = Path(sys.argv[1])
    placements = int(sys.argv[2]) if len(sys.argv) > 2 else 96
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 16
    candidate = load_module(ROOT / "targets" / "decode_attention" / "candidate.py").kernel
    baseline = load_module(ROOT / "targets" / "decode_attention" / "baseline.py").kernel
    draw = random.Random(SEED)
    pads = [drawn_pad_bytes(draw) for _ in range(placements)]
    pads += pads[:repeats]
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    master = [torch.randn(Q_SHAPE, generator=gen, device="cuda", dtype=torch.bfloat16)]
    master += [torch.randn(KV_SHAPE, generator=gen, device="cuda", dtype=torch.bfloat16) for _ in range(2 * ROTATION)]
    with out_path.open("w") as out:
        for index, pad_bytes in enumerate(pads):
            pad = torch.empty(pad_bytes, dtype=torch.uint8, device="cuda") if pad_bytes else None
            q = master[0].clone()
            kv = [t.clone() for t in master[1:]]
            sets = [(q, kv[2 * s], kv[2 * s + 1]) for s in range(ROTATION)]
            first, second = (candidate, baseline) if index % 2 == 0 else (baseline, candidate)
            times = {first: timed_us(first, sets), second: timed_us(second, sets)}
            again = timed_us(candidate, sets)
            row = {"index": index, "repeat_of": index - placements if index >= placements else None,
                   "pad_mib": pad_bytes >> 20, "q_ptr": q.data_ptr(),
                   "kv_ptrs": [t.data_ptr() for t in kv], "candidate_us": round(times[candidate], 3),
                   "candidate_again_us": round(again, 3), "baseline_us": round(times[baseline], 3),
                   "candidate_first": first is candidate}
            print(json.dumps(row), flush=True)
            out.write(json.dumps(row) + "\n")
            del pad, q, kv, sets
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
