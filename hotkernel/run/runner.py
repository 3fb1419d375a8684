"""Tool side of a run: hash checks, device-idle check, the contract's orchestrator, one ``RunOutcome``.

The tool never imports torch: the worker and the judge run in the user's interpreter (``python``), started
from hotkernel's own copy of the contract; the workspace copy (``targets/hk_contract.py``, imported by the
scripts) and the generated ``baseline.py`` are hash-checked before and after every run. A crash, hang, missing
or doubled protocol line comes back as a status and a ``"<check>: <detail>"`` reason, never a traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Literal, NoReturn

from pydantic import BaseModel, Field

from hotkernel._util.fs import sha256_by_stat
from hotkernel._util.nvml import foreign_compute_pids
from hotkernel._util.procs import TerminationRaises
from hotkernel.errors import HotkernelError
from hotkernel.manifest import load_manifest, resolved_target
from hotkernel.run import render
from hotkernel.workspace.interpreter import torch_missing
from hotkernel.workspace.paths import Workspace

IDLE_WAIT_S = 10.0  # how long a run waits for foreign GPU processes to finish before it is refused
IDLE_POLL_S = 0.5
STDERR_TAIL_CHARS = 4000
# Warm workers kept for cuda targets (a worker's imports take 2.7-3.8 s on the H200 while others import beside it).
# verify -n 7 of rmsnorm: 4 workers 17.1 s warm CLI, 16.4 s in-process; 6 workers 18.7 s and 16.2 s, fewer waits
# for an import but slower runs, measured on the H200 (docs/performance.md).
PRESTART_POOL_CUDA = 4
# torch.compile's caches for the user's interpreter, per workspace (under .hotkernel/, never hashed as a workspace
# change): the first run of a compiled script fills them, every later run (a fresh process) loads from them.
COMPILE_CACHE_DIR = "inductor"
COMPILE_CACHE_ENV = {"TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1"}


# What the user set before this process touched them: a process that serves several workspaces (the MCP server)
# sets the variables for each in turn, and one workspace's cache directory must not pass for the user's choice.
_USER_COMPILE_ENV = {key: os.environ.get(key) for key in ("TORCHINDUCTOR_CACHE_DIR", *COMPILE_CACHE_ENV)}


def compile_cache_env(ws: Workspace) -> dict[str, str]:
    """The environment that points the user's interpreter at the workspace's compile cache (a value the user
    set before this process started wins)."""
    wanted = {"TORCHINDUCTOR_CACHE_DIR": str(ws.state_dir / COMPILE_CACHE_DIR), **COMPILE_CACHE_ENV}
    return {key: _USER_COMPILE_ENV.get(key) or value for key, value in wanted.items()}


def use_compile_cache(ws: Workspace) -> None:
    """Set ``compile_cache_env`` in this process's environment, which the judge and every worker inherit (the
    contract starts them with a copy of ``os.environ``)."""
    env = compile_cache_env(ws)
    Path(env["TORCHINDUCTOR_CACHE_DIR"]).mkdir(parents=True, exist_ok=True)
    os.environ.update(env)


class RunOutcome(BaseModel):
    """One run of one script, as the contract judged it."""

    status: Literal["ok", "incorrect", "invalid"] = Field(description="the contract's verdict on this run")
    reason: str | None = Field(default=None, description="'<check_name>: <detail>' whenever status is not ok")
    ms: float | None = Field(default=None, description="headline time per call, milliseconds (ok runs)")
    run: dict[str, Any] | None = Field(default=None, description="the run's JSON line (protocol 2)")
    stderr_tail: str = Field(default="", description="last lines the worker wrote to stdout/stderr")
    wall_s: float = Field(description="wall-clock seconds of the whole run, checks included")
    script: str = Field(description="the script that ran")
    role: str = Field(description="'baseline' or 'candidate'")

    @property
    def data(self) -> dict[str, Any] | None:
        """The run JSON line (alias of ``run``)."""
        return self.run


def resolved_from_manifest(ws: Workspace, name: str) -> dict[str, Any] | None:
    """The manifest's resolved entry for ``name``, or None when the workspace has no such target."""
    if not ws.manifest.is_file():
        return None

    manifest = load_manifest(ws.manifest)
    if name not in manifest.targets:
        return None
    return resolved_target(manifest, name)


