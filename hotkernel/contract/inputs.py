"""Input sets (the worker and the judge build them identically from seeds), outputs, checksums, poison, and
the per-call perturbation that makes every timed call see content it has not seen before."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import inspect
import os
from collections.abc import Callable
from typing import Any

from .knobs import (
    CACHE_MULTIPLE,
    CHECKSUM_CHUNK_ELEMENTS,
    CHECKSUM_PERIOD,
    CPU_CACHE_FALLBACK_BYTES,
    DTYPES,
    MAX_ROTATION,
    MAX_ROTATION_BYTES,
    MIN_ROTATION,
    PERTURB_MAX_ABS,
    PERTURB_MIN_ABS,
    PLACEMENT_PAD_FREE_SHARE,
    PLACEMENT_PAD_MAX_BYTES,
    PLACEMENT_PAD_STEP_BYTES,
    CheckFailed,
)
from .problems import Problem
from .spec import mix_seed


def torch_dtype(torch: Any, name: str) -> Any:
    return getattr(torch, DTYPES[name])


def rotated_raw(spec: dict[str, Any]) -> list[bool]:
    """Which raw inputs get their own copy per set (with a ``derive`` hook, every input does)."""
    if spec.get("derive"):
        return [True] * len(spec["inputs"])
    rotate = set(spec.get("rotate") or [])
    return [item["name"] in rotate for item in spec["inputs"]]


def random_tensor(torch: Any, shape: list[int], dtype: Any, seed: int, device: str) -> Any:
    """Standard-normal data drawn in fp32 from a seeded generator, then cast (never zeros or constants)."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return torch.randn(tuple(shape), generator=generator, device=device, dtype=torch.float32).to(dtype)


def make_raw(
    torch: Any,
    spec: dict[str, Any],
    shape_index: int,
    set_seed: int,
    shared_seed: int,
    device: str,
    problem: Problem | None = None,
    shared: bool = True,
) -> list[Any]:
    """The raw inputs of one set: rotated ones from ``set_seed``, shared ones from ``shared_seed``; for a module
    problem, its own inputs from ``set_seed`` and (KernelBench) the Model's ``state`` from ``shared_seed``.
    ``shared=False``: the rotated ones only, None in place of each shared one (each input has a seed of its own,
    so the rotated ones are the same either way): a refill of set k > 0 need not build the Model again."""
    if problem is not None:
        return problem_raw(torch, spec, shape_index, set_seed, shared_seed, device, problem, shared)
    dtype = torch_dtype(torch, spec["dtype"])
    tensors = []
    for index, (item, rotated) in enumerate(zip(spec["inputs"], rotated_raw(spec), strict=False)):
        seed = mix_seed(set_seed if rotated else shared_seed, index)
        tensors.append(
            random_tensor(torch, item["shapes"][shape_index], dtype, seed, device) if rotated or shared else None
        )
    return tensors


def problem_raw(
    torch: Any,
    spec: dict[str, Any],
    shape_index: int,
    set_seed: int,
    shared_seed: int,
    device: str,
    problem: Problem,
    shared: bool = True,
) -> list[Any]:
    """A module problem's inputs then its Model's ``state``, checked against the inputs hotkernel.yaml lists (the
    shapes of top-level tensors; a structured input, a scalar or ``state`` is listed by its name only); with
    ``shared=False`` the inputs alone (``make_raw``)."""
    dtype = torch_dtype(torch, spec["dtype"])
    rotated = rotated_raw(spec)
    own = problem.inputs(torch, shape_index, mix_seed(set_seed, 0), device, dtype)
    if not shared:
        return own
    state = problem.state(torch, mix_seed(shared_seed, 1), device, dtype)
    values = own + ([state] if state is not None else [])
    given = [list(v.shape) if isinstance(v, torch.Tensor) and v.dim() else type(v).__name__ for v in values]
    listed = [item["shapes"][shape_index] if item.get("shapes") else None for item in spec["inputs"]]
    same = len(given) == len(listed) and all(
        want is None or got == want or not isinstance(values[i], torch.Tensor)
        for i, (got, want) in enumerate(zip(given, listed, strict=False))
    )
    if not same or [i < len(own) for i in range(len(values))] != rotated:
        names = [item["name"] for item, rot in zip(spec["inputs"], rotated, strict=False) if rot]
        raise ValueError(
            f"{spec['from']} makes inputs {given}, the first {len(own)} its own; hotkernel.yaml "
            f"lists {listed} and rotates {names} (a problem's own inputs, and only they, rotate): "
            "import it again (hotkernel new NAME --from FILE --force)"
        )
    return values


