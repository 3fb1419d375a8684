"""Cheat: puts at torch.manual_seed a copy of the very wrapper ``import torch._dynamo`` installs (its code, closing
over the real manual_seed), but with globals of its own in which ``getattr`` hands back a fixed-seed function."""

import builtins
import types

import torch


def honest(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


_seed = torch.manual_seed
_template = torch._disable_dynamo(_seed)


def _getattr(obj, name, *default):
    if name == "__dynamo_disable":
        return lambda seed: _seed(0)
    return builtins.getattr(obj, name, *default)


_globals = dict(_template.__globals__, getattr=_getattr)
torch.manual_seed = types.FunctionType(
    _template.__code__, _globals, _template.__name__, _template.__defaults__, _template.__closure__
)


def kernel(x, w, *, eps):
    return honest(x, w, eps)