def source_files(ws: Workspace, resolved: dict[str, Any]) -> list[Path]:
    """The workspace files a target's own functions come from: every ``*.py`` in the folders of its
    ``./path.py:function`` references and problem files (``from``, ``reference``, ``derive``; a GPU MODE task's
    suite folder too, for its ``utils.py``), so local imports count too.

    A run must not change them: a candidate that rewrote the baseline's source would slow the baseline down.
    ``module:function`` references outside the workspace are not hashed (see docs/verdicts.md, honest limits).
    """
    folders: set[Path] = set()
    for key in ("from", "reference", "derive"):
        ref = resolved.get(key)
        if not isinstance(ref, str):
            continue
        problem_file = ref.endswith(".py") and ":" not in ref  # a module problem (docs/suites.md)
        path = ref if problem_file else ref.rsplit(":", 1)[0] if ":" in ref else ""
        if not path.endswith(".py"):
            continue
        try:
            folder = ws.inside(path, what=key).parent
        except HotkernelError:
            continue
        folders.add(folder)
        inside = folder != ws.root.resolve() and ws.root.resolve() in folder.parents
        if problem_file and inside and (folder.parent / "utils.py").is_file():  # a GPU MODE task: its suite's utils
            folders.add(folder.parent)
    root = ws.root.resolve()
    inside = str(root) + os.sep
    skip = tuple(str(folder.resolve()) + os.sep for folder in (ws.targets_dir, ws.results_dir, ws.state_dir))
    files: set[Path] = set()
    for folder in folders:  # the workspace root itself: its own *.py only, not the whole tree below it
        for path in folder.glob("*.py") if folder == root else folder.rglob("*.py"):
            text = str(path)  # string tests: a KernelBench level's folder holds 100 files, hashed twice a run
            if text.startswith(skip):
                continue
            folders_below_root = text[len(inside) :].split(os.sep)[:-1]
            if not any(part.startswith(".") or part == "__pycache__" for part in folders_below_root):
                files.add(path)
    return sorted(files)


def source_hashes(ws: Workspace, resolved: dict[str, Any]) -> dict[str, str]:
    """{workspace-relative path: sha256} of the target's source files (``sha256_by_stat``: hashed again only
    when a file's stat changed)."""
    root = ws.root.resolve()
    return {path.relative_to(root).as_posix(): sha256_by_stat(path) or "missing" for path in source_files(ws, resolved)}


