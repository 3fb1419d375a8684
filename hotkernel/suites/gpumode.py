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

from hotkernel.contract.uninit import UNINIT_FACTORIES
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
    unfit: str = ""  # why the task cannot become a target as it stands (task.yml and reference.py disagree...)
    tolerance_note: str = ""  # set where reference.py states several tolerances (one per output)
    output_tolerances: tuple[dict[str, float], ...] = ()  # each output's, where reference.py says which is whose
    empty_buffers: tuple[str, ...] = ()  # inputs generate_input leaves uninitialized (x<i>): output buffers


KEEPS_CONTENT = frozenset({"contiguous", "to", "cuda", "cpu", "view", "reshape"})  # calls that write no values
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


def _pair(call: ast.Call) -> dict[str, float]:
    """The numeric ``atol``/``rtol`` keywords of a call."""
    return {
        keyword.arg: float(keyword.value.value)
        for keyword in call.keywords
        if keyword.arg in ("atol", "rtol")
        and isinstance(keyword.value, ast.Constant)
        and isinstance(keyword.value.value, (int, float))
        and not isinstance(keyword.value.value, bool)
    }


def _states_tolerance(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and bool(_pair(node))


def stated_tolerances(tree: ast.AST) -> list[tuple[int, dict[str, float]]]:
    """(line, {atol, rtol}) of every call in ``reference.py`` that states a numeric ``atol`` or ``rtol``."""
    found = [(node.lineno, _pair(node)) for node in ast.walk(tree) if isinstance(node, ast.Call) and _pair(node)]
    return sorted(found, key=lambda item: item[0])


def tolerances(reference: Path) -> tuple[float | None, float | None]:
    """(atol, rtol) from a ``make_match_reference(..., rtol=..., atol=...)`` call in ``reference.py``; where
    several calls state them (a ``check_implementation`` comparing each output at its own tolerance), the
    tightest of each."""
    atol, rtol, _ = _tolerances(ast.parse(reference.read_text(encoding="utf-8"), filename=str(reference)))
    return atol, rtol


def _tolerances(tree: ast.AST) -> tuple[float | None, float | None, str]:
    stated = stated_tolerances(tree)
    atols = [pair["atol"] for _, pair in stated if "atol" in pair]
    rtols = [pair["rtol"] for _, pair in stated if "rtol" in pair]
    atol, rtol = (min(atols) if atols else None), (min(rtols) if rtols else None)
    pairs = {tuple(sorted(pair.items())) for _, pair in stated}
    if len(pairs) < 2:
        return atol, rtol, ""
    each = "; ".join(
        f"line {line}: " + ", ".join(f"{k}={v:g}" for k, v in sorted(pair.items())) for line, pair in stated
    )
    kept = ", ".join(f"{k}={v:g}" for k, v in (("atol", atol), ("rtol", rtol)) if v is not None)
    note = (
        f"several tolerances in reference.py, one per output ({each}): the target keeps the tightest "
        f"({kept}); loosen it with `hotkernel edit` where an output's own tolerance is wider"
    )
    return atol, rtol, note


def _output_names(function: ast.FunctionDef, param: str) -> dict[str, int]:
    """Names ``check_implementation`` unpacks its output into (``a, b = output``) and their positions."""
    names: dict[str, int] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == param:
            for target in node.targets:
                if isinstance(target, (ast.Tuple, ast.List)):
                    names.update({e.id: i for i, e in enumerate(target.elts) if isinstance(e, ast.Name)})
    return names


def _output_index(call: ast.Call, param: str, names: dict[str, int]) -> int | None:
    """The output a tolerance call compares: the one ``output[i]`` or unpacked name among its arguments."""
    found = set()
    for arg in [*call.args, *(keyword.value for keyword in call.keywords)]:
        if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name) and arg.value.id == param:
            index = arg.slice
            if isinstance(index, ast.Constant) and type(index.value) is int and index.value >= 0:
                found.add(index.value)
            else:
                return None
        elif isinstance(arg, ast.Name) and arg.id in names:
            found.add(names[arg.id])
    return found.pop() if len(found) == 1 else None