# ---- structured inputs ------------------------------------------------------------------------------------
# A call input is a tensor (0-d included), a Python scalar (a constant of the case, passed as is) or a tuple,
# list, dict, dataclass or plain object (one with ``__dict__``) holding them. torch.utils._pytree flattens them:
# it already knows tuples, lists, dicts and namedtuples, and a dataclass or plain object class is registered the
# first time one is seen (flattened by its fields, rebuilt without calling ``__init__``). Seeds, rotation, the
# perturbation, checksums, the memory check and the hand-over to the judge work on the tensor leaves.
TREE_CONSTANTS = (bool, int, float, complex, str, bytes, type(None), enum.Enum)


def is_structure(torch: Any, value: Any) -> bool:
    """A dataclass or plain object that holds inputs (not a tensor, constant, callable, class or torch type)."""
    if isinstance(value, (torch.Tensor, torch.dtype, torch.device, *TREE_CONSTANTS, type)) or callable(value):
        return False
    return dataclasses.is_dataclass(value) or hasattr(value, "__dict__")


def register_structure(pytree: Any, cls: type) -> None:
    """Make ``cls`` a pytree node: its dataclass fields (or instance attributes) are its children."""
    if cls in pytree.SUPPORTED_NODES:
        return

    def names_of(obj: Any) -> tuple[str, ...]:
        if dataclasses.is_dataclass(obj):
            return tuple(field.name for field in dataclasses.fields(obj))
        return tuple(vars(obj))

    def flatten(obj: Any) -> tuple[list[Any], tuple[str, ...]]:
        names = names_of(obj)
        return [getattr(obj, name) for name in names], names

    def unflatten(values: Any, names: tuple[str, ...]) -> Any:
        obj = cls.__new__(cls)
        for name, value in zip(names, values, strict=True):
            object.__setattr__(obj, name, value)  # frozen dataclasses too
        return obj

    def flatten_with_keys(obj: Any) -> tuple[list[tuple[Any, Any]], tuple[str, ...]]:
        names = names_of(obj)
        return [(pytree.GetAttrKey(name), getattr(obj, name)) for name in names], names

    pytree.register_pytree_node(cls, flatten, unflatten, flatten_with_keys_fn=flatten_with_keys)


def flatten_registering(torch: Any, flatten: Callable[[], list[Any]], leaf_of: Callable[[Any], Any]) -> list[Any]:
    """``flatten()``, again after each round of registering the dataclasses and plain objects among its leaves
    (``leaf_of`` an item) as pytree nodes: one round per nesting level of new classes, none when there are none."""
    import torch.utils._pytree as pytree

    items = flatten()
    for _ in range(16):
        new = {type(leaf_of(item)) for item in items if is_structure(torch, leaf_of(item))}
        if not new:
            break
        for cls in new:
            register_structure(pytree, cls)
        items = flatten()
    return items


def tree_leaves(torch: Any, values: Any) -> list[Any]:
    """Every leaf of ``values`` in order, registering dataclasses and plain objects on the way."""
    import torch.utils._pytree as pytree

    return flatten_registering(torch, lambda: pytree.tree_leaves(values), lambda leaf: leaf)


def leaf_paths(torch: Any, value: Any) -> list[tuple[str, Any]]:
    """(path, leaf) of every leaf of one input, in ``tree_leaves`` order; the path as the probe writes it
    (``[0][2]``, ``['out']``, ``.field``; empty for the input itself)."""
    import torch.utils._pytree as pytree

    pairs = flatten_registering(torch, lambda: pytree.tree_flatten_with_path(value)[0], lambda pair: pair[1])
    return [(pytree.keystr(keys), leaf) for keys, leaf in pairs]


