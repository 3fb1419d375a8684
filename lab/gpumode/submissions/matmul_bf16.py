"""A low-precision submission: the product computed in bf16 for an fp32 task, then written into the buffer.
Faster, and wrong at the task's tolerances (rtol = atol = 1e-3)."""


def custom_kernel(data):
    a, b, out = data
    out.copy_((a.bfloat16() @ b.bfloat16()).float())
    return out
