"""GPU MODE reference-kernels: a task folder with ``task.yml`` (``tests`` and ``benchmarks``: lists of the
keyword arguments of ``generate_input``) and ``reference.py`` (``generate_input(**shape, seed)``,
``ref_kernel(data)``, ``check_implementation``, usually ``make_match_reference(ref_kernel, rtol=..., atol=...)``).
One target per task, its shapes the benchmark list."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from hotkernel.errors import HotkernelError
from hotkernel.suites.kernelbench import slug

SEED_KEY = "seed"  # the contract supplies the seed


@dataclass(frozen=True)
class Task:
    """A task folder, its benchmark cases (seed removed) and the tolerances its reference states."""

    folder: Path
    reference: Path
    target: str
    cases: list[dict[str, Any]]
    atol: float | None
    rtol: float | None
    gpus: int = 1
    gpus_reason: str = ""


GPU_KEYS = ("world_size", "num_gpus", "gpus", "ranks")  # the keys of task.yml that say how many GPUs a case needs


def gpus_needed(doc: dict[str, Any]) -> tuple[int, str]:
    """(GPUs a task needs, the reason) from ``task.yml``: a ``world_size`` (or ``num_gpus``...) in a case, in
    ``config`` or at the top level; ``multi_gpu: true`` without a count is 2 or more."""
    places = [("", doc), ("config", doc.get("config"))] + [
        (section, case) for section in ("tests", "benchmarks") for case in (doc.get(section) or [])
    ]
    best, why = 1, ""
    for section, mapping in places:
        if not isinstance(mapping, dict):
            continue
        for key in GPU_KEYS:
            value = mapping.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > best:
                where = f"{section}: " if section else ""
                best, why = value, f"needs {value} GPUs ({where}{key}: {value} in task.yml)"
    if best == 1 and doc.get("multi_gpu") is True:
        return 2, "needs several GPUs (multi_gpu: true in task.yml)"
    return best, why


def tolerances(reference: Path) -> tuple[float | None, float | None]:
    """(atol, rtol) from a ``make_match_reference(..., rtol=..., atol=...)`` call in ``reference.py``."""
    found: dict[str, float] = {}
    for node in ast.walk(ast.parse(reference.read_text(encoding="utf-8"), filename=str(reference))):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if (
                    keyword.arg in ("atol", "rtol")
                    and isinstance(keyword.value, ast.Constant)
                    and isinstance(keyword.value.value, (int, float))
                ):
                    found[keyword.arg] = float(keyword.value.value)
    return found.get("atol"), found.get("rtol")


def read_task(folder: Path) -> Task:
    """The task in ``folder`` (``.../problems/<suite>/<task>``); errors name the file and line."""
    if not folder.is_dir():
        raise HotkernelError(
            f"gpumode: {folder} is not a directory; give a task folder, e.g. "
            "reference-kernels/problems/pmpp/vectoradd_py"
        )
    spec_file, reference = folder / "task.yml", folder / "reference.py"
    for path in (spec_file, reference):
        if not path.is_file():
            raise HotkernelError(f"gpumode: {path} not found; a task folder holds task.yml and reference.py")
    try:
        doc = YAML(typ="safe").load(spec_file.read_text(encoding="utf-8"))
    except YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{spec_file}:{mark.line + 1}" if mark is not None else str(spec_file)
        raise HotkernelError(f"gpumode: {where}: not valid YAML; fix the file") from None
    shapes = doc.get("benchmarks") if isinstance(doc, dict) else None
    if not isinstance(shapes, list) or not shapes or not all(isinstance(s, dict) for s in shapes):
        raise HotkernelError(f"gpumode: {spec_file}: no `benchmarks:` list of shape mappings; add one")
    cases = [{k: v for k, v in shape.items() if k != SEED_KEY} for shape in shapes]
    try:
        atol, rtol = tolerances(reference)
    except SyntaxError as err:
        raise HotkernelError(f"gpumode: {reference}:{err.lineno}: does not parse; fix the file") from None
    target = f"gm_{slug(folder.parent.name)}_{slug(folder.name)}"[:64].rstrip("_")
    gpus, why = gpus_needed(doc)
    return Task(folder, reference, target, cases, atol, rtol, gpus, why)
