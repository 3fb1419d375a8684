"""Summarize verifies.tar.gz: per candidate (wrapper = the old rendered `def kernel` that calls the baseline,
direct = `kernel = _baseline_kernel`), each verify's verdict and interval, then the median point estimate.
Run: python summarize.py (from this folder)."""

import json
import re
import statistics
import tarfile

with tarfile.open("verifies.tar.gz") as tar:
    runs = {m.name: json.load(tar.extractfile(m)) for m in tar.getmembers()}
for side in ("candidate", "direct"):
    points = []
    for i in range(1, 9):
        r = runs[f"v_{side}_{i}.json"]
        m = re.search(r"([0-9.]+)x \[([0-9.]+), ([0-9.]+)\]", r["reason"])
        points.append(float(m.group(1)))
        print(side, i, r["verdict"], m.group(0), "rounds", r["rounds_completed"])
    print(side, "median", round(statistics.median(points), 4), "mean", round(statistics.mean(points), 4))
