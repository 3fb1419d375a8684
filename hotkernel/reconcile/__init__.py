"""The reconciler (DVC's model): ``hotkernel.lock`` remembers what each record was made from; ``plan``
diffs it against the manifest and the files on disk; ``sync`` re-runs what is out of date.

``hotkernel.lock`` is JSON with sorted keys, written only by hotkernel and atomically::

    {"schema": 1, "targets": {"<name>": {"<device>": {"manifest": ..., "baseline_sha256": ...,
     "candidate_sha256": ..., "contract_sha256": ..., "device": ..., "record": "results/<name>/<ts>.json",
     "verdict": ...}}}}

``<device>`` is the GPU name for cuda targets and ``cpu`` for cpu targets.

"No CUDA" is decided with NVML (``pynvml``: no driver or no device means no CUDA GPU), not by importing torch
in the user's interpreter: it is cheap, needs no torch, and is what ``plan`` uses for the GPU name too. A user
interpreter whose torch lacks CUDA on a GPU machine is reported by the run itself, with its reason.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hotkernel.errors import HotkernelError
from hotkernel.results import Plan, PlanItem, SyncItem, SyncReport
from hotkernel.workspace import Workspace

LOCK_SCHEMA = 1
DEFAULT_ROUNDS = 7
CPU_DEVICE = "cpu"
NO_GPU = "no-gpu"
SyncProgress = Callable[[int, int, str], None]  # (runs done, runs planned, "<target>: <what>")

_AUTO: Any = object()


# ---------------------------------------------------------------- hashing and the GPU name


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: Path) -> str | None:
    """sha256 of a file's bytes, None when it does not exist."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def detect_gpu_name() -> str | None:
    """Name of the first NVIDIA GPU NVML sees (honours an integer CUDA_VISIBLE_DEVICES), None without one."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count < 1:
            return None
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        if visible == "" and "CUDA_VISIBLE_DEVICES" in os.environ:
            return None  # CUDA_VISIBLE_DEVICES="" hides every GPU
        index = int(visible) if visible.isdigit() and int(visible) < count else 0
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(index))
        return name.decode() if isinstance(name, bytes) else str(name)
    except Exception:
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


# ---------------------------------------------------------------- adapters to manifest.py and render.py


def load_workspace_manifest(ws: Workspace) -> Any:
    """``manifest.load_manifest`` on the workspace's hotkernel.yaml (its errors name the line and the fix)."""
    from hotkernel.manifest import load_manifest

    return load_manifest(ws.manifest)


def target_names(manifest: Any) -> list[str]:
    return sorted(manifest.targets)


def resolved(manifest: Any, name: str) -> dict[str, Any]:
    from hotkernel.manifest import resolved_target

    return resolved_target(manifest, name)


def manifest_fp(manifest: Any, name: str) -> str:
    """Fingerprint of a target's manifest entry (sha256 of its canonical render context)."""
    from hotkernel.manifest import manifest_fingerprint

    return manifest_fingerprint(manifest, name)


def expected_baseline_sha(context: dict[str, Any]) -> str:
    from hotkernel.render import expected_baseline

    return sha256_text(expected_baseline(context))


def current_contract_sha() -> str:
    from hotkernel.render import contract_sha256

    return contract_sha256()


def render(ws: Workspace, name: str, context: dict[str, Any]) -> Any:
    from hotkernel.render import render_target

    return render_target(ws, name, context)


# ---------------------------------------------------------------- the lock file


