"""How often identical code was called `faster`, and crowned, on real runs: every committed A/A verify.

    python lab/benchmarks/crown_real.py [ROOT]

``ROOT`` (default: this repository) is searched for real A/A verifies, each counted once:

* **records** whose candidate is the untouched one (``who`` starts with ``hotkernel (generated: the untouched
  candidate``: it calls the baseline), under ``ROOT/results/`` and inside every ``*.tar.gz`` under
  ``ROOT/lab/benchmarks/evidence/`` (the KernelBench level-1 and level-3 syncs' records); a record whose per-round
  times repeat another's (``hotkernel.store.scan.run_key``) is the same run and counts once;
* **verify JSON logs** under ``ROOT/lab/benchmarks/evidence/``: a ``*.json`` verify result whose baseline and
  candidate sha256 are equal (``verdict/aa_*.json``), and every ``*.jsonl`` line that is an A/A step (``"kind":
  "aa"`` or ``"step": "aa"``: KernelBench import and own-shape A/A, GPU MODE A/A, the contract's A/A, the CPU
  A/A runs of ``cpu_aa_rate.py``); the device of a line is its own ``device`` field where it has one, else the one
  its path names (``h100`` or ``h200``); a line with neither is skipped and reported.

Every A/A verify and its verdict are counted; the false-`faster` rate is over the verifies with a timing verdict
(``faster``, ``slower`` or ``inconclusive``), with a one-sided 95% Clopper-Pearson upper bound
(``crown_sim.upper_bound``). A pair is two A/A verifies of the same target and shapes on the same device; it is
crowned when the board's confirmation code (``hotkernel.store.rows.mark_best``, as ``crown_sim.crowned`` uses
it) confirms the two and marks one best. With N pairs and none crowned the bound is about 3/N: real runs bound
the crowning rate only as far as their number allows.
"""

from __future__ import annotations

import itertools
import json
import sys
import tarfile
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crown_sim import board_crowns, upper_bound  # noqa: E402

from hotkernel.store.scan import device_of, load_record, run_key  # noqa: E402

UNTOUCHED = "hotkernel (generated: the untouched candidate"
TIMED = ("faster", "slower", "inconclusive")
DEVICES = {"h100": "NVIDIA H100 80GB HBM3", "h200": "NVIDIA H200"}


@dataclass(frozen=True)
class Verify:
    """One real A/A verify: where it was found, what it measured and what the rule said."""

    source: str
    target: str
    device: str
    shapes: str
    verdict: str
    speedup: float | None
    interval: tuple[float, float] | None


def _interval(value: object) -> tuple[float, float] | None:
    return (float(value[0]), float(value[1])) if isinstance(value, list) and len(value) == 2 else None


def _records(files: list[tuple[str, Path]]) -> list[Verify]:
    found: list[Verify] = []
    seen: set = set()
    for source, path in files:
        try:
            record = load_record(path)
        except Exception:  # a JSON file that is not a record (a tarball may hold other files)
            continue
        if record is None or record.role != "candidate" or not (record.who or "").startswith(UNTOUCHED):
            continue
        key = run_key(record)
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        result = record.result
        found.append(
            Verify(
                source=source,
                target=record.target,
                device=device_of(record),
                shapes=json.dumps((result.contract or {}).get("shapes"), sort_keys=True),
                verdict=result.verdict,
                speedup=result.speedup,
                interval=_interval(result.interval),
            )
        )
    return found


def _device(path: str) -> str | None:
    hits = [name for key, name in DEVICES.items() if key in path.lower()]
    return hits[0] if len(hits) == 1 else None


