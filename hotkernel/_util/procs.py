"""Run an external command safely: an argument list (never a shell string), its own process group, a timeout,
output captured to files, and the whole group killed on timeout, cancellation or Ctrl-C.

Other modules reuse ``run_command`` (and ``find_executable`` for tool discovery).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hotkernel.errors import HotkernelError

KILL_GRACE_S = 3.0  # a timed-out command gets this long after SIGTERM; a cancelled or interrupted one none
REAP_WAIT_S = 3.0  # the most a SIGKILLed command's reaping is waited for (a process in the kernel takes a moment)
POLL_S = 0.05


@dataclass(frozen=True)
class ProcResult:
    """What a finished (or killed) command left behind. Output lives in files; read it with ``tail``."""

    argv: tuple[str, ...]
    returncode: int
    stdout_path: Path
    stderr_path: Path
    timed_out: bool
    cancelled: bool
    wall_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.cancelled

    def stdout(self, limit: int | None = None) -> str:
        return read_text_tail(self.stdout_path, limit)

    def stderr(self, limit: int | None = None) -> str:
        return read_text_tail(self.stderr_path, limit)

    def output(self, limit: int | None = None) -> str:
        """stdout then stderr, each cut to its last ``limit`` characters."""
        return self.stdout(limit) + "\n" + self.stderr(limit)


def read_text_tail(path: Path, limit: int | None = None) -> str:
    """The last ``limit`` characters of a text file (all of it when ``limit`` is None); '' if absent."""
    try:
        size = path.stat().st_size
    except OSError:
        return ""
    with open(path, "rb") as handle:
        if limit is not None and size > 4 * limit:
            handle.seek(size - 4 * limit)
        data = handle.read().decode("utf-8", errors="replace")
    return data if limit is None else data[-limit:]


def kill_group(proc: subprocess.Popen, *, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the process group of ``proc``, then SIGKILL it if anything is left after ``grace_s`` (0: SIGKILL
    at once, for a stop the user asked for); then kill whatever of its process tree escaped the group (a child
    that started a session of its own) and reap ``proc`` (at most REAP_WAIT_S after a SIGKILL)."""
    family = [proc.pid, *descendants(proc.pid)]  # before any of them exits and is reparented
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = None
    if pgid is not None and grace_s > 0:
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
    if pgid is not None:
        try:
            os.killpg(pgid, signal.SIGKILL)  # also reaps grandchildren that ignored SIGTERM
        except ProcessLookupError:
            pass
    for pid in family[1:]:
        if _running(pid):
            kill_tree(pid)
    try:
        proc.wait(timeout=REAP_WAIT_S)
    except subprocess.TimeoutExpired:
        pass


