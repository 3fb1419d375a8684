"""One exception type for every anticipated failure: a one-line message naming the place and the fix."""

from __future__ import annotations


class HotkernelError(Exception):
    """An anticipated failure. ``str(err)`` is one line: where it happened, what was wrong, what to type."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(" ".join(message.split("\n")).strip())
        self.exit_code = exit_code


QUOTE_LIMIT = 200  # characters of a user's value an error message quotes
MESSAGE_LIMIT = 2000  # characters of a whole error message


def shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to about ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}... ({len(text):,} characters)"


def quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters (a 1 MB input is never echoed)."""
    try:
        text = repr(value)
    except ValueError:  # an int past Python's digit limit cannot be printed
        return f"<a {type(value).__name__} too large to print>"
    return shorten(text, limit)
