"""``output_tolerances``: the bounds of each output of a target, one mapping per output in the order the kernel
returns them; a bound an entry leaves out, and every output past the list, takes the target's."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from hotkernel.errors import quote

OUTPUT_TOLERANCE_KEYS = ("atol", "rtol", "rel_l2_max", "min_corr")  # the bounds the contract's tolerances() knows
OUTPUT_TOLERANCE_HELP = "write a mapping of atol, rtol, rel_l2_max, min_corr, e.g. {atol: 1e-3, rtol: 1e-3}"


def _number(text: str) -> Any:
    try:
        return float(text)
    except ValueError:
        return text.strip()


def output_tolerance_entry(value: Any) -> dict[str, float]:
    """An ``output_tolerances`` item: a mapping of some of atol, rtol, rel_l2_max, min_corr to numbers (>= 0;
    min_corr at most 1), or ``"atol=1e-3,rtol=1e-3"``; null is an empty mapping (every bound the target's)."""
    if isinstance(value, str):
        pairs = [part.partition("=") for part in value.split(",") if part.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise ValueError(f"{quote(value)} is not an output tolerance; write atol=1e-3,rtol=1e-3")
        value = {name.strip(): _number(raw) for name, _, raw in pairs}
    if not isinstance(value, dict | None):
        raise ValueError(f"{quote(value)} is not an output tolerance; {OUTPUT_TOLERANCE_HELP}")
    entry: dict[str, float] = {}
    for name, bound in (value or {}).items():
        if name not in OUTPUT_TOLERANCE_KEYS:
            raise ValueError(f"{quote(name)} is not a bound; {OUTPUT_TOLERANCE_HELP} (one left out is the target's)")
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(bound):
            raise ValueError(f"{name}: {quote(bound)} is not a number; write e.g. {name}: 1e-3")
        if bound < 0 or (name == "min_corr" and bound > 1):
            limit = "between 0 and 1" if name == "min_corr" else "of 0 or more"
            raise ValueError(f"{name}: {bound!r} is out of range; give a number {limit}")
        entry[name] = float(bound)
    return entry


_BOUND = {"type": "number", "minimum": 0}
OutputTolerance = Annotated[
    dict[str, float],
    BeforeValidator(output_tolerance_entry),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string"},
                {
                    "type": "object",
                    "properties": {
                        **{key: _BOUND for key in OUTPUT_TOLERANCE_KEYS},
                        "min_corr": {**_BOUND, "maximum": 1},
                    },
                    "additionalProperties": False,
                },
                {"type": "null"},
            ],
            "description": "The bounds of one output; those left out are the target's.",
        }
    ),
]
