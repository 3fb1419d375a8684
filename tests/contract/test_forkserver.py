"""Workers are forked from a fork server that has imported torch: each run is still a fresh process of its own
session, nothing of one run's script reaches the next, and a dead server is replaced."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from hotkernel.run import render
from hotkernel.run.runner import JudgeProcess, run_script

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from adversarial.workspace import TARGET, make_workspace, python  # noqa: E402

pytestmark = pytest.mark.slow

# Writes what the worker process is, and marks the interpreter: a second run that saw the mark would be the same
# process (or a copy of one that ran a script).
REPORTS_ITS_PROCESS = """
LOG = LOG_PATH
import builtins
import gc
import json
import os
import sys

import torch

_big = torch.empty(1 << 24)  # 64 MiB: a mapping of its own (above the worker's mmap threshold)
_mid = torch.empty(1 << 20)  # 4 MiB: from the heap (steady_malloc), where glibc's default would map it
_heap = []
with open("/proc/self/maps") as _maps:
    for _line in _maps:
        if _line.rstrip().endswith("[heap]"):
            _heap.append([int(_part, 16) for _part in _line.split()[0].split("-")])
_small = torch.empty(1024)  # 4 KiB: from the heap's free chunks
_object = bytes(100)  # a Python object: from pymalloc's pools
_plain = object()  # pymalloc's smallest size class
_seen = getattr(builtins, "hk_test_seen", 0)
builtins.hk_test_seen = _seen + 1
_fds = {}
for _fd in os.listdir("/proc/self/fd"):
    try:
        _fds[_fd] = os.readlink(f"/proc/self/fd/{_fd}")
    except OSError:  # the listing's own descriptor
        pass
with open(LOG, "a") as _out:
    _out.write(json.dumps({
        "pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "pgid": os.getpgid(0),
        "seen_before": _seen, "cuda_initialized": torch.cuda.is_initialized(),
        "big_ptr": _big.data_ptr(), "small_ptr": _small.data_ptr(), "object_id": id(_object), "plain_id": id(_plain),
        "token": os.environ.get("HK_RUN_TOKEN"), "protocol_fd": os.environ.get("HK_PROTOCOL_FD"),
        "fds": _fds, "frozen": gc.get_freeze_count(),
        "mid_in_heap": any(start <= _mid.data_ptr() < end for start, end in _heap),
    }) + "\\n")


def kernel(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory):
    folder = Path(tmp_path_factory.mktemp("forkserver"))
    ws, resolved = make_workspace(folder / "ws")
    log = folder / "process.jsonl"  # outside the workspace, which a run must leave unchanged
    (ws.target_dir(TARGET) / "candidate.py").write_text(REPORTS_ITS_PROCESS.replace("LOG_PATH", repr(str(log))))
    with JudgeProcess(ws, python=python()) as judge:
        yield ws, resolved, judge, log


def run_twice(session, times: int = 2) -> list[dict]:
    ws, resolved, judge, log = session
    log.unlink(missing_ok=True)
    for _ in range(times):
        outcome = run_script(
            ws, f"targets/{TARGET}/candidate.py", python=python(), judge=judge, timeout_s=120, resolved=resolved
        )
        assert outcome.status == "ok", (
            f"{outcome.status} / {outcome.reason}; fork servers: {servers_state()}\n{outcome.stderr_tail[-1500:]}"
        )
    return [json.loads(line) for line in log.read_text().splitlines()]


def servers_state() -> dict[int, str]:
    """Each fork server of this process and its state (R, S, Z... or gone): a worker whose exit status reads -9
    after it reported was killed, or its server died (the status pipe closed); this tells the two apart."""
    states = {}
    for pid in render.contract_module().server_pids():
        try:
            with open(f"/proc/{pid}/stat") as handle:
                states[pid] = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            states[pid] = "gone"
    return states


def test_each_run_is_a_fresh_forked_process_of_its_own_session(session) -> None:
    contract = render.contract_module()
    first, second = run_twice(session)
    servers = contract.server_pids()
    assert first["ppid"] in servers and second["ppid"] in servers  # forked by this orchestrator's server
    assert first["pid"] != second["pid"]
    for seen in (first, second):
        assert seen["sid"] == seen["pid"] == seen["pgid"]  # a session and process group of its own
        assert seen["seen_before"] == 0  # the script's module-level state never reaches another run
        assert seen["cuda_initialized"] is False  # the server never made a CUDA context the child inherits
        assert seen["token"] and seen["fds"][seen["protocol_fd"]].startswith("pipe:")  # the run's own channel
        assert seen["fds"]["0"].startswith("pipe:") and seen["fds"]["1"] != seen["fds"]["2"]
        assert not any(target.startswith("socket:") for target in seen["fds"].values())  # not the server's
    assert first["token"] != second["token"]


