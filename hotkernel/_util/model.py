"""The base of every result model: plain pydantic, unknown keys refused."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """A pydantic model that refuses unknown keys (records and results are read back strictly)."""

    model_config = ConfigDict(extra="forbid")
