"""A sync's time budget: the ``--budget`` value, which targets go first, and the time left for the rest.

Order: targets with no record yet (in manifest order), then the others by the age of their newest record, the
oldest first. The estimate of what is left comes from measured verify times: a target's newest record (the
wall time of its runs), else the mean seconds per run of what this sync has verified so far.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hotkernel.errors import HotkernelError, quote
from hotkernel.reconcile.jobs import competitor_job_key
from hotkernel.store.models import Record

_PART = re.compile(r"(\d+(?:\.\d+)?)([hms]?)")
_UNIT_S = {"h": 3600.0, "m": 60.0, "s": 1.0, "": 1.0}


def parse_budget(text: str | float | None) -> float | None:
    """Seconds of a budget: '90s', '10m', '1h', '1h30m' or a plain number of seconds; None for None."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        seconds = float(text)
    else:
        spec = text.strip().lower().replace(" ", "")
        parts = _PART.findall(spec)
        if not spec or "".join(a + b for a, b in parts) != spec or (len(parts) > 1 and "" in (u for _, u in parts)):
            raise HotkernelError(f"--budget {quote(text)}: give a duration like 90s, 10m, 1h or 1h30m")
        seconds = sum(float(value) * _UNIT_S[unit] for value, unit in parts)
    if seconds <= 0:
        raise HotkernelError(f"--budget {quote(str(text))}: give a duration above zero, e.g. 10m")
    return seconds


def staleness_order(names: Sequence[str], records: Iterable[tuple[str, Record]]) -> list[str]:
    """``names`` with never-recorded targets first (their given order), then by newest record, oldest first.

    Competitor records do not count: a target whose candidate was never recorded is never-recorded."""
    newest: dict[str, str] = {}
    for _path, rec in records:
        if rec.role != "competitor" and rec.created_at > newest.get(rec.target, ""):
            newest[rec.target] = rec.created_at
    position = {name: i for i, name in enumerate(names)}
    return sorted(names, key=lambda name: (name in newest, newest.get(name, ""), position[name]))


def recorded_seconds(records: Iterable[tuple[str, Record]]) -> dict[str, float]:
    """Per job key (a target's name, ``competitor_job_key`` for a competitor): the seconds its newest record's
    runs took (the sum of their wall times)."""
    newest: dict[str, tuple[str, float]] = {}
    for _path, rec in records:
        walls = [run.wall_s for run in rec.result.runs if run.wall_s is not None]
        if not walls:
            continue
        key = competitor_job_key(rec.target, rec.competitor or "") if rec.role == "competitor" else rec.target
        if rec.created_at > newest.get(key, ("", 0.0))[0]:
            newest[key] = (rec.created_at, float(sum(walls)))
    return {key: seconds for key, (_at, seconds) in newest.items()}


def duration_text(seconds: float) -> str:
    """'45 s', '3 min 20 s', '1 h 05 min'."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


@dataclass
class Deadline:
    """The end of a budget (``monotonic`` seconds), or none; ``expired`` once it has passed."""

    budget_s: float | None = None
    start: float = field(default_factory=time.monotonic)

    @property
    def at(self) -> float | None:
        return None if self.budget_s is None else self.start + self.budget_s

    def left_s(self) -> float | None:
        return None if self.at is None else self.at - time.monotonic()

    def expired(self) -> bool:
        left = self.left_s()
        return left is not None and left <= 0

    def arm(self, event: threading.Event) -> threading.Timer | None:
        """A started timer that sets ``event`` at the deadline (None without a budget); cancel it when done."""
        left = self.left_s()
        if left is None:
            return None
        timer = threading.Timer(max(0.0, left), event.set)
        timer.daemon = True
        timer.start()
        return timer


@dataclass
class Estimate:
    """Seconds left for the verifies not yet done: each job's recorded verify time where there is one, else the
    mean seconds per verify measured in this sync so far. A verify stops when the sequential rule decides (often
    after 3 rounds) or runs up to its cap, so time is counted per verify, never per planned run."""

    history: dict[str, float]  # job key -> seconds of one verify, from its target's newest record
    measured_s: float = 0.0
    measured_verifies: int = 0

    def add_job(self, key: str, seconds: float | None) -> None:
        if seconds is not None and seconds > 0:
            self.history[key] = seconds

    def finished(self, seconds: float) -> None:
        """A verify took ``seconds``: the rate for jobs without history."""
        if seconds > 0:
            self.measured_verifies += 1
            self.measured_s += seconds

    def left_s(self, pending: Iterable[str], elapsed: dict[str, float]) -> float | None:
        """Seconds for the ``pending`` jobs (``elapsed``: seconds each running one has run); None while nothing
        tells. A running verify past its estimate counts as about to finish."""
        rate = self.measured_s / self.measured_verifies if self.measured_verifies else None
        total = 0.0
        for key in pending:
            per_verify = self.history.get(key, rate)
            if per_verify is None:
                return None
            total += max(0.0, per_verify - elapsed.get(key, 0.0))
        return total
