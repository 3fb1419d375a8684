"""Helpers the tasks of this suite share (GPU MODE's reference-kernels layout: the suite's ../utils.py)."""

import torch


def make_match_reference(reference, rtol=1e-5, atol=1e-8):
    """``check_implementation(data, output)``: ``output`` matches ``reference`` on a fresh copy of ``data``."""

    def check_implementation(data, output):
        expected = reference(clone_data(data))
        if not isinstance(output, torch.Tensor) or output.shape != expected.shape:
            return False, f"expected a tensor of shape {tuple(expected.shape)}"
        if output.dtype.is_floating_point:
            ok = torch.allclose(output.float(), expected.float(), rtol=rtol, atol=atol)
        else:
            ok = torch.equal(output, expected)
        return (True, "") if ok else (False, "mismatch")

    return check_implementation


def clone_data(data):
    """A deep copy of a task's data (tensors cloned), so a reference can write its output buffer again."""
    if isinstance(data, torch.Tensor):
        return data.clone()
    if isinstance(data, (tuple, list)):
        return type(data)(clone_data(item) for item in data)
    if isinstance(data, dict):
        return {key: clone_data(value) for key, value in data.items()}
    return data
