"""An experiment, not the contract: give every verify round its own memory placement, then see whether the
speedup still moves between verifies more than within one.

Twelve back-to-back verifies on one H200 (lab/benchmarks/evidence/h200_sync/drift_watch_1655/) showed cuBLAS's gemv
time stay put within a verify's seven rounds and move by up to 0.8% from one verify to the next, with the clocks
and the temperature ruled out. Each round is a fresh process that allocates the same sizes in the same order; the
lead is that it lands on the same physical memory as the round before, so placement is fixed within a verify and
missing from its interval. This patches the working copy's contract (templates/hk_contract.py, which verify runs,
and targets/hk_contract.py, the workspace copy that must equal it) so that each CUDA worker first allocates a pad of
a random size (0 to PAD_MAX_MIB in 2 MiB steps, from os.urandom) and keeps it for the run: every round then lands
somewhere else. Run on a scratch copy of the tree only (the device's); it refuses a tree whose contract it does not
recognise, and never runs in CI.

The contract has held such a pad itself since (``PlacementPad`` in hotkernel/contract/inputs.py); this script
reproduces the experiment at the trees before that and refuses a tree whose contract already pads.

Usage (device, repo root): python3 lab/benchmarks/device/placement_pad_patch.py [PAD_MAX_MIB]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ANCHOR = "        torch.cuda.init()  # the context, timed apart from the script's import\n"
PAD = (
    "        pad_mib = 2 * (int.from_bytes(os.urandom(4), 'little') % ({half} + 1))  # experiment: placement pad\n"
    "        keep_alive.append(torch.empty(pad_mib << 20, dtype=torch.uint8, device='cuda'))\n"
    "        print(f'placement pad {{pad_mib}} MiB', file=sys.stderr)\n"
)


def main() -> None:
    pad_max_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    template = ROOT / "templates" / "hk_contract.py"
    text = template.read_text(encoding="utf-8")
    assert text.count(ANCHOR) == 1, f"{template}: the worker's CUDA init line is not where this patch expects it"
    assert "placement_pad.allocate" not in text, f"{template}: this contract pads already (PlacementPad)"
    template.write_text(text.replace(ANCHOR, ANCHOR + PAD.format(half=pad_max_mib // 2)), encoding="utf-8")
    shutil.copyfile(template, ROOT / "targets" / "hk_contract.py")
    print(f"patched {template} and targets/hk_contract.py: a pad of 0-{pad_max_mib} MiB before each CUDA run")


if __name__ == "__main__":
    main()
