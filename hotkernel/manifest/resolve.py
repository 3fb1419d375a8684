"""A target resolved (``resolve_target``: a :class:`ResolvedTarget` with every default filled in, here and only
here), its ``SPEC`` dict and fingerprint, and the correctness bounds the contract will apply to it."""

from __future__ import annotations

from typing import Any

from hotkernel.contract.correctness import tolerances
from hotkernel.errors import HotkernelError
from hotkernel.manifest.load import did_you_mean, plain
from hotkernel.manifest.model import (
    Defaults,
    Manifest,
    TargetSpec,
    is_problem_source,
    parse_shape,
    raw_inputs,
    shape_label,
)
from hotkernel.manifest.resolved import ResolvedInput, ResolvedTarget, canonical_json
from hotkernel.workspace.paths import MANIFEST_NAME

__all__ = [
    "ResolvedTarget",
    "canonical_json",
    "correctness_bounds",
    "get_target",
    "manifest_fingerprint",
    "resolve_target",
    "resolved_target",
    "target_names",
]


def target_names(manifest: Manifest) -> list[str]:
    return list(manifest.targets)


def get_target(manifest: Manifest, name: str) -> TargetSpec:
    """The spec of ``name`` or a HotkernelError listing the targets."""
    if name not in manifest.targets:
        known = list(manifest.targets)
        hint = did_you_mean(name, known)
        listing = ", ".join(known) if known else "none yet"
        raise HotkernelError(f"no target {name!r} in {MANIFEST_NAME}; {hint}targets: {listing}")
    return manifest.targets[name]


def _inputs(spec: TargetSpec) -> list[ResolvedInput]:
    """Every raw input with its shape at each ``shapes`` entry (None: made by the problem file, a ``structured``
    one included: its shape in ``shapes`` only labels the case)."""
    inputs = []
    for input_name, headline in raw_inputs(spec):
        named = any(isinstance(e, dict) and input_name in e for e in spec.shapes)
        if input_name in spec.structured or (not headline and not named):
            inputs.append(ResolvedInput(name=input_name, shapes=None))
            continue
        shapes: list[list[int]] = []
        for entry in spec.shapes:
            if isinstance(entry, dict) and input_name in entry:
                shapes.append(list(parse_shape(entry[input_name])))
            elif isinstance(entry, str) and input_name == spec.input:  # a plain entry is the first input's shape
                shapes.append(list(parse_shape(entry)))
            else:
                shapes.append(list(parse_shape(headline)))
        inputs.append(ResolvedInput(name=input_name, shapes=shapes))
    return inputs


def _resolve(name: str, spec: TargetSpec, defaults: Defaults) -> ResolvedTarget:
    dtype = spec.dtype or defaults.dtype
    device = spec.device or defaults.device
    bounds = tolerances(dtype, {"atol": spec.atol, "rtol": spec.rtol})  # the contract's defaults by dtype
    return ResolvedTarget(
        cases=(plain(spec.cases) or []) if is_problem_source(spec.from_) else None,
        name=name,
        from_=spec.from_,
        reference=spec.reference,
        derive=spec.derive,
        derived_inputs=list(spec.inputs) if spec.inputs is not None else None,
        inputs=_inputs(spec),
        shapes=[shape_label(spec, entry) for entry in spec.shapes],
        dtype=dtype,
        kwargs=plain(spec.kwargs),
        rotate=list(spec.rotate) if spec.rotate is not None else [spec.input],
        flops=spec.flops,
        bytes_=spec.bytes_,
        min_bytes=spec.min_bytes,
        atol=bounds["atol"],
        rtol=bounds["rtol"],
        output_tolerances=[dict(entry) for entry in spec.output_tolerances],
        seed=spec.seed if spec.seed is not None else defaults.seed,
        iters=spec.iters if spec.iters is not None else defaults.iters,
        device=device,
        outputs=list(spec.outputs),
        threads=(spec.threads or defaults.threads) if device == "cpu" else None,
    )


def resolve_target(manifest: Manifest, name: str) -> ResolvedTarget:
    """Target ``name`` of ``manifest`` with every default filled in (a HotkernelError names an unknown one)."""
    return _resolve(name, get_target(manifest, name), manifest.defaults)


def resolved_target(manifest: Manifest, name: str) -> dict[str, Any]:
    """``resolve_target(manifest, name).spec()``: the ``SPEC`` dict, for callers that still take a dict."""
    return resolve_target(manifest, name).spec()


def correctness_bounds(resolved: ResolvedTarget | dict[str, Any]) -> dict[str, Any]:
    """What the contract checks a resolved target's outputs against: atol, rtol, rel_l2_max, min_corr (and
    ``per_output``, each output's, where the target sets ``output_tolerances``)."""
    if isinstance(resolved, ResolvedTarget):
        return resolved.bounds()
    return tolerances(resolved["dtype"], resolved)


def manifest_fingerprint(manifest: Manifest, name: str) -> str:
    """sha256 of the canonical JSON of target ``name``'s ``SPEC`` (what the reconciler compares)."""
    return resolve_target(manifest, name).fingerprint()