def read_lock(ws: Workspace) -> dict[str, Any]:
    """The parsed hotkernel.lock ({"schema": 1, "targets": {}} when there is none)."""
    if not ws.lock_file.is_file():
        return {"schema": LOCK_SCHEMA, "targets": {}}
    try:
        data = json.loads(ws.lock_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise HotkernelError(
            f"{ws.lock_file}: not valid JSON ({err}); it is written by hotkernel only: restore it with "
            "`git checkout -- hotkernel.lock`, or delete it to re-run every target"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("targets"), dict):
        raise HotkernelError(
            f"{ws.lock_file}: has no 'targets' mapping; restore it with `git checkout -- hotkernel.lock`, "
            "or delete it to re-run every target"
        )
    schema = data.get("schema", LOCK_SCHEMA)
    well_formed = isinstance(schema, int) and all(
        isinstance(entries, dict) and all(isinstance(e, dict) for e in entries.values())
        for entries in data["targets"].values()
    )
    if not well_formed:
        raise HotkernelError(
            f"{ws.lock_file}: not a hotkernel lock (schema must be an integer, targets a mapping of mappings); "
            "restore it with `git checkout -- hotkernel.lock`, or delete it to re-run every target"
        )
    if schema > LOCK_SCHEMA:
        raise HotkernelError(
            f"{ws.lock_file}: schema {data.get('schema')} is newer than this hotkernel understands "
            f"({LOCK_SCHEMA}): upgrade hotkernel"
        )
    return data


def write_lock(ws: Workspace, lock: dict[str, Any]) -> None:
    """Write hotkernel.lock atomically, sorted keys, stable formatting."""
    from hotkernel.record import atomic_write_text

    lock = {**lock, "schema": LOCK_SCHEMA}
    atomic_write_text(ws.lock_file, json.dumps(lock, indent=2, sort_keys=True) + "\n", overwrite=True)


# ---------------------------------------------------------------- plan


def target_state(ws: Workspace, context: dict[str, Any], manifest_fingerprint: str,
                 contract_sha: str) -> dict[str, Any]:
    """What the target would be recorded with now, and what is on disk."""
    target_dir = ws.targets_dir / context["name"]
    return {
        "name": context["name"],
        "manifest": manifest_fingerprint,
        "baseline_sha256": expected_baseline_sha(context),
        "contract_sha256": contract_sha,
        "candidate_sha256": sha256_file(target_dir / "candidate.py"),
        "baseline_on_disk": sha256_file(target_dir / "baseline.py"),
        "contract_on_disk": sha256_file(ws.contract_file),
        "sources_sha256": sources_sha(ws, context),
    }


def sources_sha(ws: Workspace, context: dict[str, Any]) -> str:
    """Fingerprint of the target's own source files (the folders of its ./file.py references)."""
    from hotkernel.runner import sources_digest

    return sources_digest(ws, context, trust_stat=True)


def device_key(context: dict[str, Any], gpu_name: str | None) -> str:
    """The lock's device key for a target: 'cpu' for cpu targets, else the GPU name (or 'no-gpu')."""
    if str(context.get("device", "cuda")) == CPU_DEVICE:
        return CPU_DEVICE
    return gpu_name or NO_GPU


def latest_entry(entries: dict[str, Any]) -> dict[str, Any] | None:
    """The entry with the newest record path (record names sort by UTC time)."""
    if not entries:
        return None
    return max(entries.values(), key=lambda e: (Path(str(e.get("record", ""))).name, str(e.get("device"))))


def out_of_date_reasons(ws: Workspace, state: dict[str, Any], entries: dict[str, Any],
                        device: str) -> list[str]:
    """Why a target must be re-run, in a fixed order; [] when it is up to date."""
    if not entries:
        return ["new"]
    reasons: list[str] = []
    entry = entries.get(device)
    if entry is None and device != NO_GPU:
        reasons.append(f"no record on this GPU ({device})")
    entry = entry or latest_entry(entries) or {}
    if entry.get("manifest") != state["manifest"]:
        reasons.append("manifest changed")
    if entry.get("contract_sha256") != state["contract_sha256"]:
        reasons.append("contract changed")
    elif entry.get("baseline_sha256") != state["baseline_sha256"] and "manifest changed" not in reasons:
        reasons.append("templates changed")
    if entry.get("sources_sha256") != state["sources_sha256"]:
        reasons.append("baseline source changed")
    if state["candidate_sha256"] is None:
        reasons.append("candidate not rendered")
    elif entry.get("candidate_sha256") != state["candidate_sha256"]:
        reasons.append("candidate changed")
    baseline = baseline_file_state(ws, state, entries)
    if baseline == "missing":
        reasons.append("baseline not rendered")
    elif baseline == "edited":
        reasons.append("baseline edited (verify will say invalid; delete it to re-render)")
    contract = contract_file_state(state, entries)
    if contract == "missing":
        reasons.append("contract not rendered")
    elif contract == "edited":
        reasons.append("contract edited (verify will say invalid; delete it to re-render)")
    record = entry.get("record")
    if not record or not (ws.root / str(record)).is_file():
        reasons.append("record missing")
    elif record_invalidated(ws.root / str(record)):
        reasons.append("record invalidated")
    return reasons


def record_invalidated(path: Path) -> bool:
    """True when the record file carries an ``invalidated`` mark (``hotkernel invalidate``)."""
    try:
        return bool(json.loads(path.read_text(encoding="utf-8")).get("invalidated"))
    except (OSError, ValueError, AttributeError):
        return False


def baseline_file_state(ws: Workspace, state: dict[str, Any], entries: dict[str, Any]) -> str:
    """'ok', 'missing', 'stale' (an untouched older render) or 'edited' for targets/<name>/baseline.py."""
    on_disk = state["baseline_on_disk"]
    if on_disk is None:
        return "missing"
    if on_disk == state["baseline_sha256"]:
        return "ok"
    if on_disk in {e.get("baseline_sha256") for e in entries.values()}:
        return "stale"
    return "stale" if is_pristine_render(ws.targets_dir / state["name"] / "baseline.py") else "edited"


def is_pristine_render(baseline: Path) -> bool:
    """True when ``baseline`` is exactly what its own embedded SPEC renders (an untouched older render)."""
    from hotkernel.render import contract_module, expected_baseline

    try:
        spec = contract_module().read_spec(str(baseline))
        return sha256_text(expected_baseline(spec)) == sha256_file(baseline)
    except Exception:  # unreadable SPEC, or a SPEC the current templates cannot render: not pristine
        return False


def contract_file_state(state: dict[str, Any], entries: dict[str, Any]) -> str:
    """'ok', 'missing', 'stale' (a contract an earlier record used) or 'edited' for targets/hk_contract.py."""
    on_disk = state["contract_on_disk"]
    if on_disk is None:
        return "missing"
    if on_disk == state["contract_sha256"]:
        return "ok"
    return "stale" if on_disk in {e.get("contract_sha256") for e in entries.values()} else "edited"


def plan(ws: Workspace, *, names: list[str] | None = None, gpu_name: Any = _AUTO,
         manifest: Any = None) -> Plan:
    """What ``sync`` would run and why: a pure function of the manifest, the files, the lock and the GPU name.

    ``gpu_name``: the current GPU's name, None for a machine without one; by default asked from NVML.
    """
    manifest = manifest if manifest is not None else load_workspace_manifest(ws)
    selected = select_names(manifest, names)
    lock = read_lock(ws)
    if gpu_name is _AUTO:
        gpu_name = detect_gpu_name()
    contract_sha = current_contract_sha()
    items: list[PlanItem] = []
    up_to_date: list[str] = []
    notes: list[str] = []
    compared_without_gpu = False
    for name in selected:
        context = resolved(manifest, name)
        state = target_state(ws, context, manifest_fp(manifest, name), contract_sha)
        device = device_key(context, gpu_name)
        entries = lock["targets"].get(name) or {}
        reasons = out_of_date_reasons(ws, state, entries, device)
        kind = CPU_DEVICE if device == CPU_DEVICE else "cuda"
        compared_without_gpu = compared_without_gpu or (device == NO_GPU and bool(entries))
        if reasons:
            action = "create" if reasons == ["new"] else "update"
            items.append(PlanItem(name=name, action=action, reasons=reasons, device_kind=kind))
        else:
            up_to_date.append(name)
    if compared_without_gpu:
        notes.append("no NVIDIA GPU here: cuda targets were compared with their latest record on any GPU")
    return Plan(device=gpu_name or NO_GPU, items=items, up_to_date=up_to_date, notes=notes)


def select_names(manifest: Any, names: list[str] | None) -> list[str]:
    """The targets to consider: all (sorted), or ``names`` after checking each is in the manifest."""
    known = target_names(manifest)
    if not names:
        return known
    unknown = [n for n in names if n not in manifest.targets]
    if unknown:
        raise HotkernelError(
            f"hotkernel.yaml: no target named {unknown[0]!r} (targets: {', '.join(known) or 'none'}); "
            "add it with `hotkernel new` or check the spelling"
        )
    return sorted(dict.fromkeys(names))


def plan_lines(p: Plan) -> list[str]:
    """terraform-style lines: ``+ name: new``, ``~ name: candidate changed``, then a summary line."""
    lines = [f"{'+' if i.action == 'create' else '~'} {i.name}: {', '.join(i.reasons)}" for i in p.items]
    lines += [f"  note: {note}" for note in p.notes]
    adds = sum(1 for i in p.items if i.action == "create")
    changes = len(p.items) - adds
    if not p.items:
        lines.append(f"No changes. {len(p.up_to_date)} target(s) up to date.")
    else:
        lines.append(f"Plan: {adds} to add, {changes} to change, {len(p.up_to_date)} up to date.")
    return lines


# ---------------------------------------------------------------- the workspace lock


def lock_holder(ws: Workspace) -> str:
    """Who holds the workspace lock, from the holder-info file, in one line."""
    info_path = ws.state_dir / "lock.info"
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return "another hotkernel process (no holder info)"
    return (
        f"pid {info.get('pid')} on {info.get('host')} (user {info.get('user')}, `{info.get('command')}`, "
        f"since {info.get('started')})"
    )


_HELD_BY_THIS_PROCESS: set[Path] = set()  # workspaces whose lock this process holds (sync -> record -> lock)


@contextlib.contextmanager
def workspace_lock(ws: Workspace, *, wait_s: float = 0.0, command: str = "hotkernel sync") -> Iterator[None]:
    """Hold ``.hotkernel/lock`` (an OS file lock) for the duration; refuse or wait ``wait_s`` when taken.

    Re-entrant within one process: a ``record`` inside a ``sync`` does not wait for its own sync.
    """
    root = ws.root.resolve()
    if root in _HELD_BY_THIS_PROCESS:
        yield
        return
    from filelock import FileLock, Timeout

    ws.state_dir.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(ws.state_dir / "lock"))
    try:
        lock.acquire(timeout=max(0.0, wait_s), poll_interval=0.1)
    except Timeout:
        raise HotkernelError(
            f"{ws.state_dir / 'lock'}: the workspace is locked by {lock_holder(ws)}; wait for it to finish "
            "or pass --wait SECONDS"
        ) from None
    info_path = ws.state_dir / "lock.info"
    try:
        from hotkernel.record import atomic_write_text

        info = {
            "pid": os.getpid(), "host": socket.gethostname(), "user": _user(), "command": command,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        atomic_write_text(info_path, json.dumps(info, sort_keys=True) + "\n", overwrite=True)
        _HELD_BY_THIS_PROCESS.add(root)
        yield
    finally:
        _HELD_BY_THIS_PROCESS.discard(root)
        with contextlib.suppress(OSError):
            info_path.unlink()
        lock.release()


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


# ---------------------------------------------------------------- sync


def candidate_who(candidate: Path) -> str | None:
    """The candidate's own module-level ``WHO = "..."`` (read with ast, never imported), if it has one."""
    import ast

    try:
        tree = ast.parse(candidate.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "WHO" and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str) and node.value.value.strip()):
            return " ".join(node.value.value.split())
    return None


