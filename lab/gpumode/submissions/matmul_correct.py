"""A correct destination-passing submission: the fp32 product (TF32 off) written into the output buffer."""

import torch


def custom_kernel(data):
    a, b, out = data
    torch.backends.cuda.matmul.allow_tf32 = False
    out.copy_(a @ b)
    return out
