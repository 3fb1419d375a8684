"""The fork server: one process of the user's interpreter imports torch once and forks every worker from there.

A worker started with ``python -I hk_contract.py worker`` spends most of a short CPU run on ``import torch``
(0.78-0.88 s of a 1.2 s run on a 2-core box). The server pays that once per orchestrator: it imports torch (and
hashes Triton's sources where Triton is installed), then waits on a socket. For each worker it forks a child,
which starts its own session, takes its stdio and protocol fd from the orchestrator (passed over the socket),
takes the orchestrator's environment for this run, and becomes a worker (``worker_main``). Each run still gets a
fresh process: the child is a copy of a process that never imported a script, never initialised CUDA and never
ran an operator, so its state is the state a new worker has after ``import torch``.

The server reaps its children and sends each one's exit status back on a pipe of that worker. A process a worker
leaves behind is re-parented to the orchestrator (a child subreaper), as before: the server is no subreaper.

A server for CPU targets whose scripts call ``torch.compile`` (``compile_warm``) also compiles one tiny CPU function
before it serves and then resets dynamo, so each child inherits what a process's first compile pays once: the
imports of dynamo and inductor, inductor's probes of the C++ toolchain and the CPU's vector ISA (cached in the
process). The child still compiles its own script (from the workspace's inductor cache). Such a server and its
children see no GPU (``HIDDEN_GPUS``): a CPU target has no use for one. The warm-up never runs in a server for CUDA
targets, nor where torch.cuda can see a GPU (``gpu_usable``): a CUDA context, or a CUDA driver initialised by a
probe (dynamo saves the CUDA RNG state around every compile), cannot be used by a forked child.

A forked child starts by mapping and allocating a random untouched pad (``shift_placement``): children of one
server would otherwise share one address layout, and a placement that is slow for one script would be slow for all
of its runs.

Why not ``multiprocessing.forkserver``: it serves the caller's own interpreter and pickles a function to run,
while the orchestrator may be the torch-free tool in another interpreter and the worker is this one file run
with ``-I`` in the user's; a worker also needs its own session, stdio, protocol fd and exit status.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import importlib.util
import json
import mmap
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from typing import Any

from .hygiene import die_with_parent, kill_processes, tail_of
from .judge import judge_main
from .knobs import (
    FORKED_HEAP_PAD_MAX_BYTES,
    FORKED_MAP_PAD_MAX_PAGES,
    FORKED_OBJECT_PAD_OBJECTS,
    FORKED_SMALL_PAD_CHUNKS,
    FORKED_SMALL_PAD_MAX_BYTES,
    FORKSERVER_FD_ENV,
    FORKSERVER_START_TIMEOUT_S,
    PARENT_PID_ENV,
    PROTOCOL_FD_ENV,
    TOKEN_ENV,
    WORKER_ENV,
    WORKER_MMAP_THRESHOLD_BYTES,
    WORKER_TRIM_THRESHOLD_BYTES,
)
from .worker import worker_main

STATUS = struct.Struct("<q")  # the server writes a worker's pid, then its exit code, on that worker's pipe
RUN_KEYS = (TOKEN_ENV, PROTOCOL_FD_ENV, PARENT_PID_ENV)  # per-run variables, never the server's
# A compile-warm server (CPU targets) and its children run with every GPU hidden, so that its warm-up may run on a
# GPU host too: on an H100 host the CPU target's compile competitor paid the imports of dynamo and inductor (about
# 2.7 s) in every run while a GPU was visible.
HIDDEN_GPUS = {"CUDA_VISIBLE_DEVICES": ""}
ROLE_KEY = "HK_FORKED_ROLE"  # in a fork request's environment: "judge" makes the child a judge, else a worker
# Variables read while torch and its libraries load (the dynamic loader, OpenMP/MKL, torch, CUDA, Triton): a
# server is started per distinct set of them. Every other variable (TORCHINDUCTOR_CACHE_DIR, the run token) is
# read later, so the child simply takes the run's environment; servers are shared across workspaces.
IMPORT_ENV_PREFIXES = (
    "LD_", "OMP_", "KMP_", "GOMP_", "MKL_", "OPENBLAS_", "TORCH_", "PYTORCH_", "CUDA_", "CUBLAS", "CUDNN", "NCCL_",
    "NVIDIA_", "TRITON_", "PYTHON",
)  # fmt: skip
MAX_SERVERS = 4  # a fifth set of import-time variables closes the least recently used idle server
CHILD_FDS = 5  # stdin (read end), stdout, stderr, protocol (write end), status (write end)
SERVERS: dict[tuple[str, str, str, bool], ForkServer] = {}
SERVERS_LOCK = threading.Lock()


class ForkedProcess:
    """A forked worker, seen from the orchestrator the way a ``subprocess.Popen`` is: ``pid``, ``stdin``,
    ``poll()``, ``wait(timeout)``, ``returncode`` (negative: killed by that signal). Safe to use from several
    threads (a retired run is reaped in one while the next run starts)."""

    def __init__(self, pid: int, stdin_fd: int, status_fd: int) -> None:
        self.pid = pid
        self.stdin = os.fdopen(stdin_fd, "wb")
        self.stdout: Any = None  # a judge's replies (its client sets the read end)
        self.status_fd = status_fd
        self.returncode: int | None = None
        self.lock = threading.Lock()

    def poll(self) -> int | None:
        return self._status(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._status(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
        return code

    def _status(self, timeout: float | None) -> int | None:
        with self.lock:
            if self.returncode is not None or self.status_fd < 0:
                return self.returncode
            fd = self.status_fd
        if not select.select([fd], [], [], timeout)[0]:
            return None
        with self.lock:
            if self.returncode is None and self.status_fd >= 0:
                data = read_exactly(fd, STATUS.size)
                # no status: the server died, and its children died with it (PDEATHSIG)
                self.returncode = STATUS.unpack(data)[0] if data else -signal.SIGKILL
            return self.returncode

    def close(self) -> None:
        """Release the status pipe (after the worker was killed: a status never read counts as SIGKILL)."""
        with self.lock:
            if self.status_fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(self.status_fd)
                self.status_fd = -1
            if self.returncode is None:
                self.returncode = -signal.SIGKILL
        with contextlib.suppress(OSError):
            self.stdin.close()


def read_exactly(fd: int, size: int) -> bytes:
    """``size`` bytes from ``fd``, or b"" at end of file."""
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            return b""
        data += chunk
    return data


class ForkServer:
    """Client side of ``python -I hk_contract.py forkserver``, started by this orchestrator."""

    def __init__(self, python: str, contract: str, env: dict[str, str], compile_warm: bool = False) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock = ours
        self.log = tempfile.TemporaryFile()
        server_env = dict(env)
        server_env[FORKSERVER_FD_ENV] = str(theirs.fileno())
        server_env[PARENT_PID_ENV] = str(os.getpid())
        try:
            self.proc = subprocess.Popen(
                [python, "-I", contract, "forkserver", *(["--compile-warm"] if compile_warm else [])],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self.log,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                env=server_env,
            )
        finally:
            theirs.close()
        self.lock = threading.Lock()
        self.forked: list[ForkedProcess] = []

    def fork(self, env: dict[str, str], stdin_r: int, out_fd: int, log_fd: int, protocol_w: int) -> tuple[int, int]:
        """Ask for a worker; ``(pid, status read end)``. Raises OSError, with the server's last words, when it
        is gone or does not fork within FORKSERVER_START_TIMEOUT_S (it imports torch first)."""
        status_r, status_w = os.pipe()
        try:
            with self.lock:
                socket.send_fds(self.sock, [json.dumps(env).encode()], [stdin_r, out_fd, log_fd, protocol_w, status_w])
        except OSError as err:
            os.close(status_r)
            raise OSError(f"the fork server is gone ({err}): {self.log_tail()}") from err
        finally:
            os.close(status_w)
        if not select.select([status_r], [], [], FORKSERVER_START_TIMEOUT_S)[0]:
            os.close(status_r)
            raise OSError(f"the fork server did not fork within {FORKSERVER_START_TIMEOUT_S:.0f} s")
        data = read_exactly(status_r, STATUS.size)
        if not data:
            os.close(status_r)
            raise OSError(f"the fork server exited ({self.proc.poll()}): {self.log_tail()}")
        return STATUS.unpack(data)[0], status_r

    def alive(self) -> bool:
        return self.proc.poll() is None

    def busy(self) -> bool:
        """Some worker it forked has not exited yet (closing the server would kill it)."""
        self.forked = [child for child in self.forked if child.poll() is None]
        return bool(self.forked)

    def log_tail(self, limit: int = 2000) -> str:
        return tail_of(self.log, limit).strip()

    def close(self) -> None:
        """Stop the server; the workers it forked die with it (PDEATHSIG)."""
        with contextlib.suppress(OSError):
            self.sock.close()
        kill_processes({self.proc.pid})
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        with contextlib.suppress(OSError):
            self.log.close()


def server_for(python: str, contract: str, env: dict[str, str], compile_warm: bool = False) -> ForkServer:
    """The running server of this interpreter, contract file (by content), import-time environment and
    ``compile_warm``; started on first use."""
    with open(contract, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    loaded = {name: value for name, value in env.items() if name.startswith(IMPORT_ENV_PREFIXES)}
    key = (python, digest, hashlib.sha256(json.dumps(loaded, sort_keys=True).encode()).hexdigest(), compile_warm)
    with SERVERS_LOCK:
        server = SERVERS.pop(key, None)  # re-inserted last: the dict's order is least recently used first
        if server is not None and not server.alive():
            server.close()
            server = None
        if server is None:
            # WORKER_ENV whoever asks first (a judge's request has no compile-thread setting): a warm-up compile
            # with a pool of compile workers would leave threads whose locks a forked child could never take
            server_env = {**{name: value for name, value in env.items() if name not in RUN_KEYS}, **WORKER_ENV}
            server = ForkServer(python, contract, server_env, compile_warm)
            idle = [other for other, held in SERVERS.items() if not held.busy()]
            for other in idle[: max(0, len(SERVERS) + 1 - MAX_SERVERS)]:
                SERVERS.pop(other).close()
        SERVERS[key] = server
        return server


def server_pids() -> set[int]:
    """The fork servers of this orchestrator (processes it started: never an orphan of a run)."""
    with SERVERS_LOCK:
        return {server.proc.pid for server in SERVERS.values()}


def close_servers() -> None:
    with SERVERS_LOCK:
        while SERVERS:
            SERVERS.popitem()[1].close()


def forkserver_main(argv: list[str]) -> None:
    """``forkserver [--compile-warm]``: import torch (and with ``--compile-warm``, warm torch.compile on the CPU:
    ``warm_compile``), then fork one worker per request until the orchestrator closes the socket. Never imports a
    script; without ``--compile-warm`` it never touches CUDA (a forked child could not use a context made here)."""
    parent = os.environ.get(PARENT_PID_ENV)
    die_with_parent(int(parent) if parent and parent.isdigit() else None)
    sock = socket.socket(fileno=int(os.environ.pop(FORKSERVER_FD_ENV)))
    import torch  # noqa: F401 - the point of this process

    if "--compile-warm" in argv:
        warm_compile(torch)
    elif torch.version.cuda and importlib.util.find_spec("triton") is not None:
        with contextlib.suppress(Exception):  # Triton's cache key hashes its sources: CPU work, no CUDA context
            import triton.runtime.cache as triton_cache

            triton_cache.triton_key()
    # What the imports made, out of the collector's reach (as Python's gc docs advise for a process that forks):
    # else every worker's first full collection walks the whole inherited heap (80 ms with torch imported, each
    # page copied on write), at a moment that differs between scripts (docs/performance.md, ``shift_placement``'s row).
    # Collected first, so only live objects are frozen; done once, so the server's later garbage is collected.
    gc.collect()
    gc.freeze()
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    status_of: dict[int, int] = {}
    while True:
        with contextlib.suppress(InterruptedError):
            readable = select.select([sock, wake_r], [], [])[0]
        if wake_r in readable:
            os.read(wake_r, 4096)
        report_exits(status_of)
        if sock not in readable:
            continue
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 20, CHILD_FDS)
        except OSError:
            message, fds = b"", []
        if not message:
            os._exit(0)  # the orchestrator is gone; the workers follow this process (PDEATHSIG)
        if len(fds) != CHILD_FDS:
            for fd in fds:
                os.close(fd)
            continue
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            become_worker(json.loads(message), fds, [sock.fileno(), wake_r, wake_w, *status_of.values()])
        os.write(fds[-1], STATUS.pack(pid))
        status_of[pid] = fds[-1]
        for fd in fds[:-1]:
            os.close(fd)


def wants_compile_warm(device_kind: str, sources: list[str]) -> bool:
    """Whether a verify's workers come from a server that warmed torch.compile: a CPU target (never CUDA, see the
    module docstring) with a script that names ``compile`` (``torch.compile``, ``@compile``). Both sides of a
    verify use the same kind of server."""
    return device_kind == "cpu" and any(COMPILE_WORD.search(text) for text in sources)


COMPILE_WORD = re.compile(r"\bcompile\b")


def warm_compile(torch: Any) -> None:
    """Compile and call one tiny CPU function, then reset dynamo: the imports of dynamo and inductor and inductor's
    per-process probes (C++ toolchain, vector ISA) are then done in every child. A failure (no C++ compiler, say)
    leaves the child to pay them itself, as without this.

    Not where this torch build can see a GPU (``gpu_usable``): dynamo saves the CUDA RNG state around every compile
    whenever ``torch.cuda.is_available()``, which initialises CUDA in this server, and every forked child's own
    torch.compile then fails with "Cannot re-initialize CUDA in forked subprocess" (seen on an H100, 2026-12-06:
    the CPU target's compile competitor, every run ``invalid``). ``spawn_worker`` hides the GPUs from a compile-warm
    server (``HIDDEN_GPUS``), so on a GPU host it warms up too; this check keeps a server that sees a GPU from
    breaking its children."""
    if gpu_usable(torch):
        return
    with contextlib.suppress(Exception):
        import torch._inductor.config as inductor_config

        inductor_config.compile_threads = 1  # no pool of compile workers: its threads would not survive a fork
        compiled = torch.compile(warm_up_function)
        with torch.no_grad():
            compiled(torch.ones(WARM_UP_ELEMENTS))
    with contextlib.suppress(Exception):
        torch._dynamo.reset()


GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/kfd")  # the NVIDIA driver's control node; ROCm's compute node


def gpu_usable(torch: Any) -> bool:
    """Whether torch.cuda could find a GPU here: a CUDA or ROCm build of torch on a host with a GPU driver's device
    node, unless CUDA_VISIBLE_DEVICES hides every GPU (empty or -1). Asked of /dev and the environment, never of
    CUDA: even ``torch.cuda.is_available()`` initialises the driver in this process, and a forked child cannot use
    a driver initialised before the fork."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip() in ("", "-1"):
        return False
    built = getattr(torch.version, "cuda", None) or getattr(torch.version, "hip", None)
    return bool(built) and any(os.path.exists(node) for node in GPU_DEVICE_NODES)


def warm_up_function(x: Any) -> Any:
    return (x * 2.0).sum()


WARM_UP_ELEMENTS = 64


def report_exits(status_of: dict[int, int]) -> None:
    """Reap every exited child and write its exit code (negative: the signal) to its status pipe."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = status_of.pop(pid, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.write(fd, STATUS.pack(os.waitstatus_to_exitcode(status)))
            os.close(fd)


def become_worker(env: dict[str, str], fds: list[int], server_fds: list[int]) -> None:
    """In the forked child: a session of its own, the run's stdio and protocol fd, the run's environment, none of
    the server's own descriptors (its socket, its wake-up pipe, other workers' status pipes); then the worker.
    Descriptors that torch's libraries opened while the server imported them stay open, as in any process that
    imported torch. Never returns."""
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        stdin_r, out_fd, log_fd, protocol_w, status_w = fds  # received: never 0-2, which the server holds
        for target, fd in enumerate((stdin_r, out_fd, log_fd)):
            os.dup2(fd, target)
        for fd in {stdin_r, out_fd, log_fd, status_w, *server_fds}:
            with contextlib.suppress(OSError):
                os.close(fd)
        env = dict(env)
        role = env.pop(ROLE_KEY, "worker")
        env[PARENT_PID_ENV] = str(os.getppid())
        if role == "judge":  # its replies go to stdout; it has no protocol fd
            os.close(protocol_w)
        else:
            os.set_inheritable(protocol_w, True)
            env[PROTOCOL_FD_ENV] = str(protocol_w)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = [sys.argv[0], role]
        if role == "judge":
            judge_main()
            os._exit(0)  # its stdin closed: the client is done with it (a crash leaves through the finally: 1)
        PLACEMENT_PADS.extend(shift_placement())
        steady_malloc()
        worker_main([])
    finally:
        os._exit(1)


def shift_placement() -> list[Any]:
    """Move where this forked process's later allocations land, by a random number of pages (new mappings) and
    bytes (the malloc heap), and by a random reshuffle of the heap's free chunks (small allocations) and of
    pymalloc's pools (Python objects): untouched pads, so they cost address space, not memory (the reshuffles
    keep about 1 MB of chunks and 0.3 MB of objects). New mappings go to the highest
    free gap that fits, so the gaps between the mappings inherited from the server are filled first
    (``fill_address_holes``): else a mapping that fits one of them would land at the same address in every child
    whose pad did not. The pads are kept for the process's life (``PLACEMENT_PADS``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for _ in range(HOLE_FILL_PASSES):  # a pass's own allocations may sit in a hole and leave it when freed
        if not fill_address_holes(libc):
            break
    draw = int.from_bytes(os.urandom(8), "little")
    region = mmap.mmap(-1, (1 + draw % FORKED_MAP_PAD_MAX_PAGES) * mmap.PAGESIZE, flags=mmap.MAP_PRIVATE)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    pads: list[Any] = [region, libc.malloc(1 + (draw >> 32) % FORKED_HEAP_PAD_MAX_BYTES)]
    # Small allocations come from the free chunks every child inherits from the server's heap, in the same order
    # in every child: a tensor of a few KB of one script then lands at one address in all its runs of one verify,
    # and a slow placement would be a difference between the two sides in every round. Take chunks of random
    # sizes and hand a random half back in a random order, so the free lists of each child differ.
    noise = os.urandom(2 * FORKED_SMALL_PAD_CHUNKS)
    sizes = [
        16 + int.from_bytes(noise[i : i + 2], "little") % FORKED_SMALL_PAD_MAX_BYTES for i in range(0, len(noise), 2)
    ]
    kept, freed = random_half([libc.malloc(size) for size in sizes])
    pads += kept
    for pointer in freed:
        libc.free(pointer)
    # Python's own objects come from pymalloc's pools, which every child inherits too: the same reshuffle there
    # (bytes of 0..207 bytes fill size classes 48..240, plain objects 16 and large ints 32; types with free lists
    # of their own, as lists, tuples, floats and frames, are not moved by this)
    kept, doomed = random_half(
        [
            object() if d < 24 else (1 << 40) + d if d < 48 else bytes(d - 48)
            for d in os.urandom(FORKED_OBJECT_PAD_OBJECTS)
        ]
    )
    pads += kept
    while doomed:  # freed one by one, in the random order
        doomed.pop()
    return pads


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers


