"""How long the MCP server takes to answer, next to how long the MCP SDK alone takes to import.

    python lab/benchmarks/server_startup.py [--repeat 7]

Prints the median wall time of (1) ``python -c "from mcp.server import MCPServer"`` and (2) starting
``python -m hotkernel serve`` until its answer to ``initialize`` arrives (and to ``tools/list``), and the
difference (2) - (1). The budget is 0.3 s over the SDK's own import time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "server_startup", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def sdk_import_s() -> float:
    """Wall seconds for a fresh interpreter to import the SDK's server class and exit."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from mcp.server import MCPServer"], check=True)
    return time.perf_counter() - start


def server_answer_s(workspace: str) -> tuple[float, float, int]:
    """(seconds to the initialize answer, seconds to the tools/list answer, number of tools)."""
    env = dict(os.environ, HOTKERNEL_WORKSPACE=workspace)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hotkernel", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=workspace,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        json.loads(proc.stdout.readline())
        first = time.perf_counter() - start
        proc.stdin.write((json.dumps(INITIALIZED) + "\n" + json.dumps(LIST_TOOLS) + "\n").encode())
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        listed = time.perf_counter() - start
        return first, listed, len(answer["result"]["tools"])
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each measurement (median reported)")
    args = parser.parse_args()
    sdk_import_s()  # warm the file cache once for both
    with tempfile.TemporaryDirectory() as workspace:
        server_answer_s(workspace)
        sdk = [sdk_import_s() for _ in range(args.repeat)]
        runs = [server_answer_s(workspace) for _ in range(args.repeat)]
    sdk_s = statistics.median(sdk)
    first_s = statistics.median(r[0] for r in runs)
    listed_s = statistics.median(r[1] for r in runs)
    print(f"python {sys.version.split()[0]} on {os.cpu_count()} cores, median of {args.repeat}")
    print(f"MCP SDK import (from mcp.server import MCPServer): {sdk_s:.3f} s")
    overhead = first_s - sdk_s
    print(f"hotkernel serve -> initialize answered:           {first_s:.3f} s  (+{overhead:.3f} s over SDK)")
    print(f"hotkernel serve -> tools/list answered ({runs[0][2]} tools): {listed_s:.3f} s")
    print(f"budget: +0.300 s over the SDK import: {'met' if overhead <= 0.3 else 'EXCEEDED'}")


if __name__ == "__main__":
    main()
