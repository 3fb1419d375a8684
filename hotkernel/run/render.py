"""Render a target's scripts from its :class:`ResolvedTarget`: a generated ``baseline.py`` (hash-checked), a
``candidate.py`` created once and never overwritten once edited, and the vendored contract ``targets/hk_contract.py``.

Templates live in ``hotkernel/templates/`` inside a wheel and in ``<repo>/templates/`` in an editable install.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import keyword
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2
from pydantic import BaseModel, Field, ValidationError

from hotkernel._util.fs import atomic_write_text, sha256_by_stat
from hotkernel.contract import build
from hotkernel.errors import HotkernelError, quote
from hotkernel.manifest.resolved import ResolvedTarget
from hotkernel.run.signature import adapter_note, inputs_note
from hotkernel.workspace.paths import Workspace, validate_target_name

CONTRACT_NAME = "hk_contract.py"
BASELINE_TEMPLATE = "baseline.py.j2"
CANDIDATE_TEMPLATE = "candidate.py.j2"


class RenderResult(BaseModel):
    """What ``render_target`` did: files written, files kept as they were, and the baseline's hash."""

    target: str = Field(description="target name")
    written: list[str] = Field(default_factory=list, description="workspace-relative paths written")
    kept: list[str] = Field(default_factory=list, description="paths left untouched (an existing candidate)")
    baseline_sha256: str = Field(description="sha256 of the generated baseline.py")
    contract_sha256: str = Field(description="sha256 of targets/hk_contract.py")


def templates_dir() -> Path:
    """``hotkernel/templates`` (wheel) or ``<repo>/templates`` (editable checkout)."""
    here = Path(__file__).resolve().parent.parent  # the hotkernel package
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / BASELINE_TEMPLATE).is_file():
            return candidate
    raise HotkernelError(
        f"hotkernel's templates are missing (looked in {here / 'templates'} and "
        f"{here.parent / 'templates'}): reinstall hotkernel (`pip install -e .` in the repository)"
    )


def contract_path() -> Path:
    """The tool's own copy of the contract (the one every workspace copy must equal), built from the package's
    ``hotkernel/contract/`` modules: shipped built in a wheel, built on first use (and whenever the modules
    change) in a checkout, where ``templates/hk_contract.py`` is git-ignored."""
    path = templates_dir() / CONTRACT_NAME
    try:
        return build.ensure_built(path)
    except OSError as exc:
        raise HotkernelError(
            f"cannot build hotkernel's contract at {path} ({exc.strerror or exc}): make the folder writable or "
            "reinstall hotkernel from a wheel (`pip install hotkernel`), which carries it built"
        ) from exc
    except build.ContractBuildError as exc:
        raise HotkernelError(f"hotkernel/contract does not build: {exc}; fix the module it names") from exc


def contract_source() -> str:
    return contract_path().read_text(encoding="utf-8")


def contract_sha256() -> str:
    path = contract_path()
    digest = sha256_by_stat(path)
    if digest is None:
        raise HotkernelError(f"cannot read {path}: reinstall hotkernel")
    return digest


@lru_cache(maxsize=1)
def contract_module() -> ModuleType:
    """The contract imported in the tool process (stdlib only at import: the orchestrator side)."""
    spec = importlib.util.spec_from_file_location("hotkernel_contract", contract_path())
    if spec is None or spec.loader is None:  # pragma: no cover - the file exists (templates_dir checked)
        raise HotkernelError(f"cannot load {contract_path()}: reinstall hotkernel")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.lru_cache(maxsize=1)