def default_who(ws: Workspace) -> str:
    """Who a sync records as author when the candidate declares no ``WHO``: $HOTKERNEL_WHO, else git's
    user.name, else 'unknown'."""
    who = os.environ.get("HOTKERNEL_WHO", "").strip()
    if who:
        return who
    from hotkernel.record import _run

    name = _run(["git", "-C", str(ws.root), "config", "user.name"])
    return f"{name} (via hotkernel sync)" if name else "unknown (recorded by hotkernel sync)"


def manifest_rounds(manifest: Any) -> int:
    """``defaults.n`` from the manifest, else 7."""
    defaults = getattr(manifest, "defaults", None)
    value = getattr(defaults, "n", None) if defaults is not None else None
    return int(value) if isinstance(value, int) and value > 0 else DEFAULT_ROUNDS


def needs_render(ws: Workspace, state: dict[str, Any], entries: dict[str, Any]) -> bool:
    """Render when a file is missing, or stale but untouched (an older render hotkernel itself made).

    A baseline or contract that is neither was edited by hand: it is left alone, and the runner's hash
    check makes the verify ``invalid`` (reason names the file). Delete it to have sync render it again.
    """
    if state["candidate_sha256"] is None:
        return True
    files = (baseline_file_state(ws, state, entries), contract_file_state(state, entries))
    return any(f in ("missing", "stale") for f in files)


