#!/bin/bash
# The device command for lab/benchmarks/device/suites.py (KernelBench level 1 on the lent H200, under 6 minutes, or
# SUITES_BUDGET_S + 25 seconds).
# Carry [".whl", "kb"] where .whl/ holds the wheels the device lacks (pydantic, pydantic-core, annotated-types,
# typing-inspection, typing-extensions, ruamel.yaml, filelock, jinja2, markupsafe, typer, click:
# ../shared/device/carry-wheels.sh NAME==VERSION ...) and kb/ a copy of ../shared/kernelbench/level1/*.py
# (never committed). Then, from the repo root:
#   bash lab/benchmarks/device/suites.sh "$OUT"            # results: $OUT/suites.jsonl, summary on stdout
set -u
OUTDIR=${1:?usage: suites.sh OUT_DIR [suites.py options]}
shift
. lab/benchmarks/device/env.sh
export HK_KB_DIR=${HK_KB_DIR:-$PWD/kb}
mkdir -p "$OUTDIR"
gpu_csv "$OUTDIR/gpu.csv" name,driver_version,memory.total,memory.used
BUDGET_S=${SUITES_BUDGET_S:-330}  # the script stops starting verifies after this; timeout is 25 s later
timeout $((BUDGET_S + 25)) python3 lab/benchmarks/device/suites.py "$OUTDIR" --budget-s "$BUDGET_S" "$@" \
  2> "$OUTDIR/suites.err"
echo "suites rc=$?"
tail -5 "$OUTDIR/suites.err"