def _logs(evidence: Path, root: Path, skipped: list[str]) -> list[Verify]:
    found: list[Verify] = []
    for path in sorted(evidence.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError):
            continue
        if not isinstance(data, dict) or data.get("kind") == "record" or "verdict" not in data:
            continue
        sides = [data.get(side) for side in ("baseline", "candidate")]
        shas = [side.get("sha256") for side in sides if isinstance(side, dict)]
        if len(shas) != 2 or not shas[0] or shas[0] != shas[1]:
            continue
        found.append(
            Verify(
                source=str(path.relative_to(root)),
                target=str(data.get("target")),
                device=str(data.get("device")),
                shapes=json.dumps((data.get("contract") or {}).get("shapes"), sort_keys=True),
                verdict=str(data["verdict"]),
                speedup=data.get("speedup"),
                interval=_interval(data.get("interval")),
            )
        )
    for path in sorted(evidence.rglob("*.jsonl")):
        rel = str(path.relative_to(root))
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if not isinstance(row, dict) or not (row.get("kind") == "aa" or row.get("step") == "aa"):
                continue
            if not row.get("verdict"):
                skipped.append(f"{rel}: {row.get('target')}: no verdict")
                continue
            device = row.get("device") or _device(rel)  # a line naming its device (cpu_aa_rate.py), else the path
            if device is None:
                skipped.append(f"{rel}: {row.get('target')}: no device in the path")
                continue
            found.append(
                Verify(
                    source=rel,
                    target=str(row.get("target")),
                    device=device,
                    shapes=json.dumps(row.get("shapes"), sort_keys=True),
                    verdict=str(row["verdict"]),
                    speedup=row.get("speedup"),
                    interval=_interval(row.get("interval")),
                )
            )
    return found


def crowned(first: Verify, second: Verify) -> bool:
    """Whether the board crowns two verifies of the same files (``crown_sim.board_crowns``: ``mark_best``)."""
    return board_crowns([(v.verdict, v.speedup, *(v.interval or (None, None))) for v in (first, second)])


def scan(root: Path) -> tuple[list[Verify], list[str]]:
    """Every real A/A verify under ``root`` and the A/A lines skipped (no verdict, no device)."""
    evidence = root / "lab" / "benchmarks" / "evidence"
    skipped: list[str] = []
    files = [(str(p.relative_to(root)), p) for p in sorted((root / "results").rglob("*.json"))]
    with tempfile.TemporaryDirectory() as tmp:
        for index, tarball in enumerate(sorted(evidence.rglob("*.tar.gz"))):
            dest = Path(tmp) / str(index)
            with tarfile.open(tarball) as archive:
                members = [m for m in archive.getmembers() if m.isfile() and m.name.endswith(".json")]
                archive.extractall(dest, members=members, filter="data")
            files += [(f"{tarball.relative_to(root)}:{m.name}", dest / m.name) for m in members]
        verifies = _records(files)
    return verifies + _logs(evidence, root, skipped), skipped


def main(argv: list[str]) -> None:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[2]
    verifies, skipped = scan(root)
    by_source = Counter(v.source.split(":")[0].rsplit("/", 1)[0] for v in verifies)
    print(f"A/A verifies: {len(verifies)}")
    for source, count in sorted(by_source.items()):
        print(f"  {source}: {count}")
    for source, count in sorted(Counter(line.split(": ", 1)[0] for line in skipped).items()):
        print(f"  skipped, A/A lines without a verdict or device: {source}: {count}")
    verdicts = Counter(v.verdict for v in verifies)
    print("verdicts: " + ", ".join(f"{name} {count}" for name, count in sorted(verdicts.items())))
    devices = Counter(v.device for v in verifies)
    print("devices: " + ", ".join(f"{name} {count}" for name, count in sorted(devices.items())))
    timed = [v for v in verifies if v.verdict in TIMED]
    false_faster = [v for v in timed if v.verdict == "faster"]
    for v in false_faster:
        print(f"  faster: {v.source} {v.target} {v.speedup} {v.interval}")
    n, k = len(timed), len(false_faster)
    bound = upper_bound(k, n) if n else 1.0
    print(f"false faster: {k} of {n} timed A/A verifies, rate at most {bound:.4g} (one-sided 95% Clopper-Pearson)")
    groups: dict[tuple[str, str, str], list[Verify]] = {}
    for v in verifies:
        groups.setdefault((v.target, v.device, v.shapes), []).append(v)
    pairs = [pair for same in groups.values() for pair in itertools.combinations(same, 2)]
    crowned_pairs = [pair for pair in pairs if crowned(*pair)]
    for first, second in crowned_pairs:
        print(f"  crowned: {first.source} {second.source} {first.target}")
    bound = upper_bound(len(crowned_pairs), len(pairs)) if pairs else 1.0
    print(
        f"pairs of the same target, shapes and device: {len(pairs)} in {sum(len(s) > 1 for s in groups.values())} "
        f"groups; crowned {len(crowned_pairs)}, rate at most {bound:.4g} (one-sided 95% Clopper-Pearson; "
        f"goal 1e-4: {'met' if bound <= 1e-4 else 'not bounded this far by these runs'})"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
