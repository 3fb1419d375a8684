"""Uninitialized buffers among a generator's outputs, found while it runs (``hotkernel import`` of a GPU MODE
task, whose ``generate_input`` often puts an output buffer made by ``torch.empty`` into ``data``).

``UNINIT_FACTORIES`` make tensors of uninitialized memory; ``uninit_tracker`` is a TorchDispatchMode that keeps
the storage of each such tensor (a view shares it, so a view counts as the tensor), marks a storage written when
an op's schema says it writes an argument (``alias_info.is_write``: in-place ops, ``out=``, ``copy_``, item
assignment), and carries "uninitialized" through the ops that copy content without computing it (``.to()``,
``.clone()``). What is never written before the generator returns holds whatever the memory held: no seed fixes
it, so it can only be a destination. Works under FakeTensorMode (the tracker sits above it) and for real.

Stdlib only at top level: torch is passed in.
"""

from __future__ import annotations

from typing import Any

# aten ops whose output is uninitialized memory (by overload packet name)
UNINIT_FACTORIES = frozenset(
    {"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"}
)
# aten ops whose output has the content of their first argument, unchanged in value
UNINIT_COPIES = frozenset({"_to_copy", "clone", "_to_dense", "to"})


def uninit_storage(torch: Any, value: Any) -> int | None:
    """The identity of a tensor's storage (shared by its views); None for anything else."""
    if not isinstance(value, torch.Tensor):
        return None
    try:
        return int(value.untyped_storage()._cdata)
    except (RuntimeError, NotImplementedError):  # a tensor without storage (sparse, nested)
        return None


def uninit_tracker(torch: Any) -> Any:
    """A TorchDispatchMode whose ``fresh`` maps the storage of every uninitialized tensor made under it to that
    tensor (kept alive, so no storage is reused while it runs) and whose ``written`` holds those written since."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class UninitTracker(TorchDispatchMode):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.fresh: dict[int, Any] = {}
            self.written: set[int] = set()

        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            for value in uninit_written_arguments(func, args, kwargs):
                for item in value if isinstance(value, (list, tuple)) else [value]:
                    key = uninit_storage(torch, item)
                    if key is not None and key in self.fresh:
                        self.written.add(key)
            name = func.overloadpacket.__name__
            source = uninit_storage(torch, args[0]) if args and name in UNINIT_COPIES else None
            copied = source is not None and source in self.fresh and source not in self.written
            if name in UNINIT_FACTORIES or copied:
                key = uninit_storage(torch, out)
                if key is not None:
                    self.fresh[key] = out
                    self.written.discard(key)
            return out

        def uninitialized(self, value: Any) -> bool:
            """Whether ``value`` is a tensor of uninitialized memory nothing wrote under this mode."""
            key = uninit_storage(torch, value)
            return key is not None and key in self.fresh and key not in self.written and value.numel() > 0

    return UninitTracker()


def uninit_written_arguments(func: Any, args: Any, kwargs: dict[str, Any]) -> list[Any]:
    """The arguments ``func``'s schema says it writes (``Tensor(a!)``: in place, ``out=``)."""
    found = []
    for index, argument in enumerate(func._schema.arguments):
        info = argument.alias_info
        if info is None or not info.is_write:
            continue
        if index < len(args) and not argument.kwarg_only:
            found.append(args[index])
        elif argument.name in kwargs:
            found.append(kwargs[argument.name])
    return found


def uninit_paths(torch: Any, tracker: Any, named: list[tuple[str, Any]], leaves: Any) -> list[str]:
    """Of the generator's inputs ``named`` ((name, value) in call order), those left uninitialized: a name where
    every tensor leaf of that input is, else ``name + path`` of each such leaf inside a structured input
    (``leaves(torch, value)``: (path, leaf) pairs)."""
    found: list[str] = []
    for name, value in named:
        tensors = [(path, leaf) for path, leaf in leaves(torch, value) if isinstance(leaf, torch.Tensor)]
        empty = [path for path, leaf in tensors if tracker.uninitialized(leaf)]
        if tensors and len(empty) == len(tensors):
            found.append(name)
        else:
            found += [name + path for path in empty]
    return found
