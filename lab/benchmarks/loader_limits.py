"""How fast the manifest loader refuses hostile input (goals, not tests: the tests check what is refused and how).

Times, on this machine, each hostile manifest of ``tests/manifest/test_loader_hardening.py`` (goal: under 1.5 s of
CPU time each), a manifest of 100,000 values against one just under ``MAX_NODES`` (goal: refused in under 1.5 times
the CPU time of the load at the limit, plus 0.1 s: the parse stops at the limit), a 64 MiB file (goal: refused in
under 1 s) and ``hotkernel plan`` end to end on four of the hostile manifests (goal: under 2 s each). Prints every
number; exits 1 when a goal is missed.

    python lab/benchmarks/loader_limits.py
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def hardening_cases():  # type: ignore[no-untyped-def]
    """The test module (its HOSTILE cases, HEAD and the 100-values-a-line manifest builder)."""
    path = ROOT / "tests" / "manifest" / "test_loader_hardening.py"
    spec = importlib.util.spec_from_file_location("loader_hardening_cases", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_seconds(call) -> float:  # type: ignore[no-untyped-def]
    start = time.process_time()
    try:
        call()
    except Exception:  # noqa: BLE001 - every case is refused; only its cost is measured here
        pass
    return time.process_time() - start


def main() -> int:
    from hotkernel.manifest import load_manifest, load_manifest_text
    from hotkernel.manifest.load import MAX_NODES

    cases = hardening_cases()
    missed = []
    for name, (text, _line, _words) in cases.HOSTILE.items():
        spent = cpu_seconds(lambda text=text: load_manifest_text(text, check_files=False))
        print(f"{name}: {spent:.3f} s CPU (goal < 1.5)")
        missed += [name] if spent >= 1.5 else []
    under = (MAX_NODES - 11) // 102
    at_limit = cpu_seconds(lambda: load_manifest_text(cases._values(under), check_files=False))
    refused = cpu_seconds(lambda: load_manifest_text(cases._values(1000), check_files=False))
    print(f"100,000 values refused in {refused:.3f} s CPU; a manifest at the limit loads in {at_limit:.3f} s")
    missed += ["MAX_NODES"] if refused >= 1.5 * at_limit + 0.1 else []
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "hotkernel.yaml"
        with open(big, "w", encoding="utf-8") as handle:
            handle.write(cases.HEAD + "#" * (64 << 20))
        start = time.perf_counter()
        cpu_seconds(lambda: load_manifest(big))
        spent = time.perf_counter() - start
        print(f"64 MiB file refused in {spent:.3f} s (goal < 1)")
        missed += ["64 MiB"] if spent >= 1.0 else []
        for name in ("alias bomb", "5 MB comment line", "5,000-deep flow list", "atol .inf"):
            big.write_text(cases.HOSTILE[name][0], encoding="utf-8")
            env = {**os.environ, "HOTKERNEL_WORKSPACE": tmp}
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "hotkernel", "plan"], cwd=tmp, env=env, capture_output=True)
            spent = time.perf_counter() - start
            print(f"plan on {name}: {spent:.2f} s (goal < 2)")
            missed += [f"plan {name}"] if spent >= 2.0 else []
    print("missed: " + ", ".join(missed) if missed else "every goal met")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
