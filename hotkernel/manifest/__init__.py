"""The workspace manifest ``hotkernel.yaml``: models (``model``), a bounded loader whose errors name ``FILE:LINE``
(``load``), the resolved target (``resolved``: the typed ``ResolvedTarget`` the renderer, the run layer and the
contract's ``SPEC`` are made from; ``resolve`` builds it), minimal-diff edits under the workspace lock (``edit``)
and the CLI and MCP views of the target keys (``keys``).

Every key is documented in ``docs/manifest.md``; ``schemas/hotkernel.schema.json`` is generated from the models.
"""

from __future__ import annotations

from hotkernel.manifest.edit import (
    SCHEMA_MODELINE_PREFIX,
    EditOutcome,
    add_target,
    add_targets,
    edit_target,
    new_manifest_text,
    remove_target,
    update_target,
)
from hotkernel.manifest.load import ManifestProblem, check_target_fields, load_manifest, load_manifest_text
from hotkernel.manifest.model import (
    DEFAULT_TOLERANCES,
    DTYPES,
    TARGET_KEY_ORDER,
    Defaults,
    Manifest,
    TargetSpec,
    format_shape,
    parse_shape,
    raw_inputs,
    shape_label,
    target_keys,
)
from hotkernel.manifest.resolve import (
    correctness_bounds,
    get_target,
    manifest_fingerprint,
    resolve_target,
    resolved_target,
    target_names,
)
from hotkernel.manifest.resolved import ResolvedInput, ResolvedTarget, canonical_json

__all__ = [
    "DEFAULT_TOLERANCES",
    "DTYPES",
    "SCHEMA_MODELINE_PREFIX",
    "TARGET_KEY_ORDER",
    "Defaults",
    "EditOutcome",
    "Manifest",
    "ManifestProblem",
    "ResolvedInput",
    "ResolvedTarget",
    "TargetSpec",
    "add_target",
    "add_targets",
    "canonical_json",
    "check_target_fields",
    "correctness_bounds",
    "edit_target",
    "format_shape",
    "get_target",
    "load_manifest",
    "load_manifest_text",
    "manifest_fingerprint",
    "new_manifest_text",
    "parse_shape",
    "raw_inputs",
    "remove_target",
    "resolve_target",
    "resolved_target",
    "shape_label",
    "target_keys",
    "target_names",
    "update_target",
]
