"""Which Python runs the kernels: the user's interpreter with torch (the tool never imports torch).

Order: ``HOTKERNEL_PYTHON``, else the manifest's ``defaults.python``, else the first ``python``/``python3`` on
``PATH`` that imports torch. A probe (``import torch`` in a subprocess) is cached per path in this process and,
across commands, in ``$XDG_CACHE_HOME/hotkernel/torch_probes.json`` under the interpreter's fingerprint: its file
and the modification times of every directory on its ``sys.path``, which an install or uninstall changes (read by a
subprocess that imports nothing).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from hotkernel._util.fs import atomic_write_text
from hotkernel.errors import HotkernelError

ENV_VAR = "HOTKERNEL_PYTHON"
PATH_NAMES = ("python", "python3")
PROBE_TIMEOUT_S = 120.0  # `import torch` alone took 57 s on a cold, loaded 2-core machine
PROBE_CODE = "import torch, sys; sys.stdout.write(torch.__version__)"
PATH_CODE = "import json, sys; sys.stdout.write(json.dumps(sys.path))"  # what decides whether torch imports
FINGERPRINT_TIMEOUT_S = 30.0
FIX_HINT = (
    f"set {ENV_VAR}=/path/to/python, or set `python: /path/to/python` under `defaults:` in hotkernel.yaml, "
    "or install torch into the python on PATH (pip install torch)"
)

Source = Literal["env", "manifest", "path"]


@dataclass(frozen=True)
class PythonChoice:
    """The interpreter chosen, why (``env`` / ``manifest`` / ``path``), and its torch version (None: none)."""

    path: str
    source: Source
    torch_version: str | None

    def describe(self) -> str:
        """One line for the user: which python, why, and its torch."""
        why = {
            "env": f"from {ENV_VAR}",
            "manifest": "from hotkernel.yaml defaults.python",
            "path": "first on PATH",
        }
        torch = f"torch {self.torch_version}" if self.torch_version else "no torch"
        return f"{self.path} ({why[self.source]}, {torch})"


@dataclass(frozen=True)
class Probe:
    """What running ``PROBE_CODE`` in one interpreter gave: the torch version, or why it failed."""

    torch_version: str | None
    problem: str | None


_probe_cache: dict[str, Probe] = {}


def clear_probe_cache() -> None:
    """Forget earlier probes (tests, or after the user installed torch)."""
    _probe_cache.clear()


def probe_cache_file() -> Path:
    """Where probes persist across commands (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "hotkernel" / "torch_probes.json"


def run_code(path: str, code: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
    """``path -c code``, its output captured as text, no stdin; raises OSError or TimeoutExpired."""
    return subprocess.run(
        [path, "-c", code], capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL, check=False
    )


def interpreter_fingerprint(path: str) -> str | None:
    """A digest of the interpreter file and of the modification times of the directories on its ``sys.path``
    (site-packages: installing or removing torch there changes it), or None when it cannot be read."""
    try:
        done = run_code(path, PATH_CODE, FINGERPRINT_TIMEOUT_S)
        entries = json.loads(done.stdout) if done.returncode == 0 else None
        real = os.path.realpath(path)
        stat = os.stat(real)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    if not isinstance(entries, list):
        return None
    parts = [real, str(stat.st_size), str(stat.st_mtime_ns)]
    for entry in entries:
        if not entry:  # the current directory (``-c``): not where torch is installed, and it changes all the time
            continue
        directory = os.path.abspath(str(entry))
        try:
            parts.append(f"{directory}={os.stat(directory).st_mtime_ns}")
        except OSError:
            parts.append(f"{directory}=absent")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _stored_probes() -> dict[str, dict[str, str | None]]:
    try:
        data = json.loads(probe_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _store_probe(fingerprint: str, probe: Probe) -> None:
    """Keep ``probe`` under ``fingerprint`` (a failure to write is no failure of the command)."""
    stored = _stored_probes()
    stored[fingerprint] = {"torch_version": probe.torch_version, "problem": probe.problem}
    try:
        probe_cache_file().parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(probe_cache_file(), json.dumps(stored, sort_keys=True))
    except OSError:
        pass


def probe_python(path: str, *, timeout_s: float = PROBE_TIMEOUT_S) -> Probe:
    """Run ``path -c 'import torch'`` once per path per process, and once per fingerprint across processes
    (``interpreter_fingerprint``; only a probe that found torch is kept); never raises."""
    key = os.path.realpath(path)
    if key in _probe_cache:
        return _probe_cache[key]
    fingerprint = interpreter_fingerprint(path)
    kept = _stored_probes().get(fingerprint) if fingerprint else None
    if isinstance(kept, dict):
        _probe_cache[key] = Probe(kept.get("torch_version"), kept.get("problem"))
        return _probe_cache[key]
    try:
        done = run_code(path, PROBE_CODE, timeout_s)
    except subprocess.TimeoutExpired:
        probe = Probe(None, f"importing torch took over {timeout_s:g} s")
    except OSError as err:
        probe = Probe(None, f"cannot run it ({err.strerror or err.__class__.__name__})")
    else:
        version = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if done.returncode == 0 and version:
            probe = Probe(version, None)
        else:
            last = (done.stderr.strip().splitlines() or ["exit code " + str(done.returncode)])[-1]
            probe = Probe(None, last.strip())
        if fingerprint and probe.torch_version is not None:  # a failure is probed again: it may pass
            _store_probe(fingerprint, probe)
    _probe_cache[key] = probe
    return probe


def torch_missing(path: str, problem: str) -> HotkernelError:
    """The error for an interpreter that turned out not to import torch (``problem``: its last stderr line)."""
    return HotkernelError(
        f"{path} cannot import torch ({problem}); install torch there ({path} -m pip install torch) or {FIX_HINT}"
    )


def _resolve_explicit(value: str, root: Path | None, what: str) -> str:
    """An explicit interpreter: absolute, relative to the workspace root, or a name found on PATH."""
    expanded = os.path.expanduser(value.strip())
    if os.sep in expanded or (os.altsep and os.altsep in expanded):
        candidate = Path(expanded)
        if not candidate.is_absolute() and root is not None:
            candidate = root / candidate
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        raise HotkernelError(
            f"{what} {value!r} is not an executable file; point it at a python that has torch (e.g. .venv/bin/python)"
        )
    found = shutil.which(expanded)
    if found is None:
        raise HotkernelError(f"{what} {value!r} is not on PATH; give the full path of a python that has torch")
    return found


def _path_candidates() -> list[str]:
    """Every ``python``/``python3`` on PATH, in PATH order, each real file once."""
    seen: set[str] = set()
    found: list[str] = []
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory:
            continue
        for name in PATH_NAMES:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                real = os.path.realpath(candidate)
                if real not in seen:
                    seen.add(real)
                    found.append(candidate)
    return found


def find_python(
    manifest_python: str | None = None,
    *,
    root: Path | None = None,
    require_torch: bool = True,
    probe_explicit: bool = True,
) -> PythonChoice:
    """The interpreter kernels run in, and why. ``root`` resolves a relative ``manifest_python``.

    With ``require_torch`` an explicit choice without torch is an error naming the fix; PATH candidates
    without torch are skipped. ``probe_explicit=False`` returns an explicit choice without running it (its
    ``torch_version`` is None): for callers whose own first process imports torch and reports a missing one
    (``torch_missing``), so the probe's ``import torch`` (2-10 s) is not paid twice in a row.
    """
    env_value = os.environ.get(ENV_VAR, "").strip()
    if env_value.startswith("${"):  # a host that left a plugin option unexpanded (`${user_config.python}`)
        env_value = ""
    explicit: list[tuple[Source, str, str]] = []
    if env_value:
        explicit.append(("env", env_value, ENV_VAR))
    elif manifest_python:
        explicit.append(("manifest", manifest_python, "hotkernel.yaml defaults.python"))
    for source, value, what in explicit:
        path = _resolve_explicit(value, root, what)
        if not probe_explicit:
            return PythonChoice(path, source, None)
        probe = probe_python(path)
        if require_torch and probe.torch_version is None:
            raise torch_missing(f"{what} {path}", probe.problem or "no torch")
        return PythonChoice(path, source, probe.torch_version)
    tried: list[str] = []
    for candidate in _path_candidates():
        probe = probe_python(candidate)
        if probe.torch_version is not None:
            return PythonChoice(candidate, "path", probe.torch_version)
        tried.append(f"{candidate} ({probe.problem})")
    if not require_torch:
        first = _path_candidates()
        if first:
            return PythonChoice(first[0], "path", None)
    listing = "; tried " + ", ".join(tried) if tried else "; no python or python3 on PATH"
    raise HotkernelError(f"no Python with torch found: {FIX_HINT}{listing}")