def tensor_leaves(torch: Any, values: Any) -> list[Any]:
    """The tensors of ``values`` (a list of call inputs, or one input), in flattening order."""
    return [leaf for leaf in tree_leaves(torch, values) if isinstance(leaf, torch.Tensor)]


def map_tensors(torch: Any, fn: Callable[[Any], Any], values: Any) -> Any:
    """``values`` with every tensor leaf replaced by ``fn(leaf)`` (constants and structure kept)."""
    import torch.utils._pytree as pytree

    tree_leaves(torch, values)
    return pytree.tree_map(lambda leaf: fn(leaf) if isinstance(leaf, torch.Tensor) else leaf, values)


class Layout:
    """The roles of the tensor leaves of one input set (aligned with ``tensor_leaves(set)``): ``per_set`` (a copy
    per set), ``output`` (a destination buffer: filled before every judged call, judged through the return
    value, not hashed; the SPEC's ``outputs`` name an input, every tensor of it, or one tensor inside a
    structured input by its path, e.g. ``x0[1][2]``), ``after`` (a Model buffer the forward may update: judged
    after the correctness pass's calls, not hashed)."""

    def __init__(
        self, torch: Any, spec: dict[str, Any], values: list[Any], per_set: list[bool], after_ids: set[int]
    ) -> None:
        outputs = set(spec.get("outputs") or [])
        names = spec.get("derived_inputs") or [item["name"] for item in spec["inputs"]]
        self.leaves, self.per_set, self.output, self.after = [], [], [], []
        for index, value in enumerate(values):
            name = names[index] if index < len(names) else None
            for path, leaf in leaf_paths(torch, value):
                if not isinstance(leaf, torch.Tensor):
                    continue
                self.leaves.append(leaf)
                self.per_set.append(bool(per_set[index]) if index < len(per_set) else False)
                self.output.append(name in outputs or f"{name}{path}" in outputs)
                self.after.append(id(leaf) in after_ids)

    def guarded(self) -> list[Any]:
        """The leaves the inputs-unchanged check hashes: neither destination buffers nor Model buffers."""
        return [t for t, out, aft in zip(self.leaves, self.output, self.after, strict=True) if not (out or aft)]

    def outputs(self) -> list[Any]:
        return [t for t, out in zip(self.leaves, self.output, strict=True) if out]

    def judged_after(self) -> list[Any]:
        return [t for t, aft in zip(self.leaves, self.after, strict=True) if aft]


def set_layout(torch: Any, spec: dict[str, Any], values: list[Any], derived: bool, problem: Problem | None) -> Layout:
    """The roles of one set's tensor leaves, identical in the worker and the judge: per-set inputs (with a
    ``derive`` hook, every input), destination buffers (the SPEC's ``outputs``) and, for a KernelBench problem,
    the buffers in its final ``state`` input."""
    per_set = [True] * len(values) if derived else rotated_raw(spec)
    after: set[int] = set()
    if problem is not None and problem.buffer_keys and values and isinstance(values[-1], dict):
        after = {id(values[-1][key]) for key in problem.buffer_keys if key in values[-1]}
    return Layout(torch, spec, values, per_set, after)


def fill_destinations(torch: Any, buffers: list[Any], seed: int) -> None:
    """Content no result can be: NaN for floating buffers, a fresh random fill for integer and boolean ones."""
    generator = torch.Generator(device=buffers[0].device) if buffers else None
    if generator is not None:
        generator.manual_seed(seed)
    with torch.no_grad():
        for t in buffers:
            if t.is_floating_point() or t.is_complex():
                t.fill_(float("nan"))
            else:
                t.random_(generator=generator)


def call_inputs(raw: list[Any], derive: Callable[..., Any] | None, kwargs: dict[str, Any]) -> list[Any]:
    """The kernel's positional inputs: the raw inputs, or what the ``derive`` hook makes of them."""
    if derive is None:
        return raw
    out = derive(*raw, **kwargs) if kwargs and accepts_kwargs(derive) else derive(*raw)
    return list(out) if isinstance(out, (tuple, list)) else [out]


