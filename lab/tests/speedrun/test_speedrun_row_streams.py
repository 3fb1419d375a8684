"""The rmsnorm/softmax row-stream candidates on the cases the checker's small shapes do not reach.

`tma_persistent.py` reads rows through tensor descriptors: a view whose rows are 16-byte aligned must be described as
it is and one that is not must be copied first, and fewer rows than programs, or a tail past the power-of-two block,
must still be right. `softmax/warp_groups.py` splits a row into groups of 256 columns: a group entirely past the row
and groups with very different maxima (the rescaling by exp2(group max - row max)) must be right. The balanced grids
give every program the same number of rows at the headline (the last possibly fewer). Checked in the Triton
interpreter against fp32 references.
"""

from __future__ import annotations

import pytest
from triton_interpreter import run_interpreted, skip_without_torch_and_triton

pytestmark = pytest.mark.slow

SCRIPT = """
import torch
import check_variants as cv
torch.manual_seed(0)
bf16 = torch.bfloat16

def rms_ref(x, w):
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()

for target in ("rmsnorm", "softmax"):
    tma = cv.load_module(cv.SPEEDRUN_DIR / target / "tma_persistent.py")
    wide = torch.randn(40, 1032).to(bf16)
    odd = torch.randn(40, 1001).to(bf16)
    views = {"aligned_slice": wide[:, :1000], "unaligned_slice": odd[:, :1000], "few_rows": wide[:3, :1000]}
    print(target, "copied", [n for n, t in views.items() if tma._tma_rows(t).data_ptr() != t.data_ptr()])
    for name in tma.VARIANTS:
        kernel = cv.variant_kernel(target, name)
        for view_name, x in views.items():
            if target == "rmsnorm":
                w = torch.randn(x.shape[-1]).to(bf16)
                out, ref = kernel(x, w, eps=1e-6), rms_ref(x, w)
            else:
                out, ref = kernel(x, dim=-1), torch.softmax(x.float(), -1)
            print(target, name, view_name, cv.compare(out, ref, target, "cpu")[0])

groups = cv.load_module(cv.SPEEDRUN_DIR / "softmax" / "warp_groups.py").VARIANTS
print("softmax warp_groups variants", len(groups))
for name in groups:
    kernel = cv.variant_kernel("softmax", name)
    # 600 columns: block 1024, groups 0-1 full, group 2 with 88 columns, group 3 entirely past the row; a ramp
    # over the columns makes the group maxima differ (by a few units, weights between 0 and 1; by 120, weights 0)
    ramp = (torch.randn(6, 600) + torch.linspace(-4, 4, 600)).to(bf16)
    steep = (torch.randn(6, 600) + torch.linspace(-60, 60, 600)).to(bf16)
    cases = {"ramp": ramp, "reversed": ramp.flip(-1), "steep": steep, "plain": torch.randn(6, 600).to(bf16)}
    for case, t in cases.items():
        print("softmax", name, case, cv.compare(kernel(t, dim=-1), torch.softmax(t.float(), -1), "softmax", "cpu")[0])

for target, idea in (("rmsnorm", "tma_persistent"), ("rmsnorm", "balanced_persistent"), ("softmax", "tma_persistent")):
    module = cv.load_module(cv.SPEEDRUN_DIR / target / f"{idea}.py")
    print(target, idea, "grids", [module.balanced_grid(4096, 132 * p) for p in (1, 2, 3, 4)],
          module.balanced_grid(0, 4), module.balanced_grid(3, 4))
"""


def test_row_stream_candidates_on_views_tails_and_masked_groups() -> None:
    skip_without_torch_and_triton()
    proc = run_interpreted(SCRIPT, timeout_s=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    copied = [line for line in lines if " copied " in line]
    assert copied == ["rmsnorm copied ['unaligned_slice']", "softmax copied ['unaligned_slice']"], copied
    checks = [line for line in lines if line.endswith((" True", " False"))]
    assert checks and all(line.endswith(" True") for line in checks), [c for c in checks if not c.endswith(" True")]
    groups = int(next(line for line in lines if line.startswith("softmax warp_groups variants ")).split()[-1])
    assert groups >= 5, groups  # the run-time and the compiled-for-the-length forms
    assert len(checks) == 2 * 4 * 3 + groups * 4, checks
    grids = [line.split(" grids ")[1] for line in lines if " grids " in line]
    assert grids == ["[128, 256, 373, 512] 1 3"] * 3, grids
