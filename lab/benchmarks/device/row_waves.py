"""Does the row count's fit to the SMs cost the kept rmsnorm and softmax kernels their last few percent?

The kept row kernels stand at about 92% of the copy ceiling where `torch.neg` over the same bytes reaches about
95% (lab/speedrun.md, "Goals"). They run one program a row: at the headline 4096 rows on 132 SMs, 31.03 rows an
SM, so some SMs take a 32nd row while the rest wait, and the last programs run on an emptying card; `torch.neg`
cuts the same bytes into thousands of small blocks. This times each kernel at row counts that are whole multiples of
the SM count (28, 30, 32, 34 and 64 rows an SM) and at the headline's 4096 and 8192, 8192 columns bf16, by CUDA-graph
replay over inputs rotated through more than 3x L2 (`lab/speedrun/check_variants.py time_variant`), and prints GB/s.
If the headline falls below its whole-multiple neighbours while `torch.neg` does not, the fit costs that much.

Usage (CUDA, repo root): python lab/benchmarks/device/row_waves.py OUT.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT), str(ROOT / "lab" / "speedrun")]

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from check_variants import load_module, time_variant  # noqa: E402

COLS = 8192
ROWS_PER_SM = (28, 30, 32, 34, 64)  # whole multiples of the SM count
HEADLINE_ROWS = (4096, 8192)
EPS = 1e-6


def main() -> None:
    out_path = Path(sys.argv[1])
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rmsnorm = load_module(ROOT / "targets" / "rmsnorm" / "candidate.py")
    softmax = load_module(ROOT / "targets" / "softmax" / "candidate.py")
    kernels = {  # name: (fn(x, w), bytes moved per element of x)
        "rmsnorm_candidate": (lambda x, w: rmsnorm.kernel(x, w, eps=EPS), 4),
        "rmsnorm_baseline": (lambda x, w: F.rms_norm(x, (COLS,), w, EPS), 4),
        "softmax_candidate": (lambda x, w: softmax.kernel(x, dim=-1), 4),
        "softmax_baseline": (lambda x, w: torch.softmax(x, dim=-1), 4),
        "neg": (lambda x, w: torch.neg(x), 4),
    }
    rows_list = sorted({*(r * sms for r in ROWS_PER_SM), *HEADLINE_ROWS})
    with out_path.open("w") as out:
        for rows in rows_list:
            x = torch.randn(rows, COLS, device="cuda", dtype=torch.bfloat16)
            w = torch.randn(COLS, device="cuda", dtype=torch.bfloat16)
            for name, (fn, bytes_per_element) in kernels.items():
                moved = bytes_per_element * x.numel()
                us = 1e3 * time_variant(fn, (x, w), {}, moved)
                row = {"kernel": name, "rows": rows, "rows_per_sm": round(rows / sms, 3), "cols": COLS,
                       "us": round(us, 3), "gbps": round(moved / us / 1e3, 1), "sms": sms}
                print(json.dumps(row), flush=True)
                out.write(json.dumps(row) + "\n")
            del x, w
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
