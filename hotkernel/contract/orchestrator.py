"""The orchestrator: starts the worker isolated, reads its one protocol line, freezes it, has the judge read
its outputs, kills every process of the run, and returns the run JSON. Used by the tool (``run/runner.py``)
and by ``python targets/<name>/<script>.py`` (``main``)."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from .forkserver import ROLE_KEY, close_servers, forkserver_main, server_pids, spawn_worker, worker_env
from .hygiene import (
    become_subreaper,
    clean_stale_run_dirs,
    exited_children,
    kill_processes,
    own_children,
    raise_on_signals,
    run_dir_parent,
    run_processes,
    start_ticks,
    stop_processes,
    tail_of,
)
from .judge import judge_main
from .knobs import (
    JUDGE_REPLY_TIMEOUT_S,
    LEFTOVER_GRACE_S,
    PROTOCOL_VERSION,
    STALE_RUN_DIR_PREFIX,
    TOKEN_ENV,
    fail,
)
from .spec import read_spec, sha256_file
from .transport import remove_ipc_files
from .worker import worker_main

LIVE: dict[int, Any] = {}  # pid -> Worker | Judge started by this process and not yet closed
RETIRING: dict[int, threading.Thread] = {}  # worker pid -> the thread reaping its killed run (Worker.retire)
KILLED: set[int] = set()  # every process a run's teardown killed: its exit is not a later run's escapee


def live_pids() -> set[int]:
    """Processes this orchestrator started and still tracks: workers, judges and fork servers."""
    return set(LIVE) | server_pids()


def kill_live_runs() -> None:
    """Kill every worker, judge and fork server this process started, with everything they spawned."""
    for item in list(LIVE.values()):
        with contextlib.suppress(Exception):
            item.close()
    reap_retired()
    close_servers()


def exiting_processes() -> list[tuple[int, int | None]]:
    """``(pid, start_ticks)`` of every process of a retired run not yet reaped: the next worker waits for them
    before its timer (``await_exit`` in its job)."""
    found = []
    for pid in list(RETIRING):
        worker = LIVE.get(pid)
        if worker is not None:
            found += worker.retired
    return found


def reap_retired(timeout_s: float = 10.0) -> None:
    """Wait for every retired run's reaping thread (the end of a bench/verify: nothing of it survives)."""
    deadline = time.monotonic() + timeout_s
    for pid, thread in list(RETIRING.items()):
        thread.join(max(0.0, deadline - time.monotonic()))
        if not thread.is_alive():
            RETIRING.pop(pid, None)


