"""The Python files a target names, checked without running them: a ``./file.py:function`` defines the function
at top level, and a module problem (``./problem.py``) is a KernelBench problem or a GPU MODE reference, whose
reference may go by another name where that is unambiguous (docs/suites.md)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from hotkernel.errors import quote
from hotkernel.manifest.model import FILE_REF_RE, PROBLEM_REF_RE, TargetSpec
from hotkernel.manifest.problem import ManifestProblem, did_you_mean


def read_workspace_python(root: Path, rel: str, loc: tuple[Any, ...]) -> ast.Module:
    """The parsed Python file ``rel``, which must lie inside the workspace ``root``."""
    root_resolved = root.resolve()
    try:
        file = (root_resolved / rel).resolve()
    except (OSError, ValueError):
        raise ManifestProblem(loc, f"{quote(rel)} is not a usable path; fix it") from None
    if file != root_resolved and root_resolved not in file.parents:
        raise ManifestProblem(loc, f"{quote(rel)} is outside the workspace; put the file inside {root_resolved}")
    try:
        source = file.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise ManifestProblem(
            loc, f"file {quote(rel)} not found (relative to {root_resolved}); create it or fix the path"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ManifestProblem(loc, f"{quote(rel)}: cannot read ({err.__class__.__name__}); fix the file") from None
    try:
        tree = ast.parse(source, filename=str(file))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as err:
        line = getattr(err, "lineno", None)
        raise ManifestProblem(
            loc,
            f"{rel}{':' + str(line) if line else ''} does not parse ({err.__class__.__name__}); fix the file",
        ) from None
    return tree


PROBLEM_LAYOUTS = {
    "kernelbench": ("Model", "get_inputs", "get_init_inputs"),
    "gpumode": ("generate_input", "ref_kernel"),  # or the reference under another name: has_reference
}


# A GPU MODE reference may define its reference under another name: one of these, the function
# check_implementation is made from, or the one function of one parameter besides these (the probe's rule,
# ``hk_contract.reference_function``, decides at import; this check only refuses a file with none).
REFERENCE_ALIASES = ("ref_kernel", "reference", "ref", "reference_kernel", "ref_impl", "reference_impl")
NOT_A_REFERENCE = ("generate_input", "check_implementation", "custom_kernel", "make_match_reference")


def _one_parameter_functions(tree: ast.Module) -> list[str]:
    """Top-level ``def``s with exactly one parameter without a default (``ref_kernel(data)``-like)."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name not in NOT_A_REFERENCE and not node.name.startswith("_"):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            if len(positional) - len(args.defaults) == 1 and not args.kwonlyargs:
                found.append(node.name)
    return found


def has_reference(tree: ast.Module, names: set[str]) -> bool:
    """A GPU MODE reference: ``ref_kernel``, an alias, ``check_implementation``, or one candidate function."""
    if any(name in names for name in (*REFERENCE_ALIASES, "check_implementation")):
        return True
    return len(_one_parameter_functions(tree)) == 1


def problem_layout(root: Path, rel: str, loc: tuple[Any, ...]) -> str:
    """``kernelbench`` or ``gpumode``: the layout of the problem file ``rel`` by its top-level names."""
    tree = read_workspace_python(root, rel, loc)
    functions, others = top_level_names(tree)
    names = functions | others
    if all(name in names for name in PROBLEM_LAYOUTS["kernelbench"]):
        return "kernelbench"
    if "generate_input" in names and has_reference(tree, names):
        return "gpumode"
    missing = [name for name in PROBLEM_LAYOUTS["kernelbench"] if name not in names]
    raise ManifestProblem(
        loc,
        f"{rel} is not a problem file: it defines no {', '.join(missing)} (KernelBench: class Model(nn.Module), "
        f"get_inputs(), get_init_inputs(); GPU MODE: generate_input(), ref_kernel(); docs/suites.md); for a "
        f"function write {rel}:function",
    )


def check_function_file(root: Path, ref: str, loc: tuple[Any, ...]) -> ast.FunctionDef | None:
    """For ``./file.py:function``: the file is inside the workspace and defines ``function`` at top level; its
    ``def`` when the last top-level statement that binds the name is one (``check_call`` reads it), else None."""
    match = FILE_REF_RE.fullmatch(ref)
    if not match:
        return None
    rel, func = match["path"], match["func"]
    tree = read_workspace_python(root, rel, loc)
    functions, others = top_level_names(tree)
    if func in functions:
        binding = [node for node in tree.body if func in _bound_names(node)]
        return binding[-1] if binding and isinstance(binding[-1], ast.FunctionDef) else None
    if func in others:
        raise ManifestProblem(
            loc,
            f"{func!r} in {rel} is not a function (a class or a value); name a function defined with def "
            f"(a module-style problem class is not supported yet)",
        )
    hint = did_you_mean(func, sorted(functions | others))
    raise ManifestProblem(loc, f"{rel} defines no function {func!r}; {hint}define it at the top level of {rel}")


