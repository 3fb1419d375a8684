"""The CPU compile warm-up started ahead of the verify that needs it (``CompileWarmUp``), for ``sync``."""

from __future__ import annotations

import os

from hotkernel.run import render
from hotkernel.run.runner import use_compile_cache
from hotkernel.workspace.paths import Workspace


class CompileWarmUp:
    """Starts ahead the fork server that a CPU verify of ``torch.compile`` scripts forks from (``compile_warm``).
    Its warm-up (the imports of dynamo and inductor, inductor's probes of the C++ toolchain, one compile) took about
    27 s on an H100 host's CPU with the workspace's inductor cache empty, while nothing else ran (2026-12-06,
    docs/performance.md). A sync starts it while no run is in flight, before CUDA
    verifies, so it warms up beside GPU work; ``wait`` blocks until it has, and comes before any CPU verify, so no
    CPU timing overlaps it. The CPU compile verify then forks from this server: ``server_for`` keys a server on the
    interpreter, the contract and the import-time environment, the same here. A server that fails to start is
    left to that verify, which starts its own and says why.

    Started in the calling thread, which must outlive it: a fork server dies with the thread that started it
    (``die_with_parent``: PR_SET_PDEATHSIG follows the thread), so one started from a short-lived thread would be
    gone before the verify asks for it."""

    def __init__(self, ws: Workspace, python: str) -> None:
        use_compile_cache(ws)
        self.python = str(python)
        self.contract = render.contract_module()
        self.contract_file = str(render.contract_path())
        env = {**os.environ, **self.contract.WORKER_ENV, **self.contract.HIDDEN_GPUS}  # as ``spawn_worker`` keys it
        self.server = self.contract.server_for(self.python, self.contract_file, env, True)

    def wait(self) -> None:
        """Return once the server has warmed up: its first fork waits for that (the forked worker is not needed)."""
        try:
            self.contract.Worker(self.python, self.contract_file, True).close()
        except Exception:  # noqa: BLE001, S110 - the verify that needs the server starts it again and reports
            pass