def _environment() -> Any:
    """One jinja2 environment per process: it caches the compiled templates (``plan`` renders every target)."""

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def _identifier(name: str, what: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise HotkernelError(
            f"{what} {name!r} cannot be a Python parameter name: rename it in hotkernel.yaml "
            "(letters, digits and '_', not a keyword)"
        )
    return name


Resolved = ResolvedTarget | Mapping[str, Any]  # a target, or a SPEC read back (a rendered baseline, a record)


def _typed(resolved: Resolved) -> tuple[ResolvedTarget, dict[str, Any]]:
    """The typed target and the SPEC dict its baseline embeds: a target's ``spec()``, or a SPEC read back as it
    was written (so a baseline an older hotkernel rendered re-renders byte for byte)."""
    if isinstance(resolved, ResolvedTarget):
        return resolved, resolved.spec()
    try:
        return ResolvedTarget.from_spec(resolved), dict(resolved)
    except ValidationError as err:
        where = quote(resolved.get("name")) if isinstance(resolved, Mapping) else "?"
        raise HotkernelError(
            f"render: the SPEC of target {where} is not a resolved target ({err.errors()[0]['msg']}); "
            "re-render it from hotkernel.yaml (hotkernel sync)"
        ) from None


def call_names(resolved: Resolved) -> list[str]:
    """The kernel's positional parameters: derived input names when a derive hook is set, else the inputs."""
    return [_identifier(str(n), "input name") for n in _typed(resolved)[0].call_names]


def _context(resolved: Resolved, protocol: int | None = None) -> dict[str, Any]:
    contract = contract_module()
    target, spec = _typed(resolved)
    positional = [_identifier(str(n), "input name") for n in target.call_names]
    kwargs = [_identifier(str(k), "kwarg") for k in target.kwargs]
    signature = ", ".join(positional + (["*"] + kwargs if kwargs else []))
    call_args = ", ".join(positional + [f"{k}={k}" for k in kwargs])
    return {
        "name": target.name,
        "from_ref": target.from_,
        "from_literal": json.dumps(target.from_),
        "spec_json": json.dumps(spec, indent=2, sort_keys=False, allow_nan=False),
        "protocol": contract.PROTOCOL_VERSION if protocol is None else protocol,
        "signature": signature,
        "call_args": call_args,
        "atol": target.atol,
        "rtol": target.rtol,
        "output_bounds": "; ".join(
            f"output {index}: " + ", ".join(f"{key}={value:g}" for key, value in entry.items())
            for index, entry in enumerate(target.output_tolerances)
            if entry
        ),
        "dtype": target.dtype,
        "device": target.device,
        "inputs_note": inputs_note(target),
        "adapter_note": adapter_note(target),
    }


def expected_baseline(resolved: Resolved, *, protocol: int | None = None) -> str:
    """The exact text ``baseline.py`` must have for this resolved target (an edited copy differs); ``protocol``
    renders it as a hotkernel of that contract protocol did (default: the current one)."""
    return _environment().get_template(BASELINE_TEMPLATE).render(**_context(resolved, protocol))


def expected_baseline_sha256(resolved: Resolved) -> str:
    return hashlib.sha256(expected_baseline(resolved).encode("utf-8")).hexdigest()


GENERATED_CANDIDATE_MARK = "# hotkernel: untouched generated candidate "  # + sha256 of the text above it
GENERATED_WHO = "hotkernel (generated: the untouched candidate calls the baseline)"  # the template's WHO


def initial_candidate(resolved: Resolved) -> str:
    """The candidate a new target starts with: ``kernel`` is the baseline's function itself (no wrapper, so its
    verify is an exact A/A), with the signature to replace it by in a comment.

    Its last line marks it as generated, with the sha256 of everything above: while that still matches, the file
    is untouched and render may refresh it (after ``from``, the inputs or the kwargs change in hotkernel.yaml).
    """
    text = _environment().get_template(CANDIDATE_TEMPLATE).render(**_context(resolved), generated_who=GENERATED_WHO)
    text = text if text.endswith("\n") else text + "\n"
    return text + GENERATED_CANDIDATE_MARK + hashlib.sha256(text.encode()).hexdigest() + "\n"


def is_untouched_candidate(text: str) -> bool:
    """True when ``text`` is a generated candidate nobody has edited (its mark matches its content)."""
    body, _, last = text.rstrip("\n").rpartition("\n")
    if not last.startswith(GENERATED_CANDIDATE_MARK):
        return False
    return last[len(GENERATED_CANDIDATE_MARK) :] == hashlib.sha256((body + "\n").encode()).hexdigest()


def _write_if_changed(path: Path, text: str) -> bool:
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    atomic_write_text(path, text)
    return True


def render_target(ws: Workspace, name: str, resolved: Resolved) -> RenderResult:
    """Write ``targets/<name>/baseline.py`` (always regenerated), ``candidate.py`` (when missing, or refreshed
    while it is still the untouched generated one: an edited candidate is never overwritten) and
    ``targets/hk_contract.py`` (the tool's contract, verbatim)."""
    validate_target_name(name)
    given = _typed(resolved)[0].name
    if given != name:
        raise HotkernelError(f"render: resolved target is {given!r}, asked to render {name!r}")
    target_dir = ws.target_dir(name)
    result_written: list[str] = []
    kept: list[str] = []

    def rel(path: Path) -> str:
        return path.relative_to(ws.root).as_posix()

    contract_text = contract_source()
    if _write_if_changed(ws.contract_file, contract_text):
        result_written.append(rel(ws.contract_file))
    baseline_text = expected_baseline(resolved)
    baseline = target_dir / "baseline.py"
    if _write_if_changed(baseline, baseline_text):
        result_written.append(rel(baseline))
    candidate = target_dir / "candidate.py"
    fresh = initial_candidate(resolved)
    if candidate.exists() and is_untouched_candidate(candidate.read_text(encoding="utf-8")):
        if _write_if_changed(candidate, fresh):  # untouched: follow hotkernel.yaml (e.g. a new `from`)
            result_written.append(rel(candidate))
        else:
            kept.append(rel(candidate))
    elif candidate.exists():
        kept.append(rel(candidate))
    else:
        atomic_write_text(candidate, fresh)
        result_written.append(rel(candidate))
    return RenderResult(
        target=name,
        written=result_written,
        kept=kept,
        baseline_sha256=hashlib.sha256(baseline_text.encode("utf-8")).hexdigest(),
        contract_sha256=hashlib.sha256(contract_text.encode("utf-8")).hexdigest(),
    )