class Worker:
    """A started worker process waiting for its job line (it has already imported torch when warm).
    ``compile_warm``: forked from a server that warmed torch.compile (``forkserver.wants_compile_warm``)."""

    def __init__(self, python: str, contract: str, compile_warm: bool = False) -> None:
        become_subreaper()
        self.token = secrets.token_hex(16)
        self.adopted_before = own_children()
        self.exited_before = exited_children()  # zombies of earlier runs are not this run's
        read_fd, write_fd = os.pipe()
        env = {**worker_env(), TOKEN_ENV: self.token}
        self.log = tempfile.TemporaryFile()
        self.out = tempfile.TemporaryFile()  # the script's prints: kept apart so forged JSON lines are seen
        try:  # forked from the fork server of this interpreter: a fresh process that has imported torch
            self.proc = spawn_worker(
                python, contract, env, self.out.fileno(), self.log.fileno(), write_fd, compile_warm
            )
        except BaseException:
            for handle in (self.log, self.out):
                handle.close()
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        LIVE[self.proc.pid] = self
        self.read_fd = read_fd
        self.chunks: list[bytes] = []
        self.retired: list[tuple[int, int | None]] = []
        self.closing = threading.Lock()
        self.line_seen = threading.Event()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            self.chunks.append(chunk)
            if b"\n" in chunk:
                self.line_seen.set()
        self.line_seen.set()

    def processes(self, orphans: bool = True) -> set[int]:
        """Every process of this run still alive (the worker included); ``orphans=False`` leaves out the
        children of this process it cannot tell from a worker being started meanwhile (reaper thread)."""
        known = (live_pids() | {pid for pid, _ in exiting_processes()}) - {self.proc.pid}
        found = run_processes(self.proc.pid, self.token, known, self.adopted_before, orphans)
        if self.proc.poll() is None:
            found.add(self.proc.pid)
        return found

    def log_tail(self, limit: int = 4000) -> str:
        """The end of the worker's stderr, then of its stdout."""
        return (tail_of(self.log, limit) + "\n" + tail_of(self.out, limit)).strip()[-limit:]

    def forged_stdout_line(self) -> str | None:
        """A JSON object the script printed on stdout (a forged result line), if any."""
        with contextlib.suppress(OSError, ValueError):
            self.out.seek(0)
            for raw in self.out.read(1 << 22).splitlines():
                text = raw.strip()
                if text.startswith(b"{") and text.endswith(b"}"):
                    with contextlib.suppress(ValueError):
                        if isinstance(json.loads(text), dict):
                            return text[:120].decode("utf-8", "replace")
        return None

    def kill(self) -> None:
        """Kill the worker, its group, every process carrying its token and every orphan it left us; the
        processes found when it was retired (``retire``) are among them, and the orphans are looked for then."""
        if not self.retired:
            self.retired = [(pid, start_ticks(pid)) for pid in sorted(self.processes() | {self.proc.pid})]
        doomed = self.processes(orphans=False) | {pid for pid, _ in self.retired} | {self.proc.pid}
        KILLED.update(doomed | exited_children(doomed))  # their exited children come to this subreaper next
        kill_processes(doomed)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        reap(exited_children() & (KILLED - live_pids()))
        remove_ipc_files(self.proc.pid)

    def retire(self) -> None:
        """SIGKILL every process of the run now and reap them in a thread, so the CUDA context's teardown
        (about 0.2 s on the H200) overlaps the next run's setup; that run's worker waits for these processes
        to exit before its timer starts (``exiting_processes``)."""
        pids = self.processes() | {self.proc.pid}
        self.retired = [(pid, start_ticks(pid)) for pid in sorted(pids)]
        KILLED.update(pids | exited_children(pids))  # their exited children come to this subreaper next
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        reaper = threading.Thread(target=self.close, daemon=True)
        RETIRING[self.proc.pid] = reaper
        reaper.start()

    def close(self) -> None:
        with self.closing:
            if self.proc.pid not in LIVE:
                return
            self.close_now()
        RETIRING.pop(self.proc.pid, None)

    def close_now(self) -> None:
        self.kill()
        LIVE.pop(self.proc.pid, None)
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(OSError):
            self.log.close()
            self.out.close()
        self.reader.join(timeout=1.0)
        with contextlib.suppress(OSError):
            os.close(self.read_fd)
        self.proc.close()


