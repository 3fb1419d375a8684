"""One exception type for every anticipated failure: a one-line message naming the place and the fix."""

from __future__ import annotations


class HotkernelError(Exception):
    """An anticipated failure. ``str(err)`` is one line: where it happened, what was wrong, what to type."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(" ".join(message.split("\n")).strip())
        self.exit_code = exit_code
