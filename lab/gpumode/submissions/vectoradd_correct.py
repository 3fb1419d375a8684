"""A correct destination-passing submission: the sum is written into the output buffer, which is returned."""


def custom_kernel(data):
    a, b, out = data
    out.copy_(a + b)
    return out