def sync(
    ws: Workspace,
    names: list[str] | None = None,
    *,
    check: bool = False,
    from_scratch: bool = False,
    n: int | None = None,
    wait_s: float = 0.0,
    who: str | None = None,
    python: str | None = None,
    timeout_s: float | None = None,
    progress: SyncProgress | None = None,
    gpu_name: Any = _AUTO,
) -> SyncReport:
    """Render what is missing, then verify and record every out-of-date target (all with ``from_scratch``).

    ``check``: plan only, run nothing, take no lock. A failing target is reported and the others go on.
    """
    manifest = load_workspace_manifest(ws)  # a bad manifest stops here: nothing written
    if gpu_name is _AUTO:
        gpu_name = detect_gpu_name()
    first_plan = plan(ws, names=names, gpu_name=gpu_name, manifest=manifest)
    if check:
        return SyncReport(check=True, plan=first_plan, items=[])
    rounds = n if n is not None else manifest_rounds(manifest)
    if timeout_s is None:
        timeout_s = getattr(getattr(manifest, "defaults", None), "timeout_s", None)
    if rounds < 1:
        raise HotkernelError(f"sync: -n must be >= 1 (got {rounds})")
    command = "hotkernel sync " + " ".join(names or [])
    with workspace_lock(ws, wait_s=wait_s, command=command.strip()):
        current = plan(ws, names=names, gpu_name=gpu_name, manifest=manifest)  # state may have moved
        pending = {i.name: i for i in current.items}
        selected = select_names(manifest, names)
        fallback_who = who or default_who(ws)
        to_run = [name for name in selected if name in pending or from_scratch]
        counter = _RunCounter(progress, total=2 * rounds * len(to_run))
        items: list[SyncItem] = []
        for name in selected:
            if name not in to_run:
                items.append(SyncItem(name=name, status="up to date"))
                continue
            reasons = pending[name].reasons if name in pending else ["from scratch"]
            items.append(_sync_target(ws, manifest, name, reasons, rounds=rounds, who=who,
                                      fallback_who=fallback_who,
                                      python=python, timeout_s=timeout_s, counter=counter,
                                      gpu_name=gpu_name))
            counter.finish_target(2 * rounds)
        return SyncReport(check=False, plan=current, items=items)


