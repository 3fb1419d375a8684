"""The target's SPEC (parsed from ``baseline.py`` with ast, never imported), functions it names, seeds."""

from __future__ import annotations

import ast
import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import platform
import random
import sys
from typing import Any


def sha256_file(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def read_spec(script: str) -> dict[str, Any]:
    """The target's SPEC, parsed (never imported) from ``baseline.py`` next to ``script``."""
    baseline = os.path.join(os.path.dirname(os.path.abspath(script)), "baseline.py")
    with open(baseline, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), filename=baseline)
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "SPEC"
            and isinstance(node.value, ast.Call)
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
            and isinstance(node.value.args[0].value, str)
        ):
            return json.loads(node.value.args[0].value)
    raise ValueError(f"{baseline} has no `SPEC = json.loads(r'''...''')` literal: re-render it (`hotkernel sync`)")


def device_kind_of(spec: dict[str, Any]) -> str:
    return "cuda" if str(spec.get("device", "cuda")).startswith("cuda") else "cpu"


def apply_threads(torch: Any, spec: dict[str, Any]) -> int | None:
    """A cpu target's intra-op thread count pinned to the SPEC's ``threads`` (baseline, candidate and judge
    alike); the count in effect, or None for cuda targets (the key is ignored there)."""
    if not DEFAULT_THREADS:  # torch's own count, restored for a SPEC without the key (a persistent judge)
        DEFAULT_THREADS.append(int(torch.get_num_threads()))
    if device_kind_of(spec) != "cpu":
        torch.set_num_threads(DEFAULT_THREADS[0])
        return None
    torch.set_num_threads(int(spec.get("threads") or DEFAULT_THREADS[0]))
    return int(torch.get_num_threads())


DEFAULT_THREADS: list[int] = []


def workspace_root(script: str) -> str:
    """The workspace root: the parent of ``targets/`` (scripts live in ``targets/<name>/``)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(script))))


def load_file_module(path: str) -> Any:
    """Import the Python file ``path`` once per process (its folder on sys.path)."""
    name = file_module_name(path)
    module = sys.modules.get(name)
    if module is None:
        if os.path.dirname(path) not in sys.path:
            sys.path.insert(0, os.path.dirname(path))
        module = exec_source_module(name, path)
    return module


def file_module_name(path: str) -> str:
    """The ``sys.modules`` name of the file ``path`` loaded by :func:`load_file_module` or
    :func:`load_problem_file`."""
    return "hk_user_" + hashlib.sha256(path.encode()).hexdigest()[:16]


PROBLEM_MODULES: dict[str, dict[str, Any]] = {}  # problem file -> {name: module} its folders supplied as it loaded


def load_problem_file(path: str) -> Any:
    """A problem file, loaded once per process, with its own folder and the folder above it first on sys.path
    (GPU MODE's reference imports ``task`` from the first and ``utils`` from the second). The modules a problem
    imports from those two folders are its own: before another problem loads, they leave ``sys.modules`` (the
    first problem's functions keep theirs), so two tasks of different suites in one process (an import's probe,
    a sync's judge) never share a ``utils`` or a ``task``. A module it imports only when called is looked up
    then, in whatever ``sys.modules`` holds."""
    name = file_module_name(path)
    if name in sys.modules:
        return sys.modules[name]
    folders = (os.path.dirname(path), os.path.dirname(os.path.dirname(path)))
    for modules in PROBLEM_MODULES.values():
        for other, module in modules.items():
            if sys.modules.get(other) is module:
                del sys.modules[other]
    for folder in reversed(folders):
        with contextlib.suppress(ValueError):
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    before = set(sys.modules)
    try:
        return exec_source_module(name, path)
    finally:
        PROBLEM_MODULES[path] = {
            new: sys.modules[new]
            for new in set(sys.modules) - before - {name}
            if _module_folder(sys.modules[new]) in folders
        }


def _module_folder(module: Any) -> str | None:
    """The folder a module of a file or a package lives in (None for a built-in or namespace module)."""
    origin = getattr(module, "__file__", None)
    if not origin:
        return None
    folder = os.path.dirname(origin)
    return os.path.dirname(folder) if os.path.basename(origin) == "__init__.py" else folder


def exec_source_module(name: str, path: str) -> Any:
    """The module ``name`` made from the file ``path`` as its bytes are now (``sys.modules[name]`` while it runs;
    removed if it raises). Python's ``__pycache__`` is neither read nor written for it, and no bytecode is written
    for what it imports: a cached ``.pyc`` is trusted when the source's size and mtime (in whole seconds) match,
    so a file rewritten within the same second at the same size would run its old code."""
    sys.dont_write_bytecode = True
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    with open(path, "rb") as handle:
        code = compile(handle.read(), path, "exec", dont_inherit=True)
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - what spec.loader.exec_module does, without the bytecode cache
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def mix_seed(seed: int, index: int) -> int:
    """A per-tensor seed derived from a set seed (both < 2**63)."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


class SeedSource:
    """Fresh seeds from os.urandom (default policy) or a deterministic stream when the spec fixes ``seed``."""

    def __init__(self, fixed: int | None) -> None:
        self.policy = "fresh-per-run" if fixed is None else f"fixed:{fixed}"
        self._rng = None if fixed is None else random.Random(int(fixed))

    def next(self) -> int:
        if self._rng is None:
            return int.from_bytes(os.urandom(8), "little") >> 1
        return self._rng.getrandbits(63)


def cpu_name() -> str:
    """The CPU a cpu target ran on, as records and the board name it: the model and the logical CPUs this process
    may use (``CPU Intel(R) Xeon(R) Processor (2 CPUs)``). A virtual machine's model name is often generic, so
    the model alone put a 2-CPU box and a 16-CPU GPU host on one board row."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as handle:
            model = next((line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")), model)
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return f"CPU {model} ({count} CPUs)"


def proc_kib(path: str, key: str) -> int | None:
    """The ``key:`` field of a /proc file whose unit is kB, in bytes (None when the platform does not say)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open(path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    return None


def host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (None when the platform does not say)."""
    return proc_kib("/proc/meminfo", "MemAvailable")
