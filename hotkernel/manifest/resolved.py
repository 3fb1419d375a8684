"""``ResolvedTarget``: one target of ``hotkernel.yaml`` with every default filled in, the one object the renderer,
the run layer and the contract's ``SPEC`` are made from.

``manifest/resolve.py`` builds it (the defaults are filled in there, the tolerances by the contract's own
``tolerances``); ``spec()`` is the JSON-ready dict the rendered ``baseline.py`` embeds as ``SPEC`` (its keys in
the order written), the record keeps, and the fingerprint is the sha256 of.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from hotkernel.contract.correctness import tolerances


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces: the byte string fingerprints are taken of."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


class ResolvedInput(BaseModel):
    """One raw input in call order: its shape at every ``shapes`` entry, or None for a value the problem file
    makes (a scalar, a structured input, a KernelBench Model's ``state``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    shapes: list[list[int]] | None


class ResolvedTarget(BaseModel):
    """A target as the contract runs it. Fields are declared in the order ``SPEC`` writes them; any dump of it
    (``spec()``, or inside another model) is the ``SPEC`` dict."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, serialize_by_alias=True)

    cases: list[dict[str, Any]] | None = Field(None, description="module problems only (else absent from SPEC)")
    name: str
    from_: str = Field(alias="from")
    reference: str | None = None
    derive: str | None = Field(None, description="the derive hook")
    derived_inputs: list[str] | None = Field(None, description="the names derive returns (the kernel's inputs)")
    inputs: list[ResolvedInput]
    shapes: list[str] = Field(default_factory=list, description="shape labels, the headline first")
    dtype: str
    kwargs: dict[str, Any] = Field(default_factory=dict)
    rotate: list[str] = Field(default_factory=list)
    flops: float | None = None
    bytes_: int | None = Field(None, alias="bytes")
    min_bytes: int | None = None
    atol: float | None = None
    rtol: float | None = None
    output_tolerances: list[dict[str, float]] = Field(
        default_factory=list, description="each output's bounds as written (absent from SPEC if none)"
    )
    seed: int | None = None
    iters: int | None = None
    device: Literal["cuda", "cpu"]
    outputs: list[str] = Field(default_factory=list, description="destination buffers (absent from SPEC if none)")
    threads: int | None = Field(None, description="cpu targets only (else absent from SPEC)")

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> ResolvedTarget:
        """The typed view of a ``SPEC`` read back (a rendered baseline, a record); keys it does not know are
        ignored, and keys an older hotkernel did not write take their defaults."""
        known = {field.alias or name for name, field in cls.model_fields.items()}
        return cls.model_validate({key: value for key, value in spec.items() if key in known})

    @model_serializer(mode="wrap")
    def _as_spec(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Every field by its manifest name; ``cases`` only for module problems, ``outputs`` and
        ``output_tolerances`` only when there are some, ``threads`` only when set (cpu targets)."""
        data = handler(self)
        absent = {
            "cases": self.cases is None,
            "outputs": not self.outputs,
            "output_tolerances": not self.output_tolerances,
            "threads": self.threads is None,
        }
        return {key: value for key, value in data.items() if not absent.get(key, False)}

    def spec(self) -> dict[str, Any]:
        """The ``SPEC`` dict the rendered baseline embeds (keys in the order written), JSON-serialisable."""
        return self.model_dump()

    def fingerprint(self) -> str:
        """sha256 of the canonical JSON of ``spec()``: what the lock's ``manifest`` fingerprint compares."""
        return hashlib.sha256(canonical_json(self.spec()).encode()).hexdigest()

    def bounds(self) -> dict[str, Any]:
        """What the contract checks the outputs against: atol, rtol, rel_l2_max, min_corr, and each output's as
        ``per_output`` where ``output_tolerances`` sets them (the contract's ``tolerances``, the one place their
        defaults by dtype are applied)."""
        return tolerances(
            self.dtype, {"atol": self.atol, "rtol": self.rtol, "output_tolerances": self.output_tolerances}
        )

    @property
    def call_names(self) -> list[str]:
        """The kernel's positional parameters: the derived inputs when a derive hook is set, else the inputs."""
        return list(self.derived_inputs or [item.name for item in self.inputs])

    @property
    def is_problem(self) -> bool:
        """True for a module problem (``from`` names a KernelBench or GPU MODE file)."""
        return self.cases is not None
