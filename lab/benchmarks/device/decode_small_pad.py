"""Does where the small buffers land (outputs, partials, workspaces) set the decode pair's and cuDNN's times?

`decode_drift.py` (lab/benchmarks/evidence/speedrun/decode_drift_1838/) found cuDNN at about 36.7 us in a graph captured
right after the candidate's and about 37.4 us in one captured after its own, on the same inputs, while the
candidate kept its time: a property of the graph's own memory, not of the card's state. The contract's placement
pad moves every buffer by whole 2 MiB steps, which leaves each small buffer's offset inside the allocator's 2 MiB
segments (the small pool, blocks up to 1 MiB) the same in every run. Here, on fixed inputs, each placement holds a
small block of a seeded random size (0-1 MiB in 512 B steps) from a fresh small pool, then captures and times one
function (`decode_placement.timed_us`), as a contract run does; each size is used for each function, and the whole
plan runs twice. If the times follow the small block's size, and a size gives its times again, the small buffers'
offsets are what the pad does not yet vary.

One JSON line per placement. Usage (CUDA, repo root): python lab/benchmarks/device/decode_small_pad.py OUT.jsonl [N]
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "lab" / "speedrun"), str(ROOT / "lab" / "benchmarks" / "device")]

import torch  # noqa: E402
from check_variants import load_module  # noqa: E402
from decode_placement import KV_SHAPE, Q_SHAPE, ROTATION, SEED, timed_us  # noqa: E402

SMALL_MAX_BYTES = 1 << 20  # the caching allocator's small pool serves blocks up to 1 MiB from 2 MiB segments
SMALL_STEP_BYTES = 512  # ... rounded up to 512 B


def main() -> None:
    out_path = Path(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 32
    functions = {"candidate": load_module(ROOT / "targets" / "decode_attention" / "candidate.py").kernel,
                 "baseline": load_module(ROOT / "targets" / "decode_attention" / "baseline.py").kernel}
    gen = torch.Generator(device="cuda").manual_seed(SEED)
    k_v = [torch.randn(KV_SHAPE, generator=gen, device="cuda", dtype=torch.bfloat16) for _ in range(2 * ROTATION)]
    q_host = torch.randn(Q_SHAPE, generator=gen, device="cuda", dtype=torch.bfloat16).cpu()
    draw = random.Random(SEED + 2)
    sizes = [draw.randrange(SMALL_MAX_BYTES // SMALL_STEP_BYTES) * SMALL_STEP_BYTES for _ in range(count)]
    with out_path.open("w") as out:
        plan = [(size, name) for size in sizes for name in functions] * 2  # each size for each function, twice
        for index, (size, name) in enumerate(plan):
            torch.cuda.empty_cache()  # a fresh small pool: the block below starts its first segment
            small = torch.empty(size, dtype=torch.uint8, device="cuda") if size else None
            q = q_host.to("cuda")  # q is small too: it lands after the block
            sets = [(q, k_v[2 * s], k_v[2 * s + 1]) for s in range(ROTATION)]
            row = {"index": index, "small_bytes": size, "function": name, "q_ptr_mod_2mib": q.data_ptr() % (2 << 20),
                   "us": round(timed_us(functions[name], sets), 3)}
            print(json.dumps(row), flush=True)
            out.write(json.dumps(row) + "\n")
            del small, q, sets


if __name__ == "__main__":
    main()
