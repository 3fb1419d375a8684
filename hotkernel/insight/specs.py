"""The spec-sheet table (``insight/data/gpus.json``): dense rates with a source for every figure."""

from __future__ import annotations

import difflib
import json
import re
from functools import lru_cache
from importlib import resources

from pydantic import BaseModel

from hotkernel.errors import HotkernelError

DTYPE_RATE_FIELD = {
    "bf16": "bf16_tflops",
    "fp16": "fp16_tflops",
    "fp8": "fp8_tflops",
    "fp8_e4m3": "fp8_tflops",
    "fp8_e5m2": "fp8_tflops",
    "fp32": "fp32_tflops",
}
CLOSE_MATCH_CUTOFF = 0.6


class GpuSpec(BaseModel):
    """One card's dense spec-sheet figures; ``sources`` names where each figure comes from."""

    key: str
    name: str
    aliases: list[str]
    bandwidth_gbps: float
    bf16_tflops: float
    fp16_tflops: float
    fp8_tflops: float | None
    fp32_tflops: float
    l2_mib: float
    sms: int
    cc: str
    sources: dict[str, str]
    notes: str = ""

    def peak_tflops(self, dtype: str) -> float:
        """The dense rate for ``dtype``; raises when the card has none (fp8 before Ada/Hopper)."""
        field = DTYPE_RATE_FIELD.get(dtype)
        if field is None:
            raise HotkernelError(
                f"dtype {dtype!r} has no roofline rate: use one of {', '.join(sorted(DTYPE_RATE_FIELD))}"
            )
        rate = getattr(self, field)
        if rate is None:
            raise HotkernelError(f"{self.name} has no {dtype} tensor rate ({self.sources[field]}): use bf16 or fp16")
        return float(rate)


@lru_cache(maxsize=1)
def gpu_table() -> tuple[GpuSpec, ...]:
    """Every card in ``hotkernel/data/gpus.json``."""
    text = resources.files("hotkernel.insight").joinpath("data/gpus.json").read_text()
    return tuple(GpuSpec.model_validate(entry) for entry in json.loads(text)["gpus"])


def _normalise(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", name.lower().replace("nvidia", "").replace("geforce", "")).strip()


def find_gpu(name: str) -> tuple[GpuSpec, str | None]:
    """The table entry for ``name`` (a key, an alias or an NVML name) and a warning when only close.

    An exact key/alias match wins; then the longest alias contained in the name ("NVIDIA H200 NVL"
    finds H200-SXM), then the closest by spelling, both with a warning. Nothing close raises.
    """
    wanted = _normalise(name)
    if not wanted:
        raise HotkernelError(f"GPU name {name!r} is empty: give one of {known_gpus()}")
    table = gpu_table()
    for spec in table:
        if wanted in {_normalise(spec.key), *(_normalise(a) for a in spec.aliases)}:
            return spec, None
    contained = [
        (len(_normalise(alias)), spec)
        for spec in table
        for alias in (spec.key, *spec.aliases)
        if re.search(rf"\b{re.escape(_normalise(alias))}\b", wanted) and len(_normalise(alias)) > 3
    ]
    if contained:
        spec = max(contained, key=lambda item: item[0])[1]
        return spec, _closest_warning(name, spec)
    names = {_normalise(alias): spec for spec in table for alias in (spec.key, *spec.aliases)}
    close = difflib.get_close_matches(wanted, list(names), n=1, cutoff=CLOSE_MATCH_CUTOFF)
    if close:
        spec = names[close[0]]
        return spec, _closest_warning(name, spec)
    raise HotkernelError(f"GPU {name!r} is not in the roofline table and nothing is close: use one of {known_gpus()}")


def _closest_warning(name: str, spec: GpuSpec) -> str:
    return f"GPU {name!r} is not in the roofline table; using {spec.key} ({spec.name}), the closest by name"


def known_gpus() -> str:
    """The table keys, comma-separated, for error messages."""
    return ", ".join(spec.key for spec in gpu_table())
