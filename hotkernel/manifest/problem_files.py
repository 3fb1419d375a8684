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


def check_function_file(root: Path, ref: str, loc: tuple[Any, ...]) -> None:
    """For ``./file.py:function``: the file is inside the workspace and defines ``function`` at top level."""
    match = FILE_REF_RE.fullmatch(ref)
    if not match:
        return
    rel, func = match["path"], match["func"]
    functions, others = top_level_names(read_workspace_python(root, rel, loc))
    if func in functions:
        return
    if func in others:
        raise ManifestProblem(
            loc,
            f"{func!r} in {rel} is not a function (a class or a value); name a function defined with def "
            f"(a module-style problem class is not supported yet)",
        )
    hint = did_you_mean(func, sorted(functions | others))
    raise ManifestProblem(loc, f"{rel} defines no function {func!r}; {hint}define it at the top level of {rel}")


def top_level_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(functions defined with def or imported, other top-level names: classes and assignments)."""
    functions: set[str] = set()
    others: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.add(node.name)
        elif isinstance(node, ast.ClassDef):
            others.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            functions.update(t.id for t in targets if isinstance(t, ast.Name))  # f = functools.partial(...)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            functions.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return functions, others - functions


def check_problem(spec: TargetSpec, base: tuple[Any, ...], root: Path | None) -> None:
    """Shapes are given; ``cases`` go with a module problem (one per shape); a problem makes its own inputs."""
    problem = PROBLEM_REF_RE.fullmatch(spec.from_)
    if not spec.shapes:
        fill = " (for a module problem hotkernel new and hotkernel import read them from the file)" if problem else ""
        raise ManifestProblem((*base, "shapes"), f"give at least one shape, e.g. 4096x8192{fill}")
    if spec.cases is not None and not problem:
        raise ManifestProblem((*base, "cases"), "cases go with a module problem (from: ./problem.py); remove them")
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
