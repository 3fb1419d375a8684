"""The coordinator's side of a lane's child process (``python -m hotkernel.reconcile.verify_job --serve``).

The child takes the lane's jobs one after another: per job one request line on its stdin (the job and the
path of its bundle), then progress lines and one reply line on its stdout. Between jobs it keeps its judge and
pre-started workers warm (``runner.WarmJudge``). It runs in its own session; a cancelled or timed-out job and
any exception here kill its whole process tree at once (SIGKILL: nothing of a stopped run is left to finish).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

from hotkernel._util.procs import POLL_S, kill_group, read_text_tail
from hotkernel.reconcile.jobs import Job, JobFailed, LaneDied, LaneRun, LaneStatus
from hotkernel.run.models import VerifyResult

STOP_WAIT_S = 15.0  # a child told to stop (stdin closed) gets this long to close its judge before it is killed


class LaneChild:
    """One started child with its lane folder (the bundles, the child's stderr); ``run`` one job at a time."""

    def __init__(self, proc: subprocess.Popen[bytes], folder: tempfile.TemporaryDirectory[str], err: IO[bytes]):
        self.proc, self.folder, self.err = proc, folder, err
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.reader = threading.Thread(target=self._drain, name="hotkernel-lane-child", daemon=True)
        self.reader.start()

    @classmethod
    def start(cls, env: dict[str, str]) -> LaneChild:
        """Start a child with ``env`` over this process's environment (its GPU pinning, the interpreter)."""
        folder = tempfile.TemporaryDirectory(prefix="hotkernel-lane-")
        lane_dir = Path(folder.name)
        err = open(lane_dir / "child.stderr", "wb")  # noqa: SIM115 - closed in stop()
        child_env = {**os.environ, **env, "HOTKERNEL_WORKSPACE": str(lane_dir / "ws")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "hotkernel.reconcile.verify_job", "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=lane_dir,
            env=child_env,
            start_new_session=True,
        )
        return cls(proc, folder, err)

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(
        self, data: bytes, job: Job, *, cancel: threading.Event, status: LaneStatus, warm_compile: bool = False
    ) -> LaneRun:
        """Run ``job`` (its bundle ``data``) in the child; its ``LaneRun``, or ``LaneDied`` / ``JobFailed``.
        ``warm_compile``: the child first starts the compile-warm fork server for a later job of the lane."""
        path = Path(self.folder.name) / "job.tar.gz"
        path.write_bytes(data)
        request = json.dumps({"job": json.loads(job.as_json()), "bundle": str(path), "warm_compile": warm_compile})
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(request.encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            self.kill()
            raise LaneDied(f"the verify process died before its job: {self.tail()}") from None
        deadline = time.monotonic() + job.wall_limit_s()
        try:
            while True:
                if cancel.is_set():
                    self.kill()
                    raise LaneDied("cancelled")
                if time.monotonic() >= deadline:
                    self.kill()
                    raise JobFailed(f"the verify took longer than {job.wall_limit_s():.0f} s and was killed")
                try:
                    line = self.lines.get(timeout=POLL_S)
                except queue.Empty:
                    continue
                if line is None:
                    self.kill()
                    raise LaneDied(f"the verify process died (exit {self.proc.poll()}): {self.tail()}")
                run = self._reply(line, status)
                if run is not None:
                    return run
        except (LaneDied, JobFailed):
            raise
        except BaseException:  # an interrupt or a bug here: nothing of the run may outlive it
            self.kill()
            raise

    def _reply(self, line: bytes, status: LaneStatus) -> LaneRun | None:
        """A progress line goes to ``status`` (None); a reply becomes the ``LaneRun`` or raises."""
        try:
            reply: Any = json.loads(line)
        except ValueError:
            return None  # not ours: a stray print of a library
        if not isinstance(reply, dict):
            return None
        if "progress" in reply:
            done, _total, message = reply["progress"]
            status(str(message), int(done))
            return None
        if "result" in reply:
            return LaneRun(
                result=VerifyResult.model_validate(reply["result"]),
                facts=reply.get("facts") or {},
                judge_pid=reply.get("judge_pid"),
            )
        if "error" in reply:
            raise JobFailed(str(reply["error"]))
        return None

    def tail(self) -> str:
        lines = read_text_tail(Path(self.folder.name) / "child.stderr", 2000).strip().splitlines()
        return (lines or ["no output"])[-1][:200]

    def kill(self) -> None:
        """SIGKILL the child's process group and every process below it (judge, workers) now."""
        kill_group(self.proc, grace_s=0.0)

    def stop(self) -> None:
        """End the child: stdin closed, it closes its judge and exits; killed if it has not after STOP_WAIT_S."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
        kill_group(self.proc, grace_s=0.0)
        self.err.close()
        self.folder.cleanup()
