"""Merge the records a device call made into this workspace: the new ``results/`` files of one device, their entries
in the lock's records index, and the lock's per-device target and competitor entries for that device. Nothing else
of the device's copy is taken (its lock may predate a local rewrite of ``results/``). Then run ``hotkernel
leaderboard``.

Usage: python lab/benchmarks/merge_device_records.py RECORDS_TAR_GZ "NVIDIA H100 80GB HBM3"
"""

from __future__ import annotations

import hashlib
import json
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main(tar_path: str, device: str) -> None:
    with tarfile.open(tar_path) as tar:
        theirs = json.load(tar.extractfile("hotkernel.lock"))
        lock_path = ROOT / "hotkernel.lock"
        ours = json.loads(lock_path.read_text())
        added = []
        for section in ("targets", "competitors"):
            for target, by_key in theirs.get(section, {}).items():
                entries = [(by_key, ours.setdefault(section, {}).setdefault(target, {}))]
                if section == "competitors":
                    entries = [(inner, ours[section][target].setdefault(name, {})) for name, inner in by_key.items()]
                for source, dest in entries:
                    entry = source.get(device)
                    if entry is None or entry["record"] in ours["records"]:
                        continue
                    data = tar.extractfile(entry["record"]).read()
                    digest = hashlib.sha256(data).hexdigest()
                    if theirs["records"].get(entry["record"]) != digest:
                        raise SystemExit(f"{entry['record']}: its bytes do not match the device lock's index")
                    dest[device] = entry
                    added.append(entry["record"])
        # every record of this device the device indexed and we lack (the first verify a confirmation refers to)
        for path, digest in theirs["records"].items():
            if path in ours["records"]:
                continue
            data = tar.extractfile(path).read()
            if device not in data.decode("utf-8", "replace"):
                continue
            if hashlib.sha256(data).hexdigest() != digest:
                raise SystemExit(f"{path}: its bytes do not match the device lock's index")
            target = ROOT / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            ours["records"][path] = digest
            added.append(path)
    lock_path.write_text(json.dumps(ours, indent=2, sort_keys=True) + "\n")
    for path in sorted(set(added)):
        print(path)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
