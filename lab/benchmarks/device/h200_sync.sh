#!/bin/bash
# Re-record this repository's GPU targets under the current contract on one H200: `hotkernel sync --from-scratch`
# once, then again while time is left (the second run's headline speedups are checked against the first run's
# intervals in docs/speedrun.md). Keeps each run's JSON report and wall time.
# Usage (device, repo root; .whl/ carried, see ../shared/device/carry-wheels.sh):
#   HOTKERNEL_GIT_COMMIT=<commit> bash lab/benchmarks/device/h200_sync.sh OUT BUDGET_S
# OUT/records.tar.gz holds results/, hotkernel.lock and LEADERBOARD.md; OUT/sync_<i>.json the reports.
set -u
OUT=${1:?usage: h200_sync.sh OUT BUDGET_S}; BUDGET_S=${2:-300}
. lab/benchmarks/device/env.sh
# The device's copy of the tree may carry a stale .git: records must name the commit that actually ran
# (HOTKERNEL_GIT_COMMIT), so git is kept from finding any repository here.
export GIT_DIR=/nonexistent-hotkernel-git-dir
: "${HOTKERNEL_GIT_COMMIT:?set HOTKERNEL_GIT_COMMIT to the commit being run}"
TARGETS="rmsnorm softmax gemv int4_gemv decode_attention"
mkdir -p "$OUT"
gpu_csv "$OUT/gpu.csv"
S=$SECONDS
for i in 1 2; do
  if [ "$i" -gt 1 ] && [ $((SECONDS - S)) -gt $((BUDGET_S / 2)) ]; then echo "run $i skipped: budget"; break; fi
  t0=$SECONDS
  # HK_SYNC_ALL_FIRST=1: the first run is the whole workspace, the CPU target included (its wall time is the
  # "whole workspace from scratch" figure); the second run re-syncs the GPU targets only.
  names=$TARGETS; [ "$i" = 1 ] && [ "${HK_SYNC_ALL_FIRST:-0}" = 1 ] && names=""
  # SIGTERM at HK_SYNC_TIMEOUT_S: sync stops cleanly (lock and board consistent) and reports what is left
  # HK_SYNC_ARGS: more sync options for both runs, e.g. "--gpus all" (on one GPU: a GPU lane and the CPU lane side
  # by side, the CPU target's verifies beside the GPU ones)
  # shellcheck disable=SC2086
  timeout "${HK_SYNC_TIMEOUT_S:-450}" python3 -m hotkernel sync $names ${HK_SYNC_ARGS:-} --from-scratch --json \
    > "$OUT/sync_$i.json" \
    2> "$OUT/sync_$i.err"
  echo "sync run $i rc=$? wall_s=$((SECONDS - t0))" | tee -a "$OUT/sync_walls.txt"
  # after every run: a call cut short in the second still brings back the first's records
  python3 -m hotkernel leaderboard > /dev/null 2>&1
  tar czf "$OUT/records.tar.gz" results hotkernel.lock LEADERBOARD.md targets README.md roofline_*.svg
done
python3 - "$OUT" <<'PY'
import glob, json, sys
for path in sorted(glob.glob(sys.argv[1] + "/sync_*.json")):
    try:
        report = json.load(open(path))
    except Exception as err:  # a crashed sync leaves its reason in sync_<i>.err
        print(path, "unreadable:", err); continue
    for item in report.get("items", []):
        print(path.rsplit("/", 1)[-1], item.get("name"), item.get("status"), item.get("verdict"), item.get("speedup"), (item.get("reason") or "")[:120])
PY
