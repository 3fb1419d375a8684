"""lab/speedrun/decode_attention/tma_stream.py on KV caches that are views, not fresh contiguous tensors.

The TMA kernels read K and V through a [batch x heads x tokens, D] view. A cache sliced along the tokens (rows of one
head no longer follow the previous head's) or stored token-major must be copied first, and a contiguous one must
not be. Checked in the Triton interpreter against SDPA in fp32; `pdl_two_pass.py` (plain pointers) runs the same
views for comparison.
"""

from __future__ import annotations

import pytest
from triton_interpreter import run_interpreted, skip_without_torch_and_triton

pytestmark = pytest.mark.slow

SCRIPT = """
import torch
import torch.nn.functional as F
import check_variants as cv
torch.manual_seed(0)
tma = cv.load_module(cv.SPEEDRUN_DIR / "decode_attention" / "tma_stream.py")
batch, hq, hkv, seq, d = 2, 8, 2, 200, 32
q = torch.randn(batch, hq, 1, d).to(torch.bfloat16)
big = torch.randn(batch, hkv, seq + 56, d).to(torch.bfloat16)
token_major = torch.randn(batch, seq, hkv, d).to(torch.bfloat16).transpose(1, 2)
dense = torch.randn(batch, hkv, seq, d).to(torch.bfloat16)
views = {"sliced": big[:, :, :seq], "token_major": token_major, "dense": dense}
print("copied", [name for name, t in views.items() if tma._rows(t).data_ptr() != t.data_ptr()])
for variant in ("tma_s32_bn64_st4", "pdl_s32_bn64_st4"):
    kernel = cv.variant_kernel("decode_attention", variant)
    for name, k in views.items():
        v = k.flip(-1)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
        print(variant, name, cv.compare(kernel(q, k, v, enable_gqa=True), ref, "decode_attention", "cpu")[0])
"""


def test_tma_stream_copies_only_views_it_cannot_describe_and_stays_correct() -> None:
    skip_without_torch_and_triton()
    proc = run_interpreted(SCRIPT, timeout_s=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == "copied ['sliced', 'token_major']", lines[0]
    for line in lines[1:]:
        assert line.endswith(" True"), line
    assert len(lines) == 7, lines
