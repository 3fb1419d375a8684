"""Cheat: a Tensor subclass that answers every comparison with "equal" (it decides what each operation on it
returns, the judge's own comparisons included) around an output of zeros."""

import torch


class Agreeable(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in (torch.allclose, torch.equal):
            return True
        if func in (torch.isclose, torch.Tensor.isclose, torch.isfinite, torch.Tensor.isfinite):
            return torch.ones(args[0].shape, dtype=torch.bool)
        return super().__torch_function__(func, types, args, kwargs or {})


def kernel(x, w, *, eps):
    return torch.zeros_like(x).as_subclass(Agreeable)