def steady_malloc() -> bool:
    """Fixed malloc thresholds for this worker (WORKER_MMAP_THRESHOLD_BYTES, WORKER_TRIM_THRESHOLD_BYTES), where
    the C library is glibc; whether they were set."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(M_MMAP_THRESHOLD, WORKER_MMAP_THRESHOLD_BYTES)) and bool(
        mallopt(M_TRIM_THRESHOLD, WORKER_TRIM_THRESHOLD_BYTES)
    )


def random_half(items: list[Any]) -> tuple[list[Any], list[Any]]:
    """(a random half of ``items`` to keep, the other half in a random order to free): the reshuffle of
    ``shift_placement``, the same for malloc's chunks and for Python's objects."""
    draws = os.urandom(2 * len(items))
    kept: list[Any] = []
    freed: list[Any] = []
    for _order, index, coin in sorted(zip(draws[::2], range(len(items)), draws[1::2], strict=True)):
        (kept if coin & 1 else freed).append(items[index])
    return kept, freed


PROT_NONE, MAP_NORESERVE, MAP_FIXED_NOREPLACE = 0, 0x4000, 0x100000  # Linux's values (x86-64 and arm64 alike)
HOLE_FILL_PASSES = 4
MAX_FILLED_HOLE_BYTES = 64 << 30  # a larger gap is the free area new mappings grow into, not a hole


def fill_address_holes(libc: Any) -> int:
    """Map an inaccessible, unreserved region into every gap between two mappings of this process above its heap
    (up to MAX_FILLED_HOLE_BYTES each; the kernel places nothing over an existing mapping). Returns how many."""
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    spans: list[tuple[int, int, str]] = []
    with open("/proc/self/maps") as handle:
        for line in handle:
            fields = line.split()
            start, end = (int(part, 16) for part in fields[0].split("-"))
            spans.append((start, end, fields[5] if len(fields) > 5 else ""))
    heap_end = max((end for _, end, name in spans if name == "[heap]"), default=0)
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE
    filled = 0
    for (_, below_end, _), (above_start, _, name) in zip(spans, spans[1:], strict=False):
        gap = above_start - below_end
        # below the main stack is where it grows (and its guard gap): never filled
        if below_end < heap_end or name in ("[stack]", "[vsyscall]") or not 0 < gap <= MAX_FILLED_HOLE_BYTES:
            continue
        got = libc.mmap(below_end, gap, PROT_NONE, flags, -1, 0)
        if got == below_end:
            filled += 1
            PLACEMENT_PADS.append(got)
        elif got not in (None, ctypes.c_void_p(-1).value):  # a kernel without MAP_FIXED_NOREPLACE: a mere hint
            libc.munmap(got, gap)
    return filled


PLACEMENT_PADS: list[Any] = []


def forked_env(env: dict[str, str], compile_warm: bool) -> dict[str, str]:
    """The environment a worker or judge is forked with: a compile-warm server and its children see no GPU."""
    return {**env, **HIDDEN_GPUS} if compile_warm else env


def worker_env() -> dict[str, str]:
    """The environment a ``Worker`` of this process asks its fork server for (its token aside)."""
    return {**os.environ, **WORKER_ENV}


def prestart_server(python: str, contract: str, compile_warm: bool = False) -> None:
    """Start, without waiting for its warm-up, the fork server that a ``Worker(python, contract, compile_warm)`` of
    this process will fork from, keyed as that worker asks for it."""
    server_for(python, contract, forked_env(worker_env(), compile_warm), compile_warm)


def spawn_worker(
    python: str,
    contract: str,
    env: dict[str, str],
    out_fd: int,
    log_fd: int,
    protocol_w: int,
    compile_warm: bool = False,
) -> ForkedProcess:
    """A worker (a judge where ``env[ROLE_KEY]`` says so) forked by the server for ``(python, contract, env,
    compile_warm)``; one retry when that server has died. A compile-warm server and its workers see no GPU."""
    env = forked_env(env, compile_warm)
    stdin_r, stdin_w = os.pipe()
    try:
        server = server_for(python, contract, env, compile_warm)
        try:
            pid, status_r = server.fork(env, stdin_r, out_fd, log_fd, protocol_w)
        except OSError:
            if server.alive():
                raise
            server = server_for(python, contract, env, compile_warm)  # killed since its last fork: a new one
            pid, status_r = server.fork(env, stdin_r, out_fd, log_fd, protocol_w)
    except BaseException:
        os.close(stdin_w)
        raise
    finally:
        os.close(stdin_r)
    child = ForkedProcess(pid, stdin_w, status_r)
    server.forked.append(child)
    return child
