#!/bin/bash
# `hotkernel verify -n 7` of a target's untouched-vs-kept candidate from the CLI, three times in a row (the first
# pays the cold imports; the second and third are the warm figure), each with its wall time and the JSON.
# Usage (device, repo root, after `. lab/benchmarks/device/env.sh`): bash lab/benchmarks/device/verify_warm.sh OUT [TARGET]
set -u
OUT=${1:?usage: verify_warm.sh OUT [TARGET]}; T=${2:-rmsnorm}
mkdir -p "$OUT"
for i in 1 2 3; do
  t0=$(date +%s%N)
  python3 -m hotkernel verify -n 7 --json "targets/$T/baseline.py" "targets/$T/candidate.py" > "$OUT/verify_$i.json" \
    2> "$OUT/verify_$i.err"
  rc=$?
  echo "verify $T run $i rc=$rc wall_ms=$(( ($(date +%s%N) - t0) / 1000000 ))" | tee -a "$OUT/walls.txt"
done
python3 - "$OUT" <<'PY'
import json, sys
for i in (1, 2, 3):
    try:
        d = json.load(open(f"{sys.argv[1]}/verify_{i}.json"))
    except Exception as err:
        print(i, "unreadable:", err); continue
    print(i, d.get("verdict"), d.get("speedup"), d.get("interval"), d.get("rounds_completed"), d.get("stopped"))
PY