class _RunCounter:
    """Turns per-target verify progress into whole-sync progress: (runs done, runs planned, message)."""

    def __init__(self, progress: SyncProgress | None, total: int) -> None:
        self.progress, self.total, self.offset = progress, total, 0

    def say(self, name: str, message: str, done: int = 0) -> None:
        if self.progress is not None:
            self.progress(self.offset + done, self.total, f"{name}: {message}")

    def finish_target(self, runs: int) -> None:
        self.offset += runs


def _sync_target(ws: Workspace, manifest: Any, name: str, reasons: list[str], *, rounds: int,
                 who: str | None, fallback_who: str, python: str | None, timeout_s: float | None,
                 counter: _RunCounter, gpu_name: str | None) -> SyncItem:
    """Render, verify and record one target; every anticipated failure becomes a ``failed`` item."""
    from hotkernel.record import record
    from hotkernel.verify import verify

    def say(message: str, done: int = 0) -> None:
        counter.say(name, message, done)

    try:
        context = resolved(manifest, name)
        device = device_key(context, gpu_name)
        lock = read_lock(ws)
        entries = lock["targets"].get(name) or {}
        contract_sha = current_contract_sha()
        state = target_state(ws, context, manifest_fp(manifest, name), contract_sha)
        if needs_render(ws, state, entries):  # rendering needs no GPU: a skipped target gets its files too
            say("render")
            render(ws, name, context)
            state = target_state(ws, context, state["manifest"], contract_sha)
        if device == NO_GPU:
            say("skipped: no CUDA GPU")
            return SyncItem(name=name, status="skipped",
                            reason="no CUDA GPU: NVML found no NVIDIA GPU on this machine (cuda target)")
        target_dir = ws.targets_dir / name
        say("verify")
        kwargs: dict[str, Any] = {"n": rounds, "python": python,
                                  "progress": lambda done, _total, msg: say(msg, done)}
        if timeout_s is not None:
            kwargs["timeout_s"] = timeout_s
        result = verify(ws, target_dir / "baseline.py", target_dir / "candidate.py", **kwargs)
        after = sha256_file(target_dir / "candidate.py")
        if after != state["candidate_sha256"]:
            return SyncItem(name=name, status="failed", verdict=None,
                            reason="candidate changed during sync: run `hotkernel sync` again")
        say(f"record ({result.verdict})")
        fingerprint = {k: state[k] for k in ("manifest", "baseline_sha256", "candidate_sha256",
                                             "contract_sha256", "sources_sha256")}
        fingerprint["device"] = device
        note = f"hotkernel sync: {', '.join(reasons)}"
        who = who or candidate_who(target_dir / "candidate.py") or fallback_who  # read after rendering
        rec = record(ws, name, result, note=note, who=who, python=result.python, fingerprint=fingerprint,
                     device_kind="cpu" if device == CPU_DEVICE else "cuda")
        if result.verdict != "invalid":  # an invalid run measured nothing: the target stays out of date
            lock = read_lock(ws)
            lock["targets"].setdefault(name, {})[device] = {
                **fingerprint, "record": rec.path, "verdict": result.verdict,
            }
            write_lock(ws, lock)
        say(f"done: {result.verdict}", 2 * rounds)
        return SyncItem(name=name, status="recorded", verdict=result.verdict, speedup=rec.speedup,
                        record=rec.path, beats_best=rec.beats_best, reason=result.reason)
    except HotkernelError as err:
        say(f"failed: {err}")
        return SyncItem(name=name, status="failed", reason=str(err))
    except Exception as err:  # a failing target is reported; the others go on
        say(f"failed: {type(err).__name__}: {err}")
        return SyncItem(name=name, status="failed", reason=f"{type(err).__name__}: {err}")