def sources_digest(ws: Workspace, resolved: dict[str, Any]) -> str:
    """One sha256 over the target's source files (paths and contents): a fingerprint part of the lock."""
    hashes = source_hashes(ws, resolved)
    text = "\n".join(f"{path}\0{sha}" for path, sha in sorted(hashes.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def check_workspace_integrity(ws: Workspace, name: str, resolved: dict[str, Any] | None = None) -> str | None:
    """None when ``targets/hk_contract.py`` is hotkernel's contract and ``targets/<name>/baseline.py`` is
    exactly what the manifest renders; else the reason (`contract_unchanged: ...`, `baseline_unchanged: ...`).
    """
    contract = ws.contract_file
    if sha256_by_stat(contract) != render.contract_sha256():
        if not contract.is_file():
            return "contract_unchanged: targets/hk_contract.py is missing; run `hotkernel sync` to render it"
        # sync re-renders a copy that an earlier record used; any other copy it leaves alone (an edit shows)
        return (
            "contract_unchanged: targets/hk_contract.py differs from hotkernel's contract (edited, or rendered by "
            "another hotkernel that no record used); delete it and run `hotkernel sync` to render it again"
        )
    baseline = ws.target_dir(name) / "baseline.py"
    if not baseline.is_file():
        return f"baseline_unchanged: targets/{name}/baseline.py is missing; run `hotkernel sync` to render it"
    if resolved is None:
        resolved = resolved_from_manifest(ws, name)
    if resolved is None:  # no manifest entry: at least the file must be what its own SPEC renders
        contract = render.contract_module()
        try:
            resolved = contract.read_spec(str(baseline))
        except (OSError, ValueError, SyntaxError) as err:
            return f"baseline_unchanged: targets/{name}/baseline.py has no readable SPEC ({err})"
    expected = render.expected_baseline_sha256(resolved)
    if sha256_by_stat(baseline) != expected:
        return (
            f"baseline_unchanged: targets/{name}/baseline.py differs from what hotkernel.yaml renders (edited, "
            "or rendered by another hotkernel that no record used); delete it and run `hotkernel sync` to render "
            "it again"
        )
    return None


STATE_DIR_HASHED = ("tmp", "lock", "lock.info")  # under .hotkernel/: caches and the lock (not tool outputs)


def workspace_files(ws: Workspace) -> list[Path]:
    """What judges a run or records it, besides the target's sources: the manifest, the lock, LEADERBOARD.md,
    everything under ``results/`` and ``targets/`` (rendered files, the contract, the candidate itself) and
    ``.hotkernel/`` caches. A run must leave every one of them as it found it (``__pycache__`` aside). A symlink
    counts as itself (a folder it points to is not entered)."""
    return sorted({Path(path) for path in _workspace_paths(ws)})


def _workspace_paths(ws: Workspace) -> list[str]:
    files = [str(ws.manifest), str(ws.lock_file), str(ws.leaderboard)]
    for folder in (ws.results_dir, ws.targets_dir, *(ws.state_dir / name for name in STATE_DIR_HASHED)):
        if folder.is_file():
            files.append(str(folder))
        elif folder.is_dir():
            _walk_files(str(folder), files)
    return files


def _walk_files(folder: str, found: list[str]) -> None:
    """Append every file and symlink below ``folder`` (``os.scandir``: one system call per folder, which
    ``Path.rglob`` with a stat per path is not; a 100-target workspace is walked twice a run)."""
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_symlink() or entry.is_file(follow_symlinks=False):
                found.append(entry.path)
            elif entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                _walk_files(entry.path, found)


def workspace_hashes(ws: Workspace) -> dict[str, str]:
    """{workspace-relative path: sha256 (or the link target for symlinks)} of ``workspace_files``
    (``sha256_by_stat``: a file is read again only when its stat changed, so a run's two calls cost little more
    than a walk and a stat per file)."""
    root = str(ws.root) + os.sep
    hashes = {}
    for path in _workspace_paths(ws):
        rel = path[len(root) :] if path.startswith(root) else path
        if os.path.islink(path):
            hashes[rel] = f"link:{os.readlink(path)}"
        else:
            hashes[rel] = sha256_by_stat(path) or "missing"
    return hashes


def workspace_change(before: dict[str, str], after: dict[str, str]) -> str | None:
    """``workspace_unchanged: <file>`` naming what a run added, removed or changed; None when identical."""
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    if not changed:
        return None
    more = f" and {len(changed) - 3} more" if len(changed) > 3 else ""
    return (
        f"workspace_unchanged: {', '.join(changed[:3])}{more} changed during the run (the candidate must not "
        "write the workspace); restore it (git checkout / hotkernel sync) and verify again"
    )


def device_idle_problem(own_pids: set[int], wait_s: float = IDLE_WAIT_S) -> str | None:
    """``device_idle: ...`` when other processes use this run's GPU for ``wait_s``; None when idle or no GPU.

    Only the GPUs CUDA_VISIBLE_DEVICES leaves visible count: a sync lane pinned to one GPU ignores the others.
    """
    deadline = time.monotonic() + wait_s
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES")
    while True:
        foreign = foreign_compute_pids(own_pids | {os.getpid()})
        if not foreign:
            return None
        if time.monotonic() >= deadline:
            which = f"the GPU (CUDA_VISIBLE_DEVICES={pinned})" if pinned is not None else "the GPU"
            return (
                f"device_idle: {len(foreign)} other process(es) use {which} (pids "
                f"{', '.join(map(str, sorted(foreign)[:5]))}); stop them and run again"
            )
        time.sleep(IDLE_POLL_S)


TORCH_IMPORT_FAILED = re.compile(r"(ModuleNotFoundError|ImportError): .*torch.*")


class JudgeProcess:
    """One judge for a whole bench/verify, plus one pre-started worker so the next run's interpreter and
    ``import torch`` overlap with the judging of the previous run. Use as a context manager."""

    def __init__(self, ws: Workspace, *, python: str, prestart: bool = True, compile_warm: bool = False) -> None:
        self.ws = ws
        self.python = str(python)
        self.prestart_enabled = prestart
        self.compile_warm = compile_warm  # workers from a server that warmed torch.compile (CPU targets only)
        self.contract = render.contract_module()
        self.contract_file = str(render.contract_path())
        self.client: Any = None
        self.spares: list[Any] = []
        self.signals = TerminationRaises()

    def want_compile_warm(self, compile_warm: bool) -> None:
        """Workers of the other kind of fork server go: both sides of the next verify get the same kind."""
        if compile_warm != self.compile_warm:
            self.compile_warm = compile_warm
            while self.spares:
                self.spares.pop().close()

    def __enter__(self) -> JudgeProcess:
        self.signals.__enter__()  # SIGTERM/SIGHUP unwind through close(): no process of the run survives
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.close()
        finally:
            self.signals.__exit__()

    def start(self) -> None:
        use_compile_cache(self.ws)
        if self.client is None or self.client.proc.poll() is not None:
            if self.client is not None:
                self.client.close()
            try:
                self.client = self.contract.Judge(self.python, self.contract_file, self.compile_warm)
            except OSError as err:  # its fork server did not start: its last line says why
                lines = str(err).strip().splitlines()
                self.refuse("cannot start the judge", lines[-1] if lines else repr(err))
        if self.prestart_enabled and not self.spares:
            self.prestart()

    def ensure_ready(self) -> None:
        """Wait until the judge has imported torch (the pre-started worker imports it meanwhile); a python
        without torch is a one-line error with the fix, raised before any run."""
        self.start()
        if self.client.wait_ready():
            return
        lines = self.client.log_tail().strip().splitlines()
        self.refuse(
            "the judge did not start", lines[-1].strip() if lines else f"it exited with code {self.client.proc.poll()}"
        )

    def refuse(self, what: str, problem: str) -> NoReturn:
        """The one-line error for a judge that could not start: ``torch_missing`` when torch is what failed to
        import, else ``problem`` with the setting to check."""
        missing = TORCH_IMPORT_FAILED.search(problem)
        if missing:
            raise torch_missing(self.python, missing.group(0))
        raise HotkernelError(f"{what} with {self.python}: {problem}; check HOTKERNEL_PYTHON")

    def prestart(self, pool: int = 1) -> None:
        """Start workers until ``pool`` wait warm (each imports torch, then waits for its job)."""
        while len(self.spares) < pool:
            try:
                self.spares.append(self.contract.Worker(self.python, self.contract_file, self.compile_warm))
            except OSError:
                return

    def take_worker(self) -> Any:
        """The oldest pre-started worker that is still alive, else a fresh one."""
        while self.spares:
            worker = self.spares.pop(0)
            if worker.proc.poll() is None:
                return worker
            worker.close()
        return self.contract.Worker(self.python, self.contract_file, self.compile_warm)

    def own_pids(self) -> set[int]:
        """The judge, the spare workers and the retired runs still exiting (their GPU use is ours)."""
        mine = {item.proc.pid for item in (self.client, *self.spares) if item is not None}
        return mine | {pid for pid, _ in self.contract.exiting_processes()}

    def healthy(self) -> bool:
        """The judge process is up, said it is ready, and has no reply left unread (a verify after this one
        would read a stale answer)."""
        client = self.client
        return client is not None and client.proc.poll() is None and client.ready_seen and not client.lines

    def close(self) -> None:
        while self.spares:
            self.spares.pop().close()
        if self.client is not None:
            self.client.close()
            self.client = None
        self.contract.reap_retired()


class WarmJudge:
    """One judge, with its pre-started workers, kept across the verifies of a sync lane (``take`` / ``done`` /
    ``close``). Each timed run still starts in a fresh worker with its own checks; the judge never imports a
    candidate. A judge is reused only while its process is alive with no reply left unread, only after a verify
    whose every run it judged ok, and only while the source files it imported functions from are unchanged;
    else it is closed and a fresh one started."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.judge: JudgeProcess | None = None
        self.seen: dict[str, str] = {}  # source file -> sha256 when the kept judge first used it
        self.starts = 0  # judges started (one per lane while every verify is clean)

    def take(self, python: str, resolved: dict[str, Any] | None) -> JudgeProcess:
        """A ready judge for the next verify with ``python`` of the target ``resolved`` describes."""
        sources = source_hashes(self.ws, resolved) if resolved else {}
        judge = self.judge
        stale = any(self.seen.get(path, sha) != sha for path, sha in sources.items())
        if judge is not None and (stale or judge.python != str(python) or not judge.healthy()):
            self.close()
        if self.judge is None:
            self.judge = JudgeProcess(self.ws, python=python)
            self.starts += 1
            self.judge.ensure_ready()
        self.seen = {**sources, **self.seen}
        return self.judge

    def done(self, clean: bool) -> None:
        """After a verify: keep the judge when ``clean`` (every run judged ok), else close it."""
        if not clean:
            self.close()

    def pid(self) -> int | None:
        client = self.judge.client if self.judge is not None else None
        return client.proc.pid if client is not None else None

    def close(self) -> None:
        if self.judge is not None:
            judge, self.judge = self.judge, None
            self.seen = {}
            judge.close()


def _target_name(ws: Workspace, script: Path) -> str:
    targets = ws.targets_dir.resolve()
    if script.parent.parent != targets:
        raise HotkernelError(
            f"{script} is not a rendered target script: give targets/NAME/baseline.py or "
            "targets/NAME/candidate.py (run `hotkernel sync` to render them)"
        )
    return script.parent.name


def run_script(
    ws: Workspace,
    script: str | os.PathLike[str],
    *,
    python: str,
    role: str | None = None,
    timeout_s: float = 600.0,
    ceiling_gbps: float | None = None,
    judge: JudgeProcess | None = None,
    check_idle: bool = True,
    resolved: dict[str, Any] | None = None,
    cancel: threading.Event | None = None,
    rotation: list[int] | None = None,
) -> RunOutcome:
    """Run ``script`` once under the contract with the user's ``python``; hashes checked before and after.
    ``cancel``: once set (a sync's budget, an MCP cancel), the run in flight is killed with everything it started,
    its judge too, and comes back ``invalid`` with a reason starting ``cancelled:``, nothing measured.
    ``rotation``: the input sets per shape to use (a verify passes its first run's to the later ones)."""
    started = time.monotonic()
    path = ws.inside(script, what="script")
    if not path.is_file():
        raise HotkernelError(f"script {script} does not exist: run `hotkernel sync` to render the target")
    name = _target_name(ws, path)
    role = role or ("baseline" if path.name == "baseline.py" else "candidate")

    def outcome(status: str, reason: str | None, run: dict[str, Any] | None = None, tail: str = "") -> RunOutcome:
        ms = run.get("ms") if run and status == "ok" else None
        return RunOutcome(
            status=status,
            reason=reason,
            ms=ms,
            run=run,
            stderr_tail=tail[-STDERR_TAIL_CHARS:],
            wall_s=round(time.monotonic() - started, 3),
            script=str(path),
            role=role,
        )

    problem = check_workspace_integrity(ws, name, resolved)
    if problem:
        return outcome("invalid", problem)
    context = resolved if resolved is not None else resolved_from_manifest(ws, name)
    sources_before = source_hashes(ws, context) if context else {}
    state_before = workspace_hashes(ws)
    own = judge is None
    signals = TerminationRaises()  # SIGTERM/SIGHUP unwind through the finally below
    session = judge or JudgeProcess(ws, python=python, prestart=False)
    cuda = _wants_cuda(path)
    watch: CancelWatch | None = None
    try:
        signals.__enter__()
        session.start()
        if check_idle and cuda:
            problem = device_idle_problem(session.own_pids())
            if problem:
                return outcome("invalid", problem)
        worker = session.take_worker()
        watch = CancelWatch(cancel, lambda: _kill_run(worker, session))
        if session.prestart_enabled and cuda:
            # The next workers are forked and set up (CPU only, no CUDA context) while this run's GPU timing
            # runs; for CPU targets one worker starts when this worker is done, so it cannot steal the timed cores.
            session.prestart(PRESTART_POOL_CUDA)
        result = session.contract.orchestrate(
            str(path),
            python=session.python,
            contract=session.contract_file,
            timeout_s=timeout_s,
            ceiling_gbps=ceiling_gbps,
            judge=session.client,
            worker=worker,
            role=role,
            on_worker_done=session.prestart if session.prestart_enabled else None,
            defer_teardown=not own,
            rotation=rotation,
        )
    except HotkernelError:
        raise
    except Exception as err:  # noqa: BLE001 - never a traceback: the run is invalid with the cause
        return outcome("invalid", f"crashed: runner: {type(err).__name__}: {err}")
    finally:
        if watch is not None:
            watch.stop()
        if own:
            session.close()
        signals.__exit__()
    if watch is not None and watch.fired:
        return outcome("invalid", "cancelled: the run in flight was stopped by request; nothing was measured")
    tail = str(result.pop("stderr_tail", "") or "")
    status = result.get("status") if result.get("status") in ("ok", "incorrect", "invalid") else "invalid"
    reason = result.get("reason")
    problem = check_workspace_integrity(ws, name, resolved)
    sources_after = source_hashes(ws, context) if context else {}
    if problem is None and sources_after != sources_before:
        changed = sorted(
            k for k in sources_before.keys() | sources_after.keys() if sources_before.get(k) != sources_after.get(k)
        )
        problem = (
            f"baseline_unchanged: {', '.join(changed)} (the target's own source) changed during the run; "
            "restore it (git checkout) and verify again"
        )
    if problem is None:
        problem = workspace_change(state_before, workspace_hashes(ws))
    if problem:
        status, reason = "invalid", problem
        result.update(status=status, ok=False, reason=reason)
    if status != "ok" and not reason:
        reason = "crashed: the run gave no reason"
    return outcome(status, reason, result, tail)


def _kill_run(worker: Any, session: JudgeProcess) -> None:
    """Stop a run in flight: its worker with everything it started, and the judge when it is judging the run
    (the judge is started afresh for the next run: a cancelled verify never leaves its judge warm)."""
    worker.kill()
    if session.client is not None:
        session.client.close()


class CancelWatch:
    """Calls ``kill`` once ``cancel`` is set while a run is in flight (checked every ``POLL_S``); ``fired`` says
    whether it did. No event, no thread."""

    POLL_S = 0.1

    def __init__(self, cancel: threading.Event | None, kill: Any) -> None:
        self.cancel, self.kill, self.fired = cancel, kill, False
        self.done = threading.Event()
        self.thread = None
        if cancel is not None:
            self.thread = threading.Thread(target=self._watch, name="hotkernel-cancel-watch", daemon=True)
            self.thread.start()

    def _watch(self) -> None:
        assert self.cancel is not None
        while not self.done.wait(self.POLL_S):
            if self.cancel.is_set():
                self.fired = True
                self.kill()
                return

    def stop(self) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join()


def compile_warm_for(scripts: list[Path]) -> bool:
    """Whether the runs of ``scripts`` (one bench or verify) use workers of a fork server that warmed torch.compile:
    the contract's rule (``wants_compile_warm``) on the first script's device and every script's text."""
    contract = render.contract_module()
    try:
        kind = contract.device_kind_of(contract.read_spec(str(scripts[0])))
        texts = [script.read_text(encoding="utf-8", errors="replace") for script in scripts]
    except (OSError, ValueError, SyntaxError):
        return False
    return bool(contract.wants_compile_warm(kind, texts))


def start_compile_warm_server(ws: Workspace, python: str) -> None:
    """Start, without waiting, the fork server that the workers of a CPU verify of ``torch.compile`` scripts fork
    from (``compile_warm``), keyed as ``contract.Worker`` will ask for it; its warm-up (the imports of dynamo and
    inductor, inductor's probes of the C++ toolchain, one compile: about 27 s on an H100 host's CPU with an empty
    cache) runs in its own process while this one goes on. For a sync lane whose later job needs it
    (``verify_job``). The server dies with the thread that started it (``die_with_parent``): call this from the
    thread that runs the verifies. One that fails to start is left to the verify that needs it, which starts its own
    and says why."""
    use_compile_cache(ws)
    contract = render.contract_module()
    with contextlib.suppress(Exception):
        contract.prestart_server(str(python), str(render.contract_path()), True)


def _wants_cuda(script: Path) -> bool:
    try:
        spec = render.contract_module().read_spec(str(script))
    except (OSError, ValueError, SyntaxError):
        return False
    return str(spec.get("device", "cuda")).startswith("cuda")