def run_command(
    argv: Sequence[str],
    *,
    timeout_s: float,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    name: str = "cmd",
    cancel: threading.Event | None = None,
    stdin_text: str | None = None,
) -> ProcResult:
    """Run ``argv`` in a new session (its own process group), output to ``out_dir/<name>.{stdout,stderr}``.

    On timeout the whole group is killed (SIGTERM, then SIGKILL after KILL_GRACE_S); on ``cancel`` being set or
    KeyboardInterrupt/any exception while waiting, at once (SIGKILL). A missing executable raises HotkernelError.
    """
    argv = [os.fspath(a) for a in argv]
    if not argv:
        raise HotkernelError("run_command: empty command; give the program and its arguments")
    directory = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="hotkernel-proc-"))
    directory.mkdir(parents=True, exist_ok=True)
    stdout_path = directory / f"{name}.stdout"
    stderr_path = directory / f"{name}.stderr"
    start = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise HotkernelError(
                f"cannot run {argv[0]!r}: not found ({exc.strerror}); install it or fix PATH"
            ) from None
        except PermissionError:
            raise HotkernelError(f"cannot run {argv[0]!r}: permission denied; make it executable") from None
        timed_out = cancelled = False
        try:
            if stdin_text is not None and proc.stdin is not None:
                try:
                    proc.stdin.write(stdin_text.encode())
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
            deadline = start + timeout_s
            while True:
                try:
                    proc.wait(timeout=POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    kill_group(proc, grace_s=0.0)  # a stop asked for: SIGKILL now, no grace
                    break
                if time.monotonic() >= deadline:
                    timed_out = True
                    kill_group(proc)
                    break
        except BaseException:  # Ctrl-C, SIGTERM (TerminationRaises) or a bug: SIGKILL now, no grace
            kill_group(proc, grace_s=0.0)
            raise
        finally:
            if proc.poll() is None:
                kill_group(proc)
            else:
                _kill_leftovers(proc.pid)
    return ProcResult(
        argv=tuple(argv),
        returncode=proc.returncode if proc.returncode is not None else -9,
        stdout_path=stdout_path,
        stderr_path=stderr_path,
        timed_out=timed_out,
        cancelled=cancelled,
        wall_s=round(time.monotonic() - start, 3),
    )


def _kill_leftovers(pgid: int) -> None:
    """The leader exited; anything still in its group (a daemonised child) is killed too."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def find_executable(
    name: str,
    *,
    extra_dirs: Iterable[str | os.PathLike[str]] = (),
    env_homes: Iterable[str] = (),
) -> Path | None:
    """``name`` on PATH, then under ``$HOME_VAR/bin`` for each of ``env_homes``, then in ``extra_dirs``."""
    found = shutil.which(name)
    if found:
        return Path(found)
    candidates: list[Path] = []
    for var in env_homes:
        home = os.environ.get(var)
        if home:
            candidates.append(Path(home) / "bin")
    candidates.extend(Path(d) for d in extra_dirs)
    for directory in candidates:
        path = directory / name
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


# ---- killing a whole process tree (descendants in sessions of their own too) -----------------------------

TREE_KILL_WAIT_S = 5.0


def _parent_map() -> dict[int, int]:
    """pid -> ppid of every process visible in /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1:
            parents[int(entry)] = int(fields[1])
    return parents


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, grandchildren, ...), whatever session they moved to."""
    if not os.path.isdir("/proc"):
        return []
    children: dict[int, list[int]] = {}
    for child, parent in _parent_map().items():
        children.setdefault(parent, []).append(child)
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def kill_tree(pid: int) -> None:
    """SIGSTOP ``pid`` and all its descendants until the set stops growing, then SIGKILL them and their
    groups.
    """
    own_group = os.getpgrp()
    frozen: list[int] = []
    for _ in range(10):
        fresh = [p for p in [pid, *descendants(pid)] if p not in frozen]
        if not fresh:
            break
        for p in fresh:
            _signal(p, signal.SIGSTOP)
        frozen.extend(fresh)
    groups = set()
    for p in frozen:
        try:
            groups.add(os.getpgid(p))
        except (ProcessLookupError, PermissionError):
            pass
    for group in groups - {own_group, 0, 1}:
        try:
            os.killpg(group, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for p in frozen:
        _signal(p, signal.SIGKILL)
    deadline = time.monotonic() + TREE_KILL_WAIT_S
    while time.monotonic() < deadline and any(_running(p) for p in frozen):
        time.sleep(0.02)


def _running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a killed process takes a moment to go)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode(errors="replace")
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 : stat.rfind(")") + 3] != "Z"


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


# ---- the child side ----------------------------------------------------------------------------------------


class TerminationRaises:
    """While active (main thread only), SIGTERM and SIGHUP raise ``SystemExit(128 + signal)`` like SIGINT
    raises KeyboardInterrupt, so ``finally`` blocks kill the processes they own before the process exits.
    The previous handlers come back on exit. A context manager; nesting is fine."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.previous: dict[int, object] = {}

    def __enter__(self) -> TerminationRaises:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, _raise_exit)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self.previous.clear()


def _raise_exit(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


class SignalsDeferred:
    """While active (main thread only), SIGINT, SIGTERM and SIGHUP are held back: the first one to arrive is
    raised again when the block ends, through the handlers that were in place. For a short write that must
    finish whole (a record and its lock entry). A context manager."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.previous: dict[int, object] = {}
        self.caught: int | None = None

    def __enter__(self) -> SignalsDeferred:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, self._hold)
        return self

    def _hold(self, signum: int, _frame: object) -> None:
        if self.caught is None:
            self.caught = signum

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self.previous.clear()
        if self.caught is not None:
            caught, self.caught = self.caught, None
            signal.raise_signal(caught)