def check_exit_code(report: SyncReport) -> int:
    """``sync --check``: 0 up to date, 2 out of date."""
    return 2 if report.plan.items else 0


def keep_in_lock(ws: Workspace, target: str, record_path: str, verify_result: Any, device: str) -> bool:
    """A record that beats the best makes its candidate the kept one: point the lock at it.

    Only when the candidate on disk is the one that was verified and the target's other inputs (manifest
    entry, rendered baseline, contract) are what the lock would record now; else the lock is left alone and
    ``plan`` keeps saying what is out of date. Returns whether the lock changed.
    """
    manifest = load_workspace_manifest(ws)
    if target not in manifest.targets:
        return False
    context = resolved(manifest, target)
    state = target_state(ws, context, manifest_fp(manifest, target), current_contract_sha())
    verified = getattr(getattr(verify_result, "candidate", None), "sha256", None)
    if not verified or verified != state["candidate_sha256"]:
        return False
    if getattr(getattr(verify_result, "baseline", None), "sha256", None) != state["baseline_sha256"]:
        return False  # the verify ran a baseline rendered from an older manifest entry
    on_disk = (state["baseline_on_disk"], state["contract_on_disk"])
    if on_disk != (state["baseline_sha256"], state["contract_sha256"]):
        return False
    key = CPU_DEVICE if str(context.get("device", "cuda")) == CPU_DEVICE else device
    parts = ("manifest", "baseline_sha256", "candidate_sha256", "contract_sha256", "sources_sha256")
    fingerprint = {k: state[k] for k in parts}
    with workspace_lock(ws, wait_s=60.0, command=f"hotkernel record {target}"):  # not while a sync writes
        lock = read_lock(ws)
        lock["targets"].setdefault(target, {})[key] = {
            **fingerprint, "device": key, "record": record_path, "verdict": verify_result.verdict,
        }
        write_lock(ws, lock)
    return True
