"""How commands print a result: its JSON (``--json``) or its summary lines, on stdout."""

from __future__ import annotations

import sys

from pydantic import BaseModel


def emit(model: BaseModel, lines: list[str], as_json: bool) -> None:
    """A result as JSON (``--json``) or as its summary lines, on stdout."""
    if as_json:
        sys.stdout.write(model.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(lines) + "\n")
