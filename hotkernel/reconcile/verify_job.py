"""The child process of a sync lane: ``python -m hotkernel.reconcile.verify_job '<job JSON>'``.

Runs one verify in the workspace ``HOTKERNEL_WORKSPACE`` names (a lane's private copy of the target) and prints
one JSON line: ``{"result": <VerifyResult>, "facts": <the GPU and CPU it ran on>}``, or ``{"error": "..."}``
(exit 1) when the verify cannot run. The coordinating ``sync`` records it; this process writes no record.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from hotkernel._util.nvml import visible_gpus
from hotkernel._util.procs import TerminationRaises
from hotkernel.errors import HotkernelError
from hotkernel.run.verify import verify
from hotkernel.store.record import cpu_model, gpu_facts
from hotkernel.workspace.paths import find_workspace


def lane_facts(device_kind: str | None) -> dict[str, Any]:
    """The CPU, and for cuda runs the GPU (UUID, driver, clocks, power limit) this process may use."""
    facts: dict[str, Any] = {"cpu": cpu_model()}
    gpus = visible_gpus() if device_kind == "cuda" else []
    if gpus:
        facts.update(gpu_facts(gpus[0].name, gpus[0].uuid))
    return facts


def main(argv: list[str]) -> int:
    """Run the job in ``argv[1]``; print its one JSON line."""
    try:
        job = json.loads(argv[1])
        with TerminationRaises():  # SIGTERM from the lane unwinds through verify: its processes are killed
            ws = find_workspace()
            kwargs: dict[str, Any] = {"n": int(job["rounds"])}
            if job.get("timeout_s") is not None:
                kwargs["timeout_s"] = float(job["timeout_s"])
            result = verify(ws, job["baseline"], job["candidate"], **kwargs)
            reply = {"result": result.model_dump(mode="json"), "facts": lane_facts(result.device_kind)}
    except HotkernelError as err:
        print(json.dumps({"error": str(err)}), flush=True)
        return 1
    except (IndexError, KeyError, TypeError, ValueError) as err:
        print(json.dumps({"error": f"verify_job: a bad job ({type(err).__name__}: {err}); it comes from sync"}))
        return 1
    print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
