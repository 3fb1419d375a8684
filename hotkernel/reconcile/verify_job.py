"""The child process of a sync lane.

``python -m hotkernel.reconcile.verify_job '<job JSON>'`` runs one verify in the workspace
``HOTKERNEL_WORKSPACE`` names (a private copy of the target: a Ray task) and prints one JSON line:
``{"result": <VerifyResult>, "facts": <the GPU and CPU it ran on>, "judge_pid": ...}``, or ``{"error": "..."}``
(exit 1) when the verify cannot run.

``python -m hotkernel.reconcile.verify_job --serve`` takes a lane's jobs one after another (``lane_child.py``):
per stdin line ``{"job": ..., "bundle": <path>, "warm_compile": bool}`` it unpacks the bundle into a fresh
``HOTKERNEL_WORKSPACE`` (with ``warm_compile`` it first starts the compile-warm fork server a later job forks from),
verifies, and answers ``{"progress": [done, total, message]}`` lines, then the reply line above. One judge and its
pre-started workers serve every job (``runner.WarmJudge``), replaced whenever it is not clean. The coordinating
``sync`` records the results; this process writes no record.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import IO, Any

from hotkernel._util.nvml import visible_gpus
from hotkernel._util.procs import TerminationRaises
from hotkernel.errors import HotkernelError
from hotkernel.manifest.python import user_python
from hotkernel.reconcile.jobs import unpack
from hotkernel.run.runner import COMPILE_CACHE_DIR, WarmJudge, resolved_from_manifest, start_compile_warm_server
from hotkernel.run.verify import clean_run, verify
from hotkernel.store.record import cpu_model, gpu_facts
from hotkernel.workspace.paths import Workspace, find_workspace


def lane_facts(device_kind: str | None) -> dict[str, Any]:
    """The CPU, and for cuda runs the GPU (UUID, driver, clocks, power limit) this process may use."""
    facts: dict[str, Any] = {"cpu": cpu_model()}
    gpus = visible_gpus() if device_kind == "cuda" else []
    if gpus:
        facts.update(gpu_facts(gpus[0].name, gpus[0].uuid))
    return facts


def run_job(ws: Workspace, job: dict[str, Any], warm: WarmJudge | None = None, **extra: Any) -> dict[str, Any]:
    """Verify ``job`` in ``ws`` (with the warm judge when given); the reply line's fields."""
    kwargs: dict[str, Any] = {"n": int(job["rounds"]), **extra}
    if job.get("timeout_s") is not None:
        kwargs["timeout_s"] = float(job["timeout_s"])
    judge_pid = None
    if warm is not None:
        python = user_python(ws, None, probe=False)
        resolved = resolved_from_manifest(ws, Path(str(job["baseline"])).parent.name)
        kwargs.update(python=python, resolved=resolved, judge=warm.take(python, resolved))
        judge_pid = warm.pid()
    try:
        result = verify(ws, job["baseline"], job["candidate"], **kwargs)
    except BaseException:
        if warm is not None:
            warm.close()
        raise
    if warm is not None:
        warm.done(clean_run(result))
    return {"result": result.model_dump(mode="json"), "facts": lane_facts(result.device_kind), "judge_pid": judge_pid}


def main(argv: list[str]) -> int:
    """Run the job in ``argv[1]``; print its one JSON line (``--serve``: jobs from stdin, ``serve``)."""
    if argv[1:2] == ["--serve"]:
        return serve(sys.stdin, sys.stdout)
    try:
        job = json.loads(argv[1])
        with TerminationRaises():  # SIGTERM from the lane unwinds through verify: its processes are killed
            reply = run_job(find_workspace(), job)
    except HotkernelError as err:
        print(json.dumps({"error": str(err)}), flush=True)
        return 1
    except (IndexError, KeyError, TypeError, ValueError) as err:
        print(json.dumps({"error": f"verify_job: a bad job ({type(err).__name__}: {err}); it comes from sync"}))
        return 1
    print(json.dumps(reply), flush=True)
    return 0


def fresh_workspace(root: Path, data: bytes) -> Workspace:
    """``root`` emptied (the compile cache under ``.hotkernel/`` kept: no run compiles twice) and the bundle
    ``data`` unpacked into it; the same folder for every job, so warm workers keep a valid working place."""
    root.mkdir(parents=True, exist_ok=True)
    for entry in root.iterdir():
        if entry.name == ".hotkernel" and entry.is_dir():
            for inner in entry.iterdir():
                if inner.name != COMPILE_CACHE_DIR:
                    shutil.rmtree(inner) if inner.is_dir() and not inner.is_symlink() else inner.unlink()
        elif entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    unpack(data, root)
    return Workspace(root)


def serve(requests: IO[str], out: IO[str]) -> int:
    """Answer job lines from ``requests`` until it closes; one warm judge for all of them."""
    reply_fd = os.dup(out.fileno())  # replies only: prints of the verify's libraries go to stderr
    os.dup2(sys.stderr.fileno(), out.fileno())
    replies = os.fdopen(reply_fd, "w", encoding="utf-8", buffering=1)

    def say(line: dict[str, Any]) -> None:
        replies.write(json.dumps(line) + "\n")
        replies.flush()

    warm: WarmJudge | None = None
    with TerminationRaises():  # SIGTERM from the lane unwinds through verify and closes the judge
        try:
            for line in requests:
                if not line.strip():
                    continue
                try:
                    request = json.loads(line)
                    ws = fresh_workspace(find_workspace_root(), Path(request["bundle"]).read_bytes())
                    if request.get("warm_compile"):  # a later job of this lane needs it: it warms up meanwhile
                        start_compile_warm_server(ws, user_python(ws, None, probe=False))
                    warm = warm if warm is not None else WarmJudge(ws)
                    progress = lambda done, total, msg: say({"progress": [done, total, msg]})  # noqa: E731
                    say(run_job(ws, request["job"], warm, progress=progress))
                except HotkernelError as err:
                    say({"error": str(err)})
                except (OSError, IndexError, KeyError, TypeError, ValueError) as err:
                    say({"error": f"verify_job: a bad job ({type(err).__name__}: {err}); it comes from sync"})
        finally:
            if warm is not None:
                warm.close()
    return 0


def find_workspace_root() -> Path:
    """The lane's workspace folder: ``HOTKERNEL_WORKSPACE``, which the lane sets."""
    root = os.environ.get("HOTKERNEL_WORKSPACE")
    if not root:
        raise HotkernelError("verify_job --serve: HOTKERNEL_WORKSPACE is not set; it is started by a sync lane")
    return Path(root)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
