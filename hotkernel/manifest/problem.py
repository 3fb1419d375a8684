"""A problem at a place in ``hotkernel.yaml`` (its key path and what to fix), and the one hint for a misspelt
name; shared by the loader and the problem-file checks."""

from __future__ import annotations

import difflib
from typing import Any


class ManifestProblem(Exception):
    """A problem at a place in the document: ``loc`` is the key path, ``message`` says what to fix."""

    def __init__(self, loc: tuple[Any, ...], message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


def did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""