def _bound_names(node: ast.stmt) -> set[str]:
    """The top-level names a statement binds (as ``top_level_names`` counts them)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {t.id for t in targets if isinstance(t, ast.Name)}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return set()


def check_function_calls(spec: TargetSpec, defs: dict[str, ast.FunctionDef | None], base: tuple[Any, ...]) -> None:
    """A function target's ``from``, ``reference`` and ``derive`` can be called the way the contract calls them:
    ``derive(*raw, **kwargs)`` with the first input and ``extra`` as ``raw``; the others with those inputs (or
    the names ``derive`` returns) and ``kwargs`` by keyword. ``defs``: each key's ``def`` as
    ``check_function_file`` found it (None: not a plain def in a workspace file, nothing to read)."""
    for key, ref, positional in calls_of(spec):
        node = defs.get(key)
        if node is not None:
            check_call(node, ref, positional, set(spec.kwargs), (*base, key))


def calls_of(spec: TargetSpec) -> list[tuple[str, str, int]]:
    """``(key, function ref, positional inputs)`` of each function the contract calls for a function target:
    ``derive`` with the first input and ``extra``; ``from`` and ``reference`` with those, or with the ``inputs``
    ``derive`` returns; every one also takes ``kwargs`` by keyword."""
    raw = 1 + len(spec.extra)
    called = len(spec.inputs) if spec.derive is not None and spec.inputs is not None else raw
    calls = (("from", spec.from_, called), ("reference", spec.reference, called), ("derive", spec.derive, raw))
    return [(key, ref, positional) for key, ref, positional in calls if ref is not None]


def check_call(node: ast.FunctionDef, what: str, positional: int, keywords: set[str], loc: tuple[Any, ...]) -> None:
    """The ``def`` of ``what`` accepts ``positional`` inputs and the keyword arguments ``keywords``; nothing is
    checked for a decorated one (a decorator may change what it takes) or where ``*args``/``**kwargs`` decide."""
    if node.decorator_list:
        return
    args = node.args
    params = [a.arg for a in (*args.posonlyargs, *args.args)]
    named = [a.arg for a in args.args] + [a.arg for a in args.kwonlyargs]
    if args.vararg is None and positional > len(params):
        raise ManifestProblem(
            loc,
            f"{what} takes {len(params)} positional parameter(s) ({', '.join(params) or 'none'}) and the target "
            f"gives {positional} input(s); drop an extra input or add a parameter",
        )
    required = params[: len(params) - len(args.defaults)][positional:]
    kw_required = [a.arg for a, default in zip(args.kwonlyargs, args.kw_defaults, strict=True) if default is None]
    posonly = {a.arg for a in args.posonlyargs}
    missing = [name for name in [*required, *kw_required] if name not in keywords or name in posonly]
    if missing:
        first = missing[0]
        raise ManifestProblem(
            loc,
            f"{what} needs {', '.join(missing)}, which the target does not give: add an input (extra: "
            f"[{first}:SHAPE], --extra {first}:SHAPE), a constant (kwargs: {{{first}: VALUE}}, --kwarg "
            f"{first}=VALUE) or a default in the function",
        )
    unknown = sorted(name for name in keywords if name not in named)
    if unknown and args.kwarg is None:
        raise ManifestProblem(
            loc, f"{what} has no parameter {', '.join(unknown)}; rename the kwargs key or add the parameter"
        )


def top_level_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(functions defined with def or imported, or assigned as ``f = functools.partial(...)``; other top-level
    names: classes)."""
    functions: set[str] = set()
    others: set[str] = set()
    for node in tree.body:
        (others if isinstance(node, ast.ClassDef) else functions).update(_bound_names(node))
    return functions, others - functions


def check_problem(spec: TargetSpec, base: tuple[Any, ...], root: Path | None) -> None:
    """Shapes are given; ``cases`` go with a module problem (one per shape); a problem makes its own inputs."""
    problem = PROBLEM_REF_RE.fullmatch(spec.from_)
    if not spec.shapes:
        fill = " (for a module problem hotkernel new and hotkernel import read them from the file)" if problem else ""
        raise ManifestProblem((*base, "shapes"), f"give at least one shape, e.g. 4096x8192{fill}")
    if spec.cases is not None and not problem:
        raise ManifestProblem((*base, "cases"), "cases go with a module problem (from: ./problem.py); remove them")
    if spec.structured and not problem:
        raise ManifestProblem(
            (*base, "structured"), "structured inputs go with a module problem (from: ./problem.py); remove them"
        )
    if not problem:
        return
    if spec.derive is not None:
        raise ManifestProblem((*base, "derive"), "a module problem makes its own inputs; remove derive")
    if spec.cases is not None and len(spec.cases) != len(spec.shapes):
        raise ManifestProblem(
            (*base, "cases"), f"{len(spec.cases)} case(s) for {len(spec.shapes)} shape(s); give one case per shape"
        )
    if root is not None:
        layout = problem_layout(root, problem["path"], (*base, "from"))
        if layout == "kernelbench" and len(spec.cases or []) > 1:
            raise ManifestProblem(
                (*base, "cases"),
                "a KernelBench problem has one case (its module-level "
                "constants); import it once per case under another name",
            )
