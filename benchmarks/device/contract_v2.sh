#!/bin/bash
# The device command for benchmarks/device/contract_v2.py (contract v2 on the lent H200, ~9 minutes).
# Carry [".whl", "kb"] where .whl/ holds the wheels the device lacks (pydantic, pydantic-core, annotated-types,
# typing-inspection, typing-extensions, ruamel.yaml, filelock: ../shared/device/carry-wheels.sh NAME==VERSION ...)
# and kb/ a copy of ../shared/kernelbench/level1/*.py (never committed). Then, from the repo root:
#   bash benchmarks/device/contract_v2.sh "$OUT"            # results: $OUT/contract_v2.jsonl (+ adversarial_gpu.jsonl)
set -u
OUTDIR=${1:?usage: contract_v2.sh OUT_DIR [contract_v2.py options]}
shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HOTKERNEL_PYTHON=python3 HK_KB_DIR=${HK_KB_DIR:-$PWD/kb}
mkdir -p "$OUTDIR"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv > "$OUTDIR/gpu.csv" 2>&1
timeout 570 python3 benchmarks/device/contract_v2.py "$OUTDIR" --budget-s 540 "$@" 2> "$OUTDIR/contract_v2.err"
echo "contract_v2 rc=$?"
tail -5 "$OUTDIR/contract_v2.err"
