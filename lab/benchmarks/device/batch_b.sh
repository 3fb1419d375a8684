#!/bin/bash
# Device batch B (H200): adversarial GPU cases, A/A timing samples, int4 library paths, tolerance check.
# Usage (device, repo root, wheels installed, PYTHONPATH=/tmp/site:$PWD): bash lab/benchmarks/device/batch_b.sh OUT
# Evidence only: keep what the archive holds under lab/benchmarks/evidence/ (results/ holds records alone).
set -u
OUTDIR=${1:?usage: batch_b.sh OUT}
R=/tmp/hk_batch_b; rm -rf $R; mkdir -p $R
export PYTHONUNBUFFERED=1 HOTKERNEL_PYTHON=python3
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS; echo "=== $name"; timeout "$limit" "$@" > $R/$name.log 2>&1; echo "# $name rc=$? wall=$((SECONDS-t0))s" | tee -a $R/steps.txt; tail -4 $R/$name.log; }
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.limit,temperature.gpu --format=csv > $R/gpu_before.csv
step tolerances 60 python3 kernels/check_tolerances.py cuda
HK_SKIP_NCU=1 HK_ONLY=int4 step int4_paths 90 python3 lab/benchmarks/device/library_paths.py $R/library
step adversarial 200 python3 lab/benchmarks/device/adversarial_gpu.py $R/adv_gpu.jsonl
step verdict_samples 200 python3 lab/benchmarks/device/verdict_samples.py --out $R/verdict_samples.jsonl --budget-s 150
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.limit,temperature.gpu --format=csv > $R/gpu_after.csv
tar -C /tmp -czf $OUTDIR/batch_b.tar.gz hk_batch_b