def per_output_tolerances(tree: ast.Module) -> tuple[dict[str, float], ...]:
    """Each output's tolerance where ``check_implementation(data, output)`` states one per output and each
    statement names its output (``output[1]``, or a name unpacked from ``output``): entry ``i`` is output ``i``'s
    (empty where none is stated). () where it cannot tell which tolerance is whose: a statement outside
    check_implementation, one naming no output or several, two for one output."""
    stated = stated_tolerances(tree)
    node = _bound_names(tree).get("check_implementation")
    if len({tuple(sorted(pair.items())) for _, pair in stated}) < 2 or not isinstance(node, ast.FunctionDef):
        return ()
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if len(params) < 2:
        return ()
    names = _output_names(node, params[1])
    inside = {id(call): call for call in ast.walk(node) if isinstance(call, ast.Call)}
    calls = [call for call in ast.walk(tree) if isinstance(call, ast.Call) and _states_tolerance(call)]
    indices = [_output_index(call, params[1], names) if id(call) in inside else None for call in calls]
    if None in indices or len(set(indices)) != len(indices):
        return ()
    entries: list[dict[str, float]] = [{} for _ in range(max(i for i in indices if i is not None) + 1)]
    for call, index in zip(calls, indices, strict=True):
        entries[index or 0] = _pair(call)
    return tuple(entries)


def per_output_note(entries: tuple[dict[str, float], ...]) -> str:
    """The import note of tolerances written per output."""
    each = "; ".join(
        f"output {i}: " + (", ".join(f"{k}={v:g}" for k, v in sorted(pair.items())) or "the target's")
        for i, pair in enumerate(entries)
    )
    return f"reference.py compares each output at its own tolerance ({each}): written as output_tolerances"


def _bound_names(tree: ast.Module) -> dict[str, ast.AST]:
    """The names ``reference.py`` binds at module level (defs, classes, imports, assignments) and their nodes."""
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
    return names


