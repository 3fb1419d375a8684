"""The kernel-speedrun loop on the H200, through hotkernel's own CLI (skills/kernel-speedrun/SKILL.md).

Usage (device, repo root = the workspace): python3 lab/benchmarks/device/speedrun.py TRIAGE.jsonl LOG_DIR TARGET...

For each target: roofline of its flops/bytes, bench the baseline (the number to beat), then one variant at a
time from lab/speedrun/<target>/ (best triage time first, at most MAX_TRIES): write its candidate file
(lab/speedrun/check_variants.py `candidate_source`: the idea module at the variant's parameters) over
targets/<t>/candidate.py,
`hotkernel verify -n 7`, `hotkernel disasm` after the first compile, `hotkernel record` with an honest `who`,
keep it only when record says it beats the best, else revert; stop after three misses in a row or within 5% of
the floor. A target left with no kept candidate is synced (untouched candidate) so the lock is complete.
Every command's output is kept under LOG_DIR; the time budget stops the loop cleanly.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "lab" / "speedrun"))

import check_variants as cv  # noqa: E402

import hotkernel.manifest as hm  # noqa: E402
from hotkernel.insight.disasm import triton_cache_dirs  # noqa: E402

MAX_TRIES = int(os.environ.get("HK_MAX_TRIES", "2"))
BUDGET_S = float(os.environ.get("HK_BUDGET_S", "500"))
N_ROUNDS = 7
T0 = time.monotonic()


def hk(log: Path, name: str, *args: str, timeout: float = 300) -> tuple[int, str]:
    """Run `python3 -m hotkernel ARGS`, keep stdout/stderr under LOG_DIR/<name>.{out,err}."""
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "hotkernel", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)
    (log / f"{name}.out").write_text(proc.stdout)
    if proc.stderr:
        (log / f"{name}.err").write_text(proc.stderr)
    with (log / "steps.txt").open("a") as steps:
        steps.write(f"$ hotkernel {' '.join(args)}\n# rc={proc.returncode} wall={time.monotonic() - t0:.1f}s\n")
    return proc.returncode, proc.stdout


def main() -> None:
    triage_path, log_root, targets = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    triage: dict[str, list[tuple[float, str]]] = {}
    for line in triage_path.read_text().splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if row.get("ok") and row.get("ms") and row.get("variant") != "baseline":
            triage.setdefault(row["target"], []).append((row["ms"], row["variant"]))
    manifest = {}
    loaded = hm.load_manifest(ROOT / "hotkernel.yaml")
    for target in targets:
        manifest[target] = hm.resolved_target(loaded, target)
    for target in targets:
        log = log_root / target
        log.mkdir(parents=True, exist_ok=True)
        spec = manifest[target]
        candidate = ROOT / "targets" / target / "candidate.py"
        hk(log, "roofline", "roofline", "--flops", str(spec.get("flops") or 0), "--bytes", str(spec["bytes"]),
           "--json")
        hk(log, "bench_baseline", "bench", f"targets/{target}/baseline.py", "-n", "3", "--json")
        kept = candidate.read_text()
        misses = 0
        for tries, (triage_ms, variant) in enumerate(sorted(triage.get(target, []))[:MAX_TRIES]):
            if time.monotonic() - T0 > BUDGET_S:
                (log / "steps.txt").open("a").write("# budget reached: stopping\n")
                break
            source = cv.candidate_source(target, variant)
            candidate.write_text(source)
            tag = f"{tries}_{variant}"
            t0 = time.monotonic()
            rc, out = hk(log, f"verify_{tag}", "verify", f"targets/{target}/baseline.py",
                         f"targets/{target}/candidate.py", "-n", str(N_ROUNDS), "--json", timeout=400)
            verify_s = time.monotonic() - t0
            (log / f"verify_{tag}.json").write_text(out)
            if tries == 0:  # read the machine code after the first compile
                jitted = re.findall(r"@triton\.jit[^\n]*\n(?:@[^\n]*\n)*def (\w+)", source)
                # the kernels of this source that the Triton cache holds: not the @triton.jit helpers they call,
                # nor a kernel of the module that this variant never launches
                cached = {p.stem for d in triton_cache_dirs() if d.is_dir() for p in d.glob("*/*.cubin")}
                launched = [name for name in jitted if name in cached]
                for kernel_name in launched[:2]:
                    hk(log, f"disasm_{tag}_{kernel_name}", "disasm", "triton-cache", "--kernel", kernel_name,
                       "--max-lines", "60", "--json")
            note = f"{variant} (triage {triage_ms * 1e3:.1f} us): {cv.variant_hypothesis(target, variant)[:200]}"
            rc, rec = hk(log, f"record_{tag}", "record", target, str(log / f"verify_{tag}.json"),
                         "--who", cv.variant_who(target, variant), "--note", note, "--json")
            try:
                result = json.loads(rec)
            except json.JSONDecodeError:
                result = {}
            with (log / "loop.jsonl").open("a") as loop:
                row = {"target": target, "variant": variant, "verify_wall_s": round(verify_s, 1),
                       "verdict": result.get("verdict"), "speedup": result.get("speedup"),
                       "beats_best": result.get("beats_best"), "record": result.get("path")}
                loop.write(json.dumps(row) + "\n")
            if result.get("beats_best"):
                kept, misses = candidate.read_text(), 0
            else:
                candidate.write_text(kept)  # revert: keep only what beats the best
                misses += 1
            if misses >= 3:
                break
    # Targets with no kept candidate: record the untouched one so hotkernel.lock covers every target.
    if time.monotonic() - T0 < BUDGET_S + 60:
        hk(log_root, "sync_rest", "sync", *targets, "-n", str(N_ROUNDS), "--json", timeout=600)
    hk(log_root, "plan_after", "plan", "--json")
    hk(log_root, "leaderboard_check", "leaderboard", "--check")


if __name__ == "__main__":
    main()
