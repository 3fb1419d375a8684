#!/bin/bash
# The device command for lab/benchmarks/device/contract_v2.py (contract v2 on the lent H200, ~9 minutes).
# Carry [".whl", "kb"] where .whl/ holds the wheels the device lacks (pydantic, pydantic-core, annotated-types,
# typing-inspection, typing-extensions, ruamel.yaml, filelock: ../shared/device/carry-wheels.sh NAME==VERSION ...)
# and kb/ a copy of ../shared/kernelbench/level1/*.py (never committed). Then, from the repo root:
#   bash lab/benchmarks/device/contract_v2.sh "$OUT"            # results: $OUT/contract_v2.jsonl (+ adversarial_gpu.jsonl)
set -u
OUTDIR=${1:?usage: contract_v2.sh OUT_DIR [contract_v2.py options]}
shift
. lab/benchmarks/device/env.sh
export HK_KB_DIR=${HK_KB_DIR:-$PWD/kb}
mkdir -p "$OUTDIR"
gpu_csv "$OUTDIR/gpu.csv" name,driver_version,memory.total,memory.used
timeout 570 python3 lab/benchmarks/device/contract_v2.py "$OUTDIR" --budget-s 540 "$@" 2> "$OUTDIR/contract_v2.err"
echo "contract_v2 rc=$?"
tail -5 "$OUTDIR/contract_v2.err"
