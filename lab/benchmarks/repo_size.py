"""What a clone holds and what the package ships: tracked bytes by top folder (``git ls-files``), the product's
share, and the file lists of the wheel and the sdist by top folder (``python -m build --sdist --wheel`` into a
scratch folder).

Usage: python lab/benchmarks/repo_size.py > lab/benchmarks/evidence/performance/repo_size_<date>.txt
"""

from __future__ import annotations

import collections
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("hotkernel", "templates", "schemas", "tests", "docs", "skills", ".claude-plugin")


def tracked() -> dict[str, tuple[int, int]]:
    """{top folder: (files, bytes)} of the tracked files; root files under ``(root files)``."""
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    sizes: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for raw in filter(None, names):
        name = raw.decode()
        path = ROOT / name
        if not path.is_file():
            continue
        top = name.split("/", 1)[0] if "/" in name else "(root files)"
        sizes[top][0] += 1
        sizes[top][1] += path.stat().st_size
    return {top: (files, size) for top, (files, size) in sizes.items()}


def built() -> list[str]:
    """One line per built artefact: its name, file count and files by top folder."""
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", out],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        lines = []
        for artefact in sorted(Path(out).iterdir()):
            if artefact.suffix == ".whl":
                names = [n for n in zipfile.ZipFile(artefact).namelist() if not n.endswith("/")]
                tops = collections.Counter(n.split("/", 1)[0] for n in names)
                lines.append(f"wheel {artefact.name} {len(names)} files {dict(tops)}")
            else:
                with tarfile.open(artefact) as tar:
                    names = [m.name.split("/", 1)[1] for m in tar.getmembers() if m.isfile()]
                tops = collections.Counter(n.split("/", 1)[0] for n in names)
                lines.append(f"sdist {artefact.name} {len(names)} files {dict(tops)}")
        return lines


def main() -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"# commit {commit.strip()}, {now}: tracked bytes by top folder (git ls-files), then the built file lists")
    sizes = tracked()
    total_files = sum(f for f, _ in sizes.values())
    total = sum(b for _, b in sizes.values())
    for top, (files, size) in sorted(sizes.items(), key=lambda item: -item[1][1]):
        print(f"{top:<20} {files:6d} files {size / 1e6:9.2f} MB")
    print(f"total {total_files} {total / 1e6:.2f} MB")
    product = sum(sizes.get(top, (0, 0))[1] for top in PRODUCT)
    print(f"product ({' '.join(PRODUCT)}) {product / 1e6:.2f} MB = {100 * product / total:.1f}%")
    for line in built():
        print(line)


if __name__ == "__main__":
    main()