def accepts_kwargs(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in (p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params)


def input_bytes(spec: dict[str, Any], shape_index: int) -> tuple[int, int]:
    """(bytes of the rotated raw inputs of one set, bytes of the shared ones) at this shape, from the SPEC."""
    size = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8_e4m3": 1, "fp8_e5m2": 1}[spec["dtype"]]
    rotated = shared = 0
    for item, rot in zip(spec["inputs"], rotated_raw(spec), strict=False):
        if not item.get("shapes"):  # a structured input or state: counted once the first set exists
            continue
        count = 1
        for dim in item["shapes"][shape_index]:
            count *= int(dim)
        if rot:
            rotated += count * size
        else:
            shared += count * size
    return rotated, shared


def as_outputs(torch: Any, value: Any) -> list[Any]:
    """A kernel's return value as a list of plain tensors (a tensor, or a tuple/list of tensors): anything else,
    a Tensor subclass included (it decides what every operation on it returns), fails ``output_plain_tensor``."""
    items = list(value) if isinstance(value, (tuple, list)) else [value]
    for index, item in enumerate(items):
        if type(item) is not torch.Tensor and type(item) is not torch.nn.Parameter:
            what = "a subclass of torch.Tensor" if isinstance(item, torch.Tensor) else "not a tensor"
            raise CheckFailed(
                "output_plain_tensor",
                f"output {index} is a {type(item).__name__} ({what}): return plain torch.Tensor outputs",
            )
    return items


def checksum(torch: Any, tensor: Any) -> list[float]:
    """Two float64 sums (plain and position-weighted, weight ``(i % 251) + 1`` of element i) that change when
    any element changes; computed on the tensor's device in chunks of about CHECKSUM_CHUNK_ELEMENTS, each a
    whole number of 251-element rows, so a chunk's weighted sum is its column sums (one read of the chunk)
    times the 251 weights: no full-size weights or products (a 6 GB output needs no full-size wide copy)."""
    flat = tensor.detach().reshape(-1)
    total = flat.numel()
    rows = max(1, CHECKSUM_CHUNK_ELEMENTS // CHECKSUM_PERIOD)
    weights = torch.arange(1, CHECKSUM_PERIOD + 1, dtype=torch.float64, device=flat.device)
    plain = weighted = 0.0
    for start in range(0, total, rows * CHECKSUM_PERIOD):  # start is a multiple of the period: weights line up
        part = flat[start : start + rows * CHECKSUM_PERIOD]
        if part.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            part = part.to(torch.float32)
        part = part.to(torch.float64)
        whole = part.numel() // CHECKSUM_PERIOD * CHECKSUM_PERIOD
        columns = part[:whole].view(-1, CHECKSUM_PERIOD).sum(0) if whole else weights.new_zeros(CHECKSUM_PERIOD)
        tail = part[whole:]
        plain += float((columns.sum() + tail.sum()).item())
        weighted += float((torch.dot(columns, weights) + torch.dot(tail, weights[: tail.numel()])).item())
    return [plain, weighted]


def nbytes(tensors: list[Any]) -> int:
    """Bytes of the tensors in ``tensors`` (a list of tensors; other items count nothing)."""
    return int(sum(t.numel() * t.element_size() for t in tensors if hasattr(t, "element_size")))


def sync_device(torch: Any, device_kind: str) -> None:
    if device_kind == "cuda":
        torch.cuda.synchronize()


def cache_bytes(torch: Any, device_kind: str) -> int:
    """The L2 size (CUDA) or the CPU's last-level cache (from /sys; fallback 32 MiB)."""
    if device_kind == "cuda":
        return int(torch.cuda.get_device_properties(0).L2_cache_size)
    best_level, best_size = -1, 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    with contextlib.suppress(OSError):
        for entry in sorted(os.listdir(base)):
            try:
                with open(os.path.join(base, entry, "level")) as handle:
                    level = int(handle.read().strip())
                with open(os.path.join(base, entry, "size")) as handle:
                    text = handle.read().strip().upper()
            except (OSError, ValueError):
                continue
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            size = int(text.rstrip("KMG")) * scale
            if level > best_level or (level == best_level and size > best_size):
                best_level, best_size = level, size
    return best_size or CPU_CACHE_FALLBACK_BYTES


def rotation_count(per_set_bytes: int, cache: int, device_kind: str) -> tuple[int, bool]:
    """K so that K sets together exceed CACHE_MULTIPLE x cache; (K, whether a cap kept it cache-resident)."""
    if per_set_bytes <= 0:
        return MIN_ROTATION, True
    wanted = int(CACHE_MULTIPLE * cache // per_set_bytes) + 1
    k = max(MIN_ROTATION, min(wanted, MAX_ROTATION[device_kind], max(1, MAX_ROTATION_BYTES // per_set_bytes)))
    return k, k * per_set_bytes <= CACHE_MULTIPLE * cache


def exact_fp32(torch: Any) -> None:
    """fp32 means fp32. PyTorch's default lets cuDNN convolutions round fp32 inputs to TF32 (a 10-bit
    mantissa, errors near 1e-3 of the output's RMS), which the fp32 bounds reject: KernelBench's eager
    50_conv_standard_2D failed its own correctness check on the H200. The worker and the judge turn TF32 off
    for cuDNN and cuBLAS before any script runs; a candidate that turns it back on is judged by the same
    bounds (docs/correctness.md)."""
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False


def rotation_with_outputs(wanted: int, per_set_bytes: int, output_bytes: int, cache: int, device_kind: str) -> int:
    """K capped so the sets plus the outputs a call writes clear the cache: a call whose outputs alone exceed
    it evicts the inputs by itself, and more sets would only multiply the kept output copies (KernelBench's
    9_Tall_skinny at K = 15 kept 33 outputs of 4 GiB and ran out of the H200's memory)."""
    return min(wanted, rotation_count(per_set_bytes + output_bytes, cache, device_kind)[0])


def placement_pad_bytes(draw: int, free: int) -> int:
    """The pad for a random ``draw`` (a non-negative int): 0 to PLACEMENT_PAD_MAX_BYTES in steps of
    PLACEMENT_PAD_STEP_BYTES, and at most 1/PLACEMENT_PAD_FREE_SHARE of ``free`` bytes."""
    cap = min(PLACEMENT_PAD_MAX_BYTES, max(free, 0) // PLACEMENT_PAD_FREE_SHARE)
    return draw % (cap // PLACEMENT_PAD_STEP_BYTES + 1) * PLACEMENT_PAD_STEP_BYTES


class PlacementPad:
    """Device memory of random size a CUDA worker holds from before its first tensor to its exit.

    Every run is a fresh process that allocates the same sizes in the same order, so without it every run of a
    verify lands its inputs and workspaces on the same physical memory, and a placement that makes a kernel
    slower or faster holds for a whole verify: the speedup moves between verifies by more than its interval
    says. The pad makes placement vary from run to run, so the
    interval covers it. It yields to the target: ``release`` when a shape would not fit beside it."""

    def __init__(self) -> None:
        self.block: Any = None
        self.bytes = 0

    def allocate(self, torch: Any, draw: int, free: int) -> int:
        self.bytes = placement_pad_bytes(draw, free)
        self.block = torch.empty(self.bytes, dtype=torch.uint8, device="cuda") if self.bytes else None
        return self.bytes

    def release(self) -> None:
        """Back to the allocator (still counted as usable memory, see ``free_bytes``)."""
        self.block, self.bytes = None, 0


def poison_memory(torch: Any, sizes: list[int], device: str) -> None:
    """Allocate blocks of these byte sizes, fill them with 0xFF (NaN in every float format) and free them."""
    blocks = []
    for size in sizes:
        if size <= 0:
            continue
        block = torch.empty(int(size), dtype=torch.uint8, device=device)
        block.fill_(255)
        blocks.append(block)
    del blocks


def poison_tensors(torch: Any, outputs: list[list[Any]], protected: list[Any]) -> None:
    """Fill output tensors with NaN (-1 for integers) unless they alias an input (that is judged by value)."""
    spans = []
    for t in protected:
        storage = t.untyped_storage()
        spans.append((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
    for group in outputs:
        for t in group:
            ptr = t.untyped_storage().data_ptr()
            if any(lo <= ptr < hi for lo, hi in spans):
                continue
            with torch.no_grad():
                t.fill_(float("nan") if t.is_floating_point() or t.is_complex() else -1)


# ---- the per-call perturbation ----------------------------------------------------------------------------
# Before timed call j (on set k = j % K) one element of one per-set input is set to a value drawn from this
# sample's perturbation seed: the content a call sees is new at an unpredictable place, so an output cached under
# any key that misses that element is stale, and checked calls are judged against the perturbed inputs. Raw inputs
# get +-[PERTURB_MIN_ABS, PERTURB_MAX_ABS] (a tail value of their own N(0, 1): in distribution, so an honest kernel
# is as accurate there as anywhere; a value of 4-8 made an honest fp32 cuBLAS matmul miss atol 1e-4 by one element
# on the H200); derived inputs and a module problem's inputs get another element of the same tensor (keeps the
# derive hook's invariants and the problem's own distribution: a positive input stays positive, an index stays in
# range). One copy kernel per call does both writes: it restores the element call j - K changed in the same set
# and sets call j's (``fused_perturbation``); the last K calls are restored after the last kernel. Every call
# sees its set with exactly its own element changed. A second copy per call cost each kernel 0.2-0.5 us more on
# the H200. Cost: 7 x N elements of memory and one copy per
# call, timed alone and subtracted (``overhead_ms`` in the run JSON).
def perturb_slot(torch: Any, layout: Layout) -> int | None:
    """Index of the tensor leaf a timed call sees perturbed: the first per-set, contiguous, non-empty one that is
    neither a destination buffer (the kernel overwrites it) nor a Model buffer the forward updates."""
    for index, tensor in enumerate(layout.leaves):
        own = layout.per_set[index] and not layout.output[index] and not layout.after[index]
        if own and tensor.is_contiguous() and tensor.numel() > 0 and tensor.element_size() in (1, 2, 4, 8):
            return index
    return None


def bits_view(torch: Any, tensor: Any) -> Any:
    """A flat integer view of ``tensor`` with the same element size (index_copy_ works on every dtype)."""
    kind = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[tensor.element_size()]
    return tensor.detach().reshape(-1).view(kind)


def perturbation_draws(
    torch: Any, numel: int, n_calls: int, seed: int, device: str, derived: bool, dtype: Any
) -> tuple[Any, Any]:
    """(positions, values as bits) of one sample's perturbations, from ``seed``; for derived inputs the
    second tensor holds source positions instead (the value is the set's own element there)."""
    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    pos = torch.randint(0, numel, (n_calls,), generator=generator, device=device, dtype=torch.int64)
    if derived:
        return pos, torch.randint(0, numel, (n_calls,), generator=generator, device=device, dtype=torch.int64)
    mag = torch.rand(n_calls, generator=generator, device=device, dtype=torch.float32)
    mag = mag * (PERTURB_MAX_ABS - PERTURB_MIN_ABS) + PERTURB_MIN_ABS
    sign = torch.randint(0, 2, (n_calls,), generator=generator, device=device).to(torch.float32) * 2 - 1
    return pos, bits_view(torch, (mag * sign).to(dtype))


def perturbation_of_call(
    torch: Any, inputs: list[Any], slot: int, n_calls: int, seed: int, call: int, derived: bool
) -> tuple[int, Any]:
    """The judge's side: (position, value bits) that timed call ``call`` saw, for its own regenerated set."""
    flat = bits_view(torch, inputs[slot])
    pos, second = perturbation_draws(torch, flat.numel(), n_calls, seed, flat.device.type, derived, inputs[slot].dtype)
    value = flat[second[call]].clone() if derived else second[call]
    return int(pos[call].item()), value


def gather_per_set(torch: Any, flats: list[Any], index: Any) -> Any:
    """``out[j] = flats[j % K][index[j]]`` (fewer calls than sets: the first ``index.numel()`` sets only)."""
    k_sets = len(flats)
    out = torch.empty(index.numel(), dtype=flats[0].dtype, device=index.device)
    for k in range(min(k_sets, index.numel())):
        picks = torch.arange(k, index.numel(), k_sets, device=index.device)
        out[picks] = flats[k][index[picks]]
    return out


def fused_perturbation(torch: Any, pos: Any, values: Any, orig: Any, k_sets: int) -> tuple[Any, Any]:
    """Per call j, the two (position, value) writes of its one copy: ``[:, 0]`` restores call j - K's element
    (call j's own write for the first K calls, and call j's value where both positions coincide, so that the
    copy's order never matters), ``[:, 1]`` sets call j's. Shapes (n, 2)."""
    prev = torch.arange(pos.numel(), device=pos.device) - k_sets
    had = prev >= 0
    prev = prev.clamp(min=0)
    first_pos = torch.where(had, pos[prev], pos)
    first_val = torch.where(had & (pos[prev] != pos), orig[prev], values)
    return torch.stack([first_pos, pos], dim=1), torch.stack([first_val, values], dim=1)


class Perturbation:
    """The worker's side for one shape: the perturbed leaf of every set (``flats``, bit views), buffers sized by
    the timer (``resize``), one sample's draws (``draw``), the one copy before call j (``perturb``) and the
    restores after a sample's last call (``settle``). No perturbable leaf: every method does nothing."""

    def __init__(self, torch: Any, leaves: list[Any], own_elements: bool, device: str) -> None:
        self.torch, self.device, self.own_elements = torch, device, own_elements
        self.flats = [bits_view(torch, t) for t in leaves]
        self.dtype = leaves[0].dtype if leaves else None
        self.n = 0

    def resize(self, n: int) -> None:
        if not self.flats:
            return
        torch, kind = self.torch, self.flats[0].dtype
        self.pos = torch.zeros(n, dtype=torch.int64, device=self.device)
        self.orig = torch.zeros(n, dtype=kind, device=self.device)
        self.writes = (
            torch.zeros(n, 2, dtype=torch.int64, device=self.device),
            torch.zeros(n, 2, dtype=kind, device=self.device),
        )
        self.n = n
        self.pos_of = [self.pos[j : j + 1] for j in range(n)]
        self.orig_of = [self.orig[j : j + 1] for j in range(n)]
        self.write_pos = [self.writes[0][j] for j in range(n)]
        self.write_val = [self.writes[1][j] for j in range(n)]

    def draw(self, seed: int) -> None:
        if not self.flats:
            return
        torch, flats = self.torch, self.flats
        pos, second = perturbation_draws(
            torch, flats[0].numel(), self.n, seed, self.device, self.own_elements, self.dtype
        )
        values = gather_per_set(torch, flats, second) if self.own_elements else second
        self.pos.copy_(pos)
        self.orig.copy_(gather_per_set(torch, flats, pos))
        write_pos, write_val = fused_perturbation(torch, self.pos, values, self.orig, len(flats))
        self.writes[0].copy_(write_pos)
        self.writes[1].copy_(write_val)

    def perturb(self, j: int, k: int) -> None:
        """One copy: call j - K's element restored, call j's set."""
        if self.flats:
            self.flats[k].index_copy_(0, self.write_pos[j], self.write_val[j])

    def settle(self, j: int) -> None:
        """After the last call of a sample, the last K calls' elements restored."""
        if self.flats and j == self.n - 1:
            k_sets = len(self.flats)
            for i in range(max(0, j + 1 - k_sets), j + 1):
                self.flats[i % k_sets].index_copy_(0, self.pos_of[i], self.orig_of[i])


def apply_perturbation(torch: Any, inputs: list[Any], slot: int, position: int, value_bits: Any) -> None:
    """The judge's side: set element ``position`` of ``inputs[slot]`` to the recorded value (bits)."""
    flat = bits_view(torch, inputs[slot])
    index = torch.tensor([position], dtype=torch.int64, device=flat.device)
    flat.index_copy_(0, index, value_bits.reshape(1).to(flat.device))