def test_a_worker_inherits_the_servers_objects_frozen_out_of_its_collections(session) -> None:
    # gc.freeze() in the server after its imports: a worker's full collections walk only its own objects, not the
    # hundred thousand or more that importing torch made (which would copy every page that holds one)
    for seen in run_twice(session):
        assert seen["frozen"] > 50_000, seen["frozen"]


def test_the_judge_is_forked_from_the_server_too_in_a_session_of_its_own(session) -> None:
    contract = render.contract_module()
    _, _, judge, _ = session
    pid = judge.client.proc.pid
    with open(f"/proc/{pid}/stat") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    ppid, pgid, sid = int(fields[1]), int(fields[2]), int(fields[3])
    assert ppid in contract.server_pids()  # no interpreter of its own: it did not import torch again
    assert sid == pgid == pid
    assert judge.client.wait_ready() and judge.healthy()


def test_the_judge_exits_0_when_its_client_closes_its_stdin() -> None:
    # the end of its job stream is its normal end; 1 is left for a judge that crashed
    contract = render.contract_module()
    judge = contract.Judge(python(), str(render.contract_path()))
    try:
        assert judge.wait_ready()
        judge.proc.stdin.close()
        deadline = time.monotonic() + 60
        while judge.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert judge.proc.returncode == 0, judge.log_tail()
    finally:
        judge.close()


def test_each_run_maps_its_tensors_at_addresses_of_its_own(session) -> None:
    # as an exec'd process's are under ASLR: children of one server would otherwise map a new tensor at the same
    # address every run, and a placement that is slow would be slow for every run of one script (a systematic
    # difference in an A/A verify). Small ones too, and Python objects: they come from the free chunks and the
    # pymalloc pools every child inherits from the server, which each child takes in an order of its own.
    runs = run_twice(session, times=3)
    assert len({seen["big_ptr"] for seen in runs}) == 3, [hex(seen["big_ptr"]) for seen in runs]
    # a reshuffled free list can still hand two runs the same block by chance: at least two addresses in
    # three runs is what a fixed placement never gives
    for key in ("small_ptr", "object_id", "plain_id"):
        assert len({seen[key] for seen in runs}) >= 2, (key, [hex(seen[key]) for seen in runs])


def test_a_worker_takes_blocks_of_a_few_mb_from_the_heap(session) -> None:
    # glibc's default maps each block over 128 KiB afresh until a free raises the threshold, and trims the heap
    # above twice that: a CPU run's first samples then paid page faults its last ones did not (knobs.py,
    # WORKER_MMAP_THRESHOLD_BYTES). The worker fixes both thresholds, so a 4 MiB tensor comes from the heap.
    assert [seen["mid_in_heap"] for seen in run_twice(session)] == [True, True]


