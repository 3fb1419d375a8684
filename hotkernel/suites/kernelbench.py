"""KernelBench: a level directory of ``<number>_<Name>.py`` problem files (``class Model``, ``get_inputs``,
``get_init_inputs``); one target per file, named ``kb<level>_<number>_<name>``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hotkernel.errors import HotkernelError, quote

FILE_RE = re.compile(r"^(?P<number>[0-9]+)_(?P<name>.+)\.py$")
MAX_NAME = 64


@dataclass(frozen=True)
class Problem:
    """One problem file of the suite and the target it becomes."""

    number: int
    file: Path
    target: str


def slug(text: str) -> str:
    """``Square_matrix_multiplication_`` -> ``square_matrix_multiplication``."""
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]", "_", text.lower())).strip("_")


LEVEL_RE = re.compile(r"^level[_-]?(?P<level>[0-9]+)$", re.IGNORECASE)


def folder_level(directory: Path) -> int:
    """The level a folder's name says (``level2`` -> 2), else 1."""
    match = LEVEL_RE.match(Path(directory).name)
    return int(match["level"]) if match else 1


def level_dir(directory: Path, level: int) -> Path:
    """``DIR`` itself when it holds the problem files, else ``DIR/level<level>``."""
    if not directory.is_dir():
        raise HotkernelError(
            f"kernelbench: {directory} is not a directory; give the folder of the problem files "
            "(e.g. KernelBench/KernelBench/level1)"
        )
    if any(FILE_RE.match(p.name) for p in directory.iterdir()):
        return directory
    nested = directory / f"level{level}"
    if nested.is_dir():
        return nested
    raise HotkernelError(
        f"kernelbench: {directory} holds no <number>_<Name>.py problem files and no level{level}/ "
        "folder; give the folder of the problem files"
    )


def problems(directory: Path, level: int, numbers: list[int] | None) -> list[Problem]:
    """The problem files of a level, by number; ``numbers`` picks some (each must exist)."""
    found: dict[int, Problem] = {}
    for path in sorted(level_dir(directory, level).iterdir()):
        match = FILE_RE.match(path.name)
        if match and path.is_file():
            number = int(match["number"])
            target = f"kb{level}_{number:03d}_{slug(match['name'])}"[:MAX_NAME].rstrip("_")
            found[number] = Problem(number, path, target)
    if numbers is None:
        return [found[n] for n in sorted(found)]
    missing = [n for n in numbers if n not in found]
    if missing:
        raise HotkernelError(
            f"kernelbench: no problem {quote(missing[0])} in {level_dir(directory, level)}; "
            f"numbers there: {min(found, default=0)}..{max(found, default=0)}"
        )
    return [found[n] for n in numbers]
