#!/bin/bash
# Device batch A (H200): speedrun triage, library paths + timer vs ncu, insight tools, contract smoke.
# Usage (device, repo root, after the carried wheels are installed and PYTHONPATH set): bash lab/benchmarks/device/batch_a.sh OUT
# Evidence only: keep what the archive holds under lab/benchmarks/evidence/ (results/ holds records alone).
set -u
OUTDIR=${1:?usage: batch_a.sh OUT}
R=/tmp/hk_batch_a; rm -rf $R; mkdir -p $R
export PYTHONUNBUFFERED=1 HOTKERNEL_PYTHON=python3
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS; echo "=== $name" ; timeout "$limit" "$@" > $R/$name.log 2>&1; echo "# $name rc=$? wall=$((SECONDS-t0))s" | tee -a $R/steps.txt; tail -5 $R/$name.log; }
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.limit,temperature.gpu --format=csv > $R/gpu_before.csv
step triage 120 python3 lab/speedrun/check_variants.py --device cuda --shapes headline --time
step library_paths 200 python3 lab/benchmarks/device/library_paths.py $R/library
sed '/profile_nsys/d' lab/benchmarks/device/capture_fixtures.sh > /tmp/cf.sh
step insight 150 bash /tmp/cf.sh $R/insight
WS=/tmp/hk_ws_smoke; rm -rf $WS; mkdir -p $WS; cp -r hotkernel.yaml kernels schemas $WS/
step contract_smoke 110 bash -c "cd $WS && python3 -m hotkernel sync rmsnorm softmax -n 3 && cat LEADERBOARD.md && python3 targets/gemv/candidate.py"
cp -r $WS/results $R/smoke_results 2>/dev/null; cp $WS/hotkernel.lock $R/ 2>/dev/null
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.limit,temperature.gpu --format=csv > $R/gpu_after.csv
tar -C /tmp -czf $OUTDIR/batch_a.tar.gz hk_batch_a