class Judge:
    """Client side of a persistent judge process (``judge_main``), forked from the fork server like a worker: a
    process of its own session that has imported torch and never imported a script. ``compile_warm``: that of the
    workers beside it (one server serves both)."""

    def __init__(self, python: str, contract: str, compile_warm: bool = False) -> None:
        become_subreaper()
        self.log = tempfile.TemporaryFile()
        read_fd, write_fd = os.pipe()
        quiet = os.open(os.devnull, os.O_WRONLY)
        try:
            env = {**os.environ, ROLE_KEY: "judge"}
            self.proc = spawn_worker(python, contract, env, write_fd, self.log.fileno(), quiet, compile_warm)
        except BaseException:
            os.close(read_fd)
            self.log.close()
            raise
        finally:
            os.close(write_fd)
            os.close(quiet)
        self.proc.stdout = os.fdopen(read_fd, "rb")
        LIVE[self.proc.pid] = self
        self.lines: list[bytes] = []
        self.ready_seen = False
        self.ready = threading.Condition()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self.ready:
                self.lines.append(line)
                self.ready.notify_all()
        with self.ready:
            self.ready.notify_all()

    def wait_ready(self, timeout_s: float = JUDGE_REPLY_TIMEOUT_S) -> bool:
        """Block until the judge has imported torch (so it does not compete with a worker's timing)."""
        if self.ready_seen:
            return True
        reply = self.next_line(timeout_s)
        self.ready_seen = reply.get("ready") is True
        return self.ready_seen

    def ask(self, job: dict[str, Any], timeout_s: float = JUDGE_REPLY_TIMEOUT_S) -> dict[str, Any]:
        if not self.wait_ready(timeout_s):
            return fail("crashed", f"judge did not start: {self.log_tail()}")
        if self.proc.poll() is not None or self.proc.stdin is None:
            return fail("crashed", f"judge process exited ({self.proc.returncode}): {self.log_tail()}")
        try:
            self.proc.stdin.write((json.dumps(job) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as err:
            return fail("crashed", f"judge process is gone ({err})")
        return self.next_line(timeout_s)

    def next_line(self, timeout_s: float) -> dict[str, Any]:
        """The judge's next reply line, or a failure when it dies or stays silent."""
        deadline = time.monotonic() + timeout_s
        with self.ready:
            while not self.lines:
                if self.proc.poll() is not None:
                    return fail("crashed", f"judge process died ({self.proc.returncode}): {self.log_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    self.close()
                    return fail("timeout", f"judge gave no answer within {timeout_s:.0f} s")
                self.ready.wait(min(left, 0.5))
            line = self.lines.pop(0)
        try:
            return json.loads(line)
        except ValueError:
            return fail("crashed", f"judge answered {line[:200]!r}")

    def log_tail(self, limit: int = 2000) -> str:
        return tail_of(self.log, limit).strip()

    def close(self) -> None:
        LIVE.pop(self.proc.pid, None)
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        kill_processes({self.proc.pid})
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        self.proc.close()
        for stream in (self.log, self.proc.stdout):  # each its own: one failing close must not keep the other open
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()


def orchestrate(
    script: str,
    *,
    python: str | None = None,
    contract: str | None = None,
    timeout_s: float = 600.0,
    ceiling_gbps: float | None = None,
    judge: Judge | None = None,
    worker: Worker | None = None,
    role: str | None = None,
    on_worker_done: Callable[[], None] | None = None,
    defer_teardown: bool = False,
    rotation: list[int] | None = None,
) -> dict[str, Any]:
    """One run of ``script``: isolated worker, one protocol line, the judge's verdict; the run JSON.
    ``defer_teardown``: the worker is retired (``Worker.retire``), not reaped before returning. ``rotation``: the
    number of input sets per shape to use (a verify's later runs keep its first run's)."""
    started = time.monotonic()
    clean_stale_run_dirs()
    script = os.path.abspath(script)
    python = python or sys.executable
    contract = contract or os.path.abspath(__file__)
    role = role or ("baseline" if os.path.basename(script) == "baseline.py" else "candidate")
    result: dict[str, Any] = {
        "protocol": PROTOCOL_VERSION,
        "status": "invalid",
        "ok": False,
        "reason": None,
        "ms": None,
        "role": role,
        "contract_sha256": sha256_file(contract),
        "script_sha256": sha256_file(script),
    }
    try:
        spec = read_spec(script)
        result.update(
            target=spec.get("name"), shapes=spec.get("shapes"), dtype=spec.get("dtype"), flops=spec.get("flops")
        )
    except (OSError, ValueError, SyntaxError) as err:
        result["reason"] = f"baseline_unchanged: cannot read SPEC: {err}"
        return finish(result, started)
    own_judge = judge is None
    try:
        judge = judge or Judge(python, contract)
        worker = worker or Worker(python, contract)
    except OSError as err:  # the fork server could not start (no torch in this python, say)
        if own_judge and judge is not None:
            judge.close()
        result["reason"] = f"crashed: cannot start a worker: {err}"
        return finish(result, started)
    run_dir = tempfile.mkdtemp(prefix=f"{STALE_RUN_DIR_PREFIX}{os.getpid()}_", dir=run_dir_parent())
    try:
        judge.wait_ready()
        phase = time.monotonic()
        verdict = run_worker(worker, script, run_dir, timeout_s, exiting_processes(), rotation)
        phases = {"worker": round(time.monotonic() - phase, 3)}
        result["stderr_tail"] = worker.log_tail()
        if verdict.get("status") != "measured":
            result["reason"] = verdict.get("reason") or "crashed: worker gave no reason"
            return finish(result, started)
        record = verdict["record"]
        reply = judge.ask({"script": script, "run_dir": run_dir, "record": record, "ceiling_gbps": ceiling_gbps})
        phases["judge"] = round(time.monotonic() - phase - phases["worker"], 3)
        extra = protocol_lines(worker)
        if len(extra) > 1:
            reply = fail("single_protocol_line", f"{len(extra)} lines on the protocol channel, expected exactly one")
        merge_run(result, record, reply)
        result["phases_s"] = {
            **phases,
            **{f"worker_{k}": v for k, v in (record.get("phases_s") or {}).items()},
            **{f"job_{k}": v for k, v in (record.get("job_phases_s") or {}).items()},
            **{f"shape0_{k}": v for k, v in ((record.get("shapes") or [{}])[0].get("phases_s") or {}).items()},
            **{f"judge_{k}": v for k, v in (reply.get("phases_s") or {}).items()},
        }
        return finish(result, started)
    finally:
        if defer_teardown:
            worker.retire()
        else:
            worker.close()
        if on_worker_done is not None:
            on_worker_done()
        if own_judge:
            judge.close()
        with contextlib.suppress(OSError):
            for name in os.listdir(run_dir):
                os.unlink(os.path.join(run_dir, name))
            os.rmdir(run_dir)


def protocol_lines(worker: Worker) -> list[bytes]:
    return [line for line in b"".join(worker.chunks).split(b"\n") if line.strip()]


def run_worker(
    worker: Worker,
    script: str,
    run_dir: str,
    timeout_s: float,
    await_exit: list[tuple[int, int | None]] | None = None,
    rotation: list[int] | None = None,
) -> dict[str, Any]:
    """Send the job, wait for the protocol line (timeout kills the run), freeze the worker, check the process
    tree and the protocol channel. On success the worker is left frozen, holding its outputs for the judge.
    ``await_exit``: processes of a retired run the worker waits for before its timer; ``rotation``: K per shape."""
    nonce = secrets.token_hex(16)
    job = {
        "nonce": nonce,
        "script": script,
        "run_dir": run_dir,
        "await_exit": [list(p) for p in await_exit or []],
        "rotation": list(rotation or []),
    }
    try:
        assert worker.proc.stdin is not None
        worker.proc.stdin.write((json.dumps(job) + "\n").encode())
        worker.proc.stdin.flush()
    except OSError:
        pass  # the worker died before reading: judged below by its exit code
    deadline = time.monotonic() + timeout_s
    while not worker.line_seen.is_set() and worker.proc.poll() is None:
        if time.monotonic() >= deadline:
            worker.kill()
            return fail("timeout", f"worker ran longer than {timeout_s:.0f} s; every process of the run was killed")
        worker.line_seen.wait(0.05)
    code = worker.proc.poll()
    if not protocol_lines(worker) and code is None:  # the channel closed: the worker is dying, get its code
        with contextlib.suppress(subprocess.TimeoutExpired):
            code = worker.proc.wait(timeout=LEFTOVER_GRACE_S)
    if code is None:
        stop_processes({worker.proc.pid})
    else:
        worker.reader.join(timeout=1.0)
    leftovers = wait_for_leftovers(worker)
    escaped = reap_escaped(worker)
    lines = protocol_lines(worker)
    if leftovers:
        return fail(
            "no_leftover_processes",
            f"{len(leftovers)} process(es) of the run were still running "
            f"{LEFTOVER_GRACE_S:.0f} s after the worker reported; killed",
        )
    if escaped:
        return fail(
            "no_leftover_processes",
            f"{len(escaped)} process(es) left the run's process tree (re-parented "
            "to the orchestrator) and exited before the end of the run; a run "
            "starts no detached processes",
        )
    if not lines:
        if code not in (None, 0):
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            return fail("crashed", f"worker died ({how}) before reporting: {worker.log_tail(600).strip()[-600:]}")
        return fail("single_protocol_line", "worker exited without writing its protocol line")
    if len(lines) > 1:
        return fail("single_protocol_line", f"{len(lines)} lines on the protocol channel, expected exactly one")
    try:
        record = json.loads(lines[0])
    except ValueError:
        return fail("single_protocol_line", f"protocol line is not JSON: {lines[0][:120]!r}")
    if not isinstance(record, dict) or record.get("nonce") != nonce:
        return fail("single_protocol_line", "protocol line does not carry this run's nonce (forged)")
    if record.get("protocol") != PROTOCOL_VERSION:
        return fail("single_protocol_line", f"protocol {record.get('protocol')!r}, expected {PROTOCOL_VERSION}")
    if code not in (None, 0):
        return fail("worker_exit_clean", f"worker exited with code {code} after reporting")
    forged = worker.forged_stdout_line()
    if forged:
        return fail("single_protocol_line", f"the script printed a JSON line on stdout (forged): {forged}")
    if record.get("status") != "measured":
        return {"status": "invalid", "reason": str(record.get("reason") or "crashed: worker failed without a reason")}
    return {"status": "measured", "record": record}


def reap_escaped(worker: Worker) -> list[int]:
    """Reap and return the exited processes re-parented to this orchestrator during the worker's run: not a
    process it started (worker, judge), not one of a retired run, not one that had exited before the run."""
    started = live_pids() | {worker.proc.pid} | {pid for pid, _ in exiting_processes()} | KILLED
    escaped = sorted(exited_children() - started - worker.exited_before - worker.adopted_before)
    reap(set(escaped))
    return escaped


def reap(pids: set[int]) -> None:
    """Reap exited children of this process (never one a ``Popen`` of this process still waits for)."""
    for pid in pids - live_pids():
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        KILLED.discard(pid)


def wait_for_leftovers(worker: Worker) -> list[int]:
    """Processes of the run besides the (frozen or exited) worker still alive after LEFTOVER_GRACE_S."""
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    while True:
        alive = worker.processes() - {worker.proc.pid}
        if not alive:
            return []
        if time.monotonic() >= deadline:
            worker.kill()
            return sorted(alive)
        time.sleep(0.02)


def merge_run(result: dict[str, Any], record: dict[str, Any], reply: dict[str, Any]) -> None:
    """The run JSON: worker measurements plus the judge's verdict."""
    judged = {item.get("shape"): item for item in reply.get("per_shape") or []}
    per_shape = []
    for shape in record.get("shapes") or []:
        verdict = judged.get(shape["shape"], {})
        per_shape.append(
            {
                "shape": shape["shape"],
                "ms": shape["ms"],
                "samples_ms": shape["samples_ms"],
                "rotation": shape["rotation"],
                "n_calls": shape["n_calls"],
                "timer": shape["timer"],
                "launch_bound": shape["launch_bound"],
                "cache_resident": shape["cache_resident"],
                "capture_error": shape.get("capture_error"),
                "overhead_ms": shape.get("overhead_ms"),
                "sized_by": shape.get("sized_by"),
                "output_bytes": shape.get("output_bytes"),
                "timed_kernel_s": shape.get("timed_kernel_s"),
                "transport": verdict.get("transport"),
                "bytes": verdict.get("bytes"),
                "floor_ms": verdict.get("floor_ms"),
                "max_abs_error": verdict.get("max_abs_error"),
                "ok": verdict.get("ok", False),
            }
        )
    head = per_shape[0] if per_shape else {}
    result.update(
        status=reply.get("status", "invalid"),
        reason=reply.get("reason"),
        ms=head.get("ms"),
        seed_policy=record.get("seed_policy"),
        iters=head.get("n_calls"),
        device=record.get("device"),
        device_kind=record.get("device_kind"),
        rotation=head.get("rotation"),
        bytes=head.get("bytes"),
        max_error=reply.get("max_error"),
        timer=head.get("timer"),
        launch_bound=head.get("launch_bound"),
        per_shape=per_shape,
        checks=reply.get("checks") or [],
        torch=record.get("torch"),
        ceiling_gbps=reply.get("ceiling_gbps"),
        tolerances=reply.get("tolerances"),
        reference_precision=reply.get("reference_precision"),
        transport=head.get("transport"),
        placement_pad_bytes=record.get("placement_pad_bytes"),
    )
    if result["status"] != "ok" and not result.get("reason"):
        result["reason"] = "crashed: judge gave no reason"


def finish(result: dict[str, Any], started: float) -> dict[str, Any]:
    if result.get("status") not in ("ok", "incorrect", "invalid"):
        result["status"] = "invalid"
    result["ok"] = result["status"] == "ok"
    result["wall_s"] = round(time.monotonic() - started, 3)
    return result


def main(script: str | None = None) -> None:
    """``python targets/<name>/candidate.py``: one run, one JSON line on stdout; exit 0 only when ok."""
    if script is None:
        argv = sys.argv[1:]
        if argv[:1] == ["worker"]:
            worker_main(argv[1:])
            return
        if argv[:1] == ["judge"]:
            judge_main()
            return
        if argv[:1] == ["forkserver"]:
            forkserver_main(argv[1:])
            return
        if argv[:1] == ["run"] and len(argv) == 2:
            script = argv[1]
        else:
            sys.stderr.write(
                "usage: hk_contract.py run SCRIPT | worker [SCRIPT RUN_DIR] | judge | forkserver [--compile-warm]\n"
            )
            raise SystemExit(2)
    raise_on_signals()
    try:
        result = orchestrate(script)
    finally:
        kill_live_runs()
    result.pop("stderr_tail", None)
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    raise SystemExit(0 if result.get("ok") else 1)