def test_holes_left_between_inherited_mappings_are_filled_before_the_pad() -> None:
    # A mapping the server freed leaves a hole at the same address in every child; a new mapping that fits it
    # would land there whatever the pad (the kernel takes the highest gap that fits).
    contract = render.contract_module()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            import ctypes
            import mmap as mmap_module

            libc = ctypes.CDLL(None, use_errno=True)
            block = mmap_module.mmap(-1, 3 << 20, flags=mmap_module.MAP_PRIVATE)
            base = ctypes.addressof(ctypes.c_char.from_buffer(block))
            libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            libc.munmap(base + (1 << 20), 1 << 20)  # a 1 MiB hole between two mappings
            filled = contract.fill_address_holes(libc)
            fresh = mmap_module.mmap(-1, 1 << 20, flags=mmap_module.MAP_PRIVATE)
            where = ctypes.addressof(ctypes.c_char.from_buffer(fresh))
            hole = base + (1 << 20) <= where < base + (2 << 20)
            os.write(write_fd, json.dumps({"filled": filled, "in_hole": hole}).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    os.waitpid(pid, 0)
    seen = json.loads(os.read(read_fd, 1000))
    os.close(read_fd)
    assert seen["filled"] >= 1 and seen["in_hole"] is False


def test_a_killed_server_is_replaced_and_the_next_run_is_clean(session) -> None:
    contract = render.contract_module()
    run_twice(session)
    for pid in contract.server_pids():
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while any(os.path.exists(f"/proc/{pid}") and not zombie(pid) for pid in contract.server_pids()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    first, second = run_twice(session)
    assert first["ppid"] in contract.server_pids() and second["ppid"] == first["ppid"]


def zombie(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as handle:
        return handle.read().rsplit(")", 1)[1].split()[0] == "Z"


def gone(pid: int) -> bool:
    """Exited: reaped, or a zombie."""
    try:
        return zombie(pid)
    except FileNotFoundError:
        return True


def test_a_python_without_torch_is_a_one_line_error_not_a_traceback(tmp_path: Path) -> None:
    contract = render.contract_module()
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n")
    fake.chmod(0o755)
    env = {"PATH": os.environ["PATH"]}
    out_r, out_w = os.pipe()
    try:
        with pytest.raises(OSError, match="fork server (exited|is gone).*No module named 'torch'"):
            contract.spawn_worker(str(fake), str(render.contract_path()), env, out_w, out_w, out_w)
    finally:
        os.close(out_r)
        os.close(out_w)
    result = contract.orchestrate(
        str(make_workspace(tmp_path / "ws")[0].target_dir(TARGET) / "candidate.py"), python=str(fake)
    )
    assert result["status"] == "invalid"
    assert result["reason"].startswith("crashed: cannot start a worker: the fork server")
    assert result["reason"].endswith("No module named 'torch'") and "\n" not in result["reason"]


def test_one_server_per_import_time_environment_and_idle_ones_are_capped() -> None:
    contract = render.contract_module()
    path = str(render.contract_path())
    contract.close_servers()
    base = {**os.environ, "HK_RUN_TOKEN": "a"}
    try:
        first = contract.server_for(python(), path, {**base, "TORCHINDUCTOR_CACHE_DIR": "/tmp/ws_a"})
        # read after import (a workspace's compile cache, the run token): the same server
        assert contract.server_for(python(), path, {**base, "TORCHINDUCTOR_CACHE_DIR": "/tmp/ws_b"}) is first
        assert contract.server_for(python(), path, {**base, "HK_RUN_TOKEN": "b"}) is first
        # read while torch loads: a server of its own
        others = [contract.server_for(python(), path, {**base, "OMP_NUM_THREADS": str(n)}) for n in range(1, 5)]
        assert first not in others and len(set(others)) == 4
        assert len(contract.SERVERS) == contract.MAX_SERVERS  # the least recently used idle one was closed
        assert not first.alive()
        assert first.proc.pid not in contract.server_pids()
    finally:
        contract.close_servers()


# Logs whether torch.compile's machinery was loaded before this script imported anything of it, and which server
# forked it; its kernel is compiled (a CPU target: the warm-up applies).
REPORTS_COMPILE_STATE = """
LOG = LOG_PATH
import json
import os
import sys

import torch

with open(LOG, "a") as _out:
    _out.write(json.dumps({
        "inductor_loaded": "torch._inductor.compile_fx" in sys.modules,
        "server_argv": open(f"/proc/{os.getppid()}/cmdline").read().split("\\0"),
        "server_pid": os.getppid(),
        "cuda_initialized": torch.cuda.is_initialized(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }) + "\\n")


def _rms(x, w, *, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


kernel = torch.compile(_rms, backend="eager")  # dynamo only: this test is about the server
"""


def test_a_compile_warm_server_hands_its_children_a_warmed_torch_compile(tmp_path: Path) -> None:
    ws, resolved = make_workspace(tmp_path / "ws")
    log = tmp_path / "compile.jsonl"
    candidate = ws.target_dir(TARGET) / "candidate.py"
    candidate.write_text(REPORTS_COMPILE_STATE.replace("LOG_PATH", repr(str(log))))
    baseline = ws.target_dir(TARGET) / "baseline.py"
    from hotkernel.run.runner import compile_warm_for

    assert compile_warm_for([baseline, candidate]) is True  # a CPU target, a script that compiles
    assert compile_warm_for([baseline]) is False
    for warm in (True, False):
        with JudgeProcess(ws, python=python(), compile_warm=warm) as judge:
            outcome = run_script(ws, candidate, python=python(), judge=judge, timeout_s=300, resolved=resolved)
        assert outcome.status == "ok", f"{outcome.status} / {outcome.reason}\n{outcome.stderr_tail[-1500:]}"
    warmed, plain = [json.loads(line) for line in log.read_text().splitlines()]
    assert "--compile-warm" in warmed["server_argv"] and warmed["inductor_loaded"] is True
    assert "--compile-warm" not in plain["server_argv"] and plain["inductor_loaded"] is False
    assert warmed["cuda_initialized"] is False and plain["cuda_initialized"] is False
    # a compile-warm server's children see no GPU (so its warm-up may run on a GPU host); a plain one's see the
    # environment as the run has it
    assert warmed["cuda_visible_devices"] == "" and plain["cuda_visible_devices"] == os.environ.get(
        "CUDA_VISIBLE_DEVICES"
    )
    # the warm-up left no thread behind (a compile pool's threads would hold locks no forked child could take)
    assert os_threads(warmed["server_pid"]) == os_threads(plain["server_pid"])


def test_a_compile_warm_server_started_ahead_is_the_one_the_cpu_verify_forks_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync lane starts the CPU compile warm-up with an earlier job (``start_compile_warm_server``); the CPU verify
    after it forks from that very server, warmed, and starts no second one."""
    from hotkernel.run.runner import start_compile_warm_server

    contract = render.contract_module()
    # an import-time variable of this test alone: a server no earlier test started has this key
    monkeypatch.setenv("TORCH_HK_TEST_WARM_AHEAD", str(time.time_ns()))
    ws, resolved = make_workspace(tmp_path / "ws")
    log = tmp_path / "compile.jsonl"
    candidate = ws.target_dir(TARGET) / "candidate.py"
    candidate.write_text(REPORTS_COMPILE_STATE.replace("LOG_PATH", repr(str(log))))
    before = contract.server_pids()
    start_compile_warm_server(ws, python())
    started = contract.server_pids() - before
    assert len(started) == 1  # started at once; it warms up in its own process
    with JudgeProcess(ws, python=python(), compile_warm=True) as judge:
        outcome = run_script(ws, candidate, python=python(), judge=judge, timeout_s=300, resolved=resolved)
    assert outcome.status == "ok", f"{outcome.status} / {outcome.reason}\n{outcome.stderr_tail[-1500:]}"
    seen = json.loads(log.read_text().splitlines()[0])
    assert seen["server_pid"] in started and "--compile-warm" in seen["server_argv"]
    assert seen["inductor_loaded"] is True  # the child inherited the warm-up
    assert contract.server_pids() - before == started  # no second server was started for the verify


def os_threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith("Threads:"))


def test_no_compile_warm_up_where_torch_cuda_could_see_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # dynamo saves the CUDA RNG state around every compile when CUDA is available: a warm-up there initialises
    # CUDA in the server, and every forked child's torch.compile failed ("Cannot re-initialize CUDA in forked
    # subprocess": the CPU target's compile competitor on an H100, 2026-12-06)
    contract = render.contract_module()
    compiled: list[object] = []

    def fake_torch(cuda: str | None, hip: str | None = None) -> SimpleNamespace:
        return SimpleNamespace(version=SimpleNamespace(cuda=cuda, hip=hip), compile=compiled.append)

    monkeypatch.setattr(contract.os.path, "exists", lambda path: path == "/dev/nvidiactl")
    assert contract.gpu_usable(fake_torch("12.8")) and contract.gpu_usable(fake_torch(None, "6.4"))
    assert not contract.gpu_usable(fake_torch(None))  # a CPU build of torch never sees the GPU: it may warm up
    for hidden in ("", "-1", "-1,0"):  # CUDA_VISIBLE_DEVICES that leaves no GPU visible
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", hidden)
        assert not contract.gpu_usable(fake_torch("12.8")), hidden
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert contract.gpu_usable(fake_torch("12.8"))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setattr(contract.os.path, "exists", lambda path: False)
    assert not contract.gpu_usable(fake_torch("12.8"))  # a CUDA build on a host without a GPU driver
    monkeypatch.undo()
    inductor_config = pytest.importorskip("torch._inductor.config")
    monkeypatch.setattr(inductor_config, "compile_threads", inductor_config.compile_threads)  # restored after
    monkeypatch.setattr(contract, "gpu_usable", lambda torch: torch.version.cuda is not None)
    contract.warm_compile(fake_torch("12.8"))
    assert compiled == []  # returned before compiling anything
    contract.warm_compile(fake_torch(None))
    assert compiled == [contract.warm_up_function]


def test_the_compile_warm_up_is_for_cpu_targets_only_and_both_sides_share_it(session) -> None:
    contract = render.contract_module()
    assert contract.wants_compile_warm("cpu", ["x = 1", "kernel = torch.compile(f)"]) is True
    assert contract.wants_compile_warm("cpu", ["@compile\ndef kernel(x): ..."]) is True
    assert contract.wants_compile_warm("cpu", ["kernel = recompiled(f)"]) is False  # a word, not a substring
    # never for CUDA: a forked child cannot use a CUDA driver a warm-up probe initialised in its server
    assert contract.wants_compile_warm("cuda", ["kernel = torch.compile(f)"]) is False
    _, _, judge, _ = session
    judge.prestart()
    before = [spare.proc.pid for spare in judge.spares]
    judge.want_compile_warm(True)  # the spares of a plain server go: the next verify's sides match
    assert judge.compile_warm is True and not judge.spares
    deadline = time.monotonic() + 5
    while not all(gone(pid) for pid in before):
        assert time.monotonic() < deadline, before
        time.sleep(0.02)
    judge.want_compile_warm(False)
