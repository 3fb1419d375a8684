"""An experiment, not the contract: time every call without the per-call perturbation, to see what it costs.

Each timed call of the contract is one copy kernel (call j - K's element restored, call j's changed) and the
kernel; the copies' cost alone (the same graph without the kernel) is subtracted. Until the contract fused them
there were two copies per call; in one process on one H200 the decode pair and cuDNN ran 36.73 and 36.84 us back
to back (1.003x, lab/benchmarks/evidence/speedrun/decode_small_pad_1842/), where the contract's verifies on the same
card gave 1.028x (medians: cuDNN 38.7 us, the pair 37.6 us): the small kernels cost each side a different amount
beyond what is subtracted. This patches the working copy's contract (templates/hk_contract.py, which verify runs, and
targets/hk_contract.py, the workspace copy that must equal it) so that no input is perturbed (``perturb_slot``
returns None, the path the contract already takes for a target without a perturbable input): the timed graph is
the kernel alone, back to back over the rotated sets. Outputs are still checked against the reference. Run on a
scratch copy of the tree only (the device's); `lab/benchmarks/device/perturb_ab.sh` restores the contract after.

Usage (device, repo root): python3 lab/benchmarks/device/no_perturb_patch.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
ANCHOR = (
    '    """Index of the tensor leaf a timed call sees perturbed: the first per-set, contiguous, non-empty one that is\n'
    '    neither a destination buffer (the kernel overwrites it) nor a Model buffer the forward updates."""\n'
)
PATCH = "    return None  # experiment: no per-call perturbation (lab/benchmarks/device/no_perturb_patch.py)\n"


def main() -> None:
    template = ROOT / "templates" / "hk_contract.py"
    text = template.read_text(encoding="utf-8")
    assert text.count(ANCHOR) == 1, f"{template}: perturb_slot's docstring is not where this patch expects it"
    assert PATCH not in text, f"{template}: patched already"
    template.write_text(text.replace(ANCHOR, ANCHOR + PATCH), encoding="utf-8")
    shutil.copyfile(template, ROOT / "targets" / "hk_contract.py")
    print(f"patched {template} and targets/hk_contract.py: no per-call perturbation")


if __name__ == "__main__":
    main()
