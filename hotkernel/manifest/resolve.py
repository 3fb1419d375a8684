"""A target's render context (``resolved_target``: every default filled in), its fingerprint, and the
correctness bounds the contract will apply to it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hotkernel.contract.correctness import tolerances
from hotkernel.errors import HotkernelError
from hotkernel.manifest.load import did_you_mean, plain
from hotkernel.manifest.model import (
    DEFAULT_TOLERANCES,
    Manifest,
    TargetSpec,
    is_problem_source,
    parse_shape,
    raw_inputs,
    shape_label,
)
from hotkernel.workspace.paths import MANIFEST_NAME


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


def resolved_target(manifest: Manifest, name: str) -> dict[str, Any]:
    """The render context of ``name``: every default filled in, JSON-serialisable (docs/architecture.md)."""
    spec = get_target(manifest, name)
    defaults = manifest.defaults
    dtype = spec.dtype or defaults.dtype
    default_atol, default_rtol = DEFAULT_TOLERANCES[dtype]
    inputs = []
    for input_name, headline in raw_inputs(spec):
        shapes: list[list[int]] | None = []
        if not headline and not any(isinstance(e, dict) and input_name in e for e in spec.shapes):
            inputs.append({"name": input_name, "shapes": None})  # made by the problem file: no shape
            continue
        for entry in spec.shapes:
            if isinstance(entry, dict) and input_name in entry:
                shapes.append(list(parse_shape(entry[input_name])))
            elif isinstance(entry, str) and input_name == spec.input:  # a plain entry is the first input's shape
                shapes.append(list(parse_shape(entry)))
            else:
                shapes.append(list(parse_shape(headline)))
        inputs.append({"name": input_name, "shapes": shapes})
    problem = {"cases": plain(spec.cases) or []} if is_problem_source(spec.from_) else {}
    return {
        **problem,
        "name": name,
        "from": spec.from_,
        "reference": spec.reference,
        "derive": spec.derive,
        "derived_inputs": list(spec.inputs) if spec.inputs is not None else None,
        "inputs": inputs,
        "shapes": [shape_label(spec, entry) for entry in spec.shapes],
        "dtype": dtype,
        "kwargs": plain(spec.kwargs),
        "rotate": list(spec.rotate) if spec.rotate is not None else [spec.input],
        "flops": spec.flops,
        "bytes": spec.bytes_,
        "min_bytes": spec.min_bytes,
        "atol": spec.atol if spec.atol is not None else default_atol,
        "rtol": spec.rtol if spec.rtol is not None else default_rtol,
        "seed": spec.seed if spec.seed is not None else defaults.seed,
        "iters": spec.iters if spec.iters is not None else defaults.iters,
        "device": spec.device or defaults.device,
        **({"outputs": list(spec.outputs)} if spec.outputs else {}),
        **({"threads": spec.threads or defaults.threads} if (spec.device or defaults.device) == "cpu" else {}),
    }


def correctness_bounds(resolved: dict[str, Any]) -> dict[str, float]:
    """What the contract checks a resolved target's outputs against: atol, rtol, rel_l2_max, min_corr."""
    return tolerances(resolved["dtype"], resolved)


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces: the byte string fingerprints are taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def manifest_fingerprint(manifest: Manifest, name: str) -> str:
    """sha256 of the canonical JSON of ``resolved_target(manifest, name)`` (what the reconciler compares)."""
    return hashlib.sha256(canonical_json(resolved_target(manifest, name)).encode()).hexdigest()
