"""An experiment, not the contract: one copy kernel per timed call instead of two, to see what that saves.

Inline, every timed call is three kernels: the perturbation (one element rewritten), the kernel, the restore; a
kernel runs 0.46-1.41 us per call slower between the two copies than back to back, beyond their own time
(benchmarks/evidence/contract_v2/perturb_ab_1846/). This patches the working copy's contract (templates/hk_contract.py
and targets/hk_contract.py, as `no_perturb_patch.py` does) so that before call j a single ``index_copy_`` restores
the element call j - K changed in the same set and writes call j's (both at once: two positions, two values drawn
outside the timed region), and the last K calls are restored after the last kernel of the graph: one copy between
two kernels instead of two, the same inputs for every call. Two equal positions in one copy would leave either
value (odds about calls / elements per sample), so this is for measuring only. Run on a scratch copy of the tree
(the device's); `HK_MODES='perturbed fused plain' bash benchmarks/device/perturb_ab.sh ...` runs it as a mode.

Usage (device, repo root): python3 benchmarks/device/fused_perturb_patch.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MARK = "# experiment: fused perturbation (benchmarks/device/fused_perturb_patch.py)"
TIMED_CALL = "        perturb(j, k)\n        out = kernel(*sets[k], **kwargs)\n        restore(j, k)\n"
ALONE = "    def overhead_call(j: int) -> None:\n        k = j % n_sets\n        perturb(j, k)\n        restore(j, k)\n"
REPLACEMENTS = (  # (text, what it becomes), each text once in the contract
    ("                     orig=[orig[j:j + 1] for j in range(n)])\n",
     "                     orig=[orig[j:j + 1] for j in range(n)])\n"
     "        fpos = torch.zeros(n, 2, dtype=torch.int64, device=device)  " + MARK + "\n"
     "        fval = torch.zeros(n, 2, dtype=flats[0].dtype, device=device)\n"
     "        state.update(fpos=fpos, fval=fval, fpos_rows=[fpos[j] for j in range(n)],\n"
     "                     fval_rows=[fval[j] for j in range(n)])\n"),
    ("        buf_orig.copy_(gather_per_set(torch, flats, pos))\n",
     "        buf_orig.copy_(gather_per_set(torch, flats, pos))\n"
     "        prev = torch.arange(state['n'], device=device) - len(flats)  " + MARK + "\n"
     "        had = prev >= 0\n"
     "        prev = prev.clamp(min=0)\n"
     "        state['fpos'][:, 0].copy_(torch.where(had, buf_pos[prev], buf_pos))\n"
     "        state['fpos'][:, 1].copy_(buf_pos)\n"
     "        state['fval'][:, 0].copy_(torch.where(had, buf_orig[prev], buf_val))\n"
     "        state['fval'][:, 1].copy_(buf_val)\n"),
    ("    def call(j: int) -> Any:\n",
     "    def fused(j: int, k: int) -> None:  " + MARK + "\n"
     "        if flats:\n"
     "            flats[k].index_copy_(0, state[\"fpos_rows\"][j], state[\"fval_rows\"][j])\n\n"
     "    def finish(j: int) -> None:\n"
     "        if flats and j == state[\"n\"] - 1:\n"
     "            for i in range(max(0, j - n_sets + 1), j + 1):\n"
     "                restore(i, i % n_sets)\n\n"
     "    def call(j: int) -> Any:\n"),
    (TIMED_CALL, "        fused(j, k)\n        out = kernel(*sets[k], **kwargs)\n        finish(j)\n"),
    (ALONE, "    def overhead_call(j: int) -> None:\n        fused(j, j % n_sets)\n        finish(j)\n"),
)

def main() -> None:
    template = ROOT / "templates" / "hk_contract.py"
    text = template.read_text(encoding="utf-8")
    assert MARK not in text, f"{template}: patched already"
    for before, after in REPLACEMENTS:
        assert text.count(before) == 1, f"{template}: {before.strip()[:60]!r} is not where this patch expects it"
        text = text.replace(before, after)
    template.write_text(text, encoding="utf-8")
    shutil.copyfile(template, ROOT / "targets" / "hk_contract.py")
    print(f"patched {template} and targets/hk_contract.py: one copy kernel per timed call")


if __name__ == "__main__":
    main()