def missing_files(spec_file: Path, doc: dict[str, Any], tree: ast.Module) -> str:
    """The files task.yml lists (``files: [{name, source}]``) that ``reference.py`` imports and the folder lacks
    (a ``task.py`` left behind), as one reason; "" where none."""
    imported = {
        node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module
    } | {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    lacking = []
    for entry in doc.get("files") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        name, source = entry["name"], str(entry.get("source") or entry["name"])
        if source.startswith("@") or name.removesuffix(".py") not in imported:
            continue
        if not (spec_file.parent / source).is_file():
            lacking.append(f"{name} (source {source})")
    if not lacking:
        return ""
    return (
        f"{spec_file}: files: lists {', '.join(lacking)}, which reference.py imports and which is not there; "
        "fetch it with the task"
    )


def layout_problem(reference: Path, tree: ast.Module, cases: list[dict[str, Any]], listed: str = "benchmarks") -> str:
    """Why ``reference.py`` cannot be called as GPU MODE's layout says (``generate_input(**case, seed)``), read
    from the source; "" where nothing is wrong that the source shows. ``listed``: the task.yml list the cases
    come from (``benchmarks`` or ``tests``)."""
    names = _bound_names(tree)
    if "generate_input" not in names:
        functions = [n for n, node in names.items() if isinstance(node, ast.FunctionDef) and not n.startswith("_")]
        has = f"it defines {', '.join(functions)}" if functions else "it defines no function"
        return (
            f"{reference}: no generate_input ({has}): not GPU MODE's generate_input(**case, seed) / "
            "ref_kernel(data) layout, which is what hotkernel imports; this task's own eval.py drives it"
        )
    node = names["generate_input"]
    if not isinstance(node, ast.FunctionDef):
        return ""  # imported or assigned: the probe calls it and says what happens
    args = node.args
    if args.vararg is not None or args.kwarg is not None:
        return ""
    params = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    head = f"generate_input({', '.join(params)}) at {reference}:{node.lineno}"
    for index, case in enumerate(cases, start=1):
        extra = [key for key in case if key not in params]
        if extra:
            return (
                f"task.yml's {listed.removesuffix('s')} {index} gives {', '.join(extra)}, which {head} does not take: "
                "task.yml and reference.py are from different versions of the task; take both from one commit"
            )
    positional = [*args.posonlyargs, *args.args]
    required = [a.arg for a in positional[: len(positional) - len(args.defaults)]]
    required += [a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default is None]
    for index, case in enumerate(cases, start=1):
        missing = [name for name in required if name not in case and name != SEED_KEY]
        if missing:
            return (
                f"task.yml's {listed.removesuffix('s')} {index} does not give {', '.join(missing)}, which {head} "
                "needs: task.yml and reference.py are from different versions of the task; take both from one commit"
            )
    return ""


def _uninitialized(node: ast.AST) -> bool:
    """An expression whose value is an uninitialized tensor: ``torch.empty(...)`` or ``x.new_empty(...)``, then
    only calls that write no values (``.contiguous()``, ``.to(...)``)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr in UNINIT_FACTORIES:
            return True
        if node.func.attr not in KEEPS_CONTENT:
            return False
        node = node.func.value
    return False


def _written(function: ast.FunctionDef, name: str) -> bool:
    """Whether ``function`` writes values into ``name`` after binding it, or uses it where it might: an in-place
    method (``name.uniform_(...)``), an item assignment, an ``out=``, or any call that takes it as an argument."""
    for node in ast.walk(function):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == name:
                if func.attr.endswith("_") and not func.attr.startswith("__"):
                    return True
            used = [*node.args, *(k.value for k in node.keywords)]
            if any(isinstance(arg, ast.Name) and arg.id == name for arg in used):
                return True
        targets = node.targets if isinstance(node, ast.Assign) else []
        targets = [node.target] if isinstance(node, ast.AugAssign) else targets
        for target in targets:
            if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name:
                return True
            if isinstance(node, ast.AugAssign) and isinstance(target, ast.Name) and target.id == name:
                return True
    return False


def empty_buffers(tree: ast.Module) -> tuple[str, ...]:
    """The inputs (``x<i>``, by position in the tuple ``generate_input`` returns) that it leaves uninitialized
    (``torch.empty`` and nothing writes into them): GPU MODE's output buffers, whose content no seed fixes. Read
    from the source, so only what it shows plainly counts: one return of a tuple, each such name bound once."""
    node = _bound_names(tree).get("generate_input")
    if not isinstance(node, ast.FunctionDef):
        return ()
    returns = [n for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
    if len(returns) != 1 or not isinstance(returns[0].value, (ast.Tuple, ast.List)):
        return ()
    bindings: dict[str, list[ast.AST]] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Assign):
            for target in sub.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        bindings.setdefault(name.id, []).append(sub.value if target is name else target)
    found = []
    for index, item in enumerate(returns[0].value.elts):
        if isinstance(item, ast.Name):
            bound = bindings.get(item.id, [])
            empty = len(bound) == 1 and _uninitialized(bound[0]) and not _written(node, item.id)
        else:
            empty = _uninitialized(item)
        if empty:
            found.append(f"x{index}")
    return tuple(found)


def task_folders(directory: Path) -> list[Path]:
    """The task folders ``directory`` names: itself when it holds a task.yml (``problems/pmpp/vectoradd_py``),
    else the tasks of a suite folder (``problems/pmpp``), else those of every suite (``problems/``)."""
    if (directory / "task.yml").is_file():
        return [directory]
    if not directory.is_dir():
        raise HotkernelError(
            f"gpumode: {directory} is not a directory; give a task folder, e.g. "
            "reference-kernels/problems/pmpp/vectoradd_py, a suite folder or problems/"
        )
    for pattern in ("*/task.yml", "*/*/task.yml"):
        found = sorted(path.parent for path in directory.glob(pattern))
        if found:
            return found
    raise HotkernelError(
        f"gpumode: no task.yml in {directory} or in the folders one or two levels below it; give a task folder "
        "(reference-kernels/problems/pmpp/vectoradd_py), a suite folder (problems/pmpp) or problems/"
    )


CASE_LISTS = ("benchmarks", "tests")  # task.yml's lists of cases: timed sizes, and the smaller correctness ones


def read_task(folder: Path, listed: str = "benchmarks") -> Task:
    """The task in ``folder`` (``.../problems/<suite>/<task>``), its cases from task.yml's ``listed`` list
    (``benchmarks``, or ``tests``: the smaller sizes its authors check correctness at); errors name the file and
    line."""
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
    shapes = doc.get(listed) if isinstance(doc, dict) else None
    if not isinstance(shapes, list) or not shapes or not all(isinstance(s, dict) for s in shapes):
        raise HotkernelError(f"gpumode: {spec_file}: no `{listed}:` list of shape mappings; add one")
    cases = [{k: v for k, v in shape.items() if k != SEED_KEY} for shape in shapes]
    try:
        tree = ast.parse(reference.read_text(encoding="utf-8"), filename=str(reference))
    except SyntaxError as err:
        raise HotkernelError(f"gpumode: {reference}:{err.lineno}: does not parse; fix the file") from None
    atol, rtol, note = _tolerances(tree)
    target = f"gm_{slug(folder.parent.name)}_{slug(folder.name)}"[:64].rstrip("_")
    gpus, why = gpus_needed(doc)
    unfit = missing_files(spec_file, doc, tree) or layout_problem(reference, tree, cases, listed)
    return Task(
        folder,
        reference,
        target,
        cases,
        atol,
        rtol,
        gpus,
        why,
        unfit,
        note,
        per_output_tolerances(tree),
        empty_buffers(tree),
    )
