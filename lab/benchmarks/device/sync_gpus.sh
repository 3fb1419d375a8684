#!/bin/bash
# `sync --from-scratch` of the example GPU targets three ways on one 2-GPU host, each in its own copy of the tree:
#   one   one GPU (CUDA_VISIBLE_DEVICES = GPU 0's UUID), one verify at a time (the default)
#   all   --gpus all: one verify per GPU at a time
#   ray   --executor ray: a local Ray instance, one task per verify asking for one GPU
# and logs the wall times and every target's verdict side by side. Goal: `all` takes at most 60% of `one`.
# Usage (device, repo root; .whl/ carried with hotkernel's wheel and, for the ray mode, ray's wheels and deps):
#   HOTKERNEL_GIT_COMMIT=<commit> bash lab/benchmarks/device/sync_gpus.sh OUT [MODES]
# MODES defaults to "one all ray". DRY_RUN=1 (any machine, no GPU needed): prints each command, runs
# `sync --check` in each copy instead, and checks the summary on what it left. Writes only under OUT:
# OUT/<mode>/sync.json (the SyncReport), sync.err, OUT/walls.txt, OUT/gpu.csv, OUT/summary.txt.
set -u
OUT=${1:?usage: sync_gpus.sh OUT [MODES]}; MODES=${2:-"one all ray"}
DRY=${DRY_RUN:-0}
TARGETS=${TARGETS:-"rmsnorm softmax gemv int4_gemv decode_attention"}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPO=$PWD
if [ "$DRY" = 1 ]; then
  PY=${HOTKERNEL_TOOL_PYTHON:-python3}
  export HOTKERNEL_PYTHON=${HOTKERNEL_PYTHON:-$PY}
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site HOTKERNEL_PYTHON=python3
  PY=python3
  : "${HOTKERNEL_GIT_COMMIT:?set HOTKERNEL_GIT_COMMIT to the commit being run}"
  export GIT_DIR=/nonexistent-hotkernel-git-dir  # records name HOTKERNEL_GIT_COMMIT, not a stale .git
  nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.mem,power.limit --format=csv > "$OUT/gpu.csv"
fi
export PYTHONUNBUFFERED=1 RAY_AUTH_MODE=disabled
GPU0=$(nvidia-smi --query-gpu=uuid --format=csv,noheader 2>/dev/null | head -1)
: > "$OUT/walls.txt"
for mode in $MODES; do
  work=$(mktemp -d "/tmp/hotkernel-sync-$mode-XXXX")
  # a copy of the tree without its records: every mode starts from the same inputs
  tar -C "$REPO" --exclude=.git --exclude=.venv --exclude=.whl --exclude=results --exclude=hotkernel.lock \
      --exclude=LEADERBOARD.md -cf - . | tar -C "$work" -xf -
  case $mode in
    one) env_pin="CUDA_VISIBLE_DEVICES=$GPU0"; extra="" ;;
    all) env_pin=""; extra="--gpus all" ;;
    ray) env_pin=""; extra="--executor ray" ;;
    *) echo "unknown mode $mode (one, all, ray)"; exit 2 ;;
  esac
  mkdir -p "$OUT/$mode"
  cmd="$PY -m hotkernel sync $TARGETS --from-scratch $extra --json"
  echo "[$mode] (cd $work && ${env_pin:+$env_pin }PYTHONPATH=$work:\${PYTHONPATH:-} $cmd)" | tee -a "$OUT/walls.txt"
  if [ "$DRY" = 1 ]; then
    cmd="$PY -m hotkernel sync $TARGETS --check --json"
  fi
  t0=$(date +%s.%N)
  (cd "$work" && env ${env_pin:+$env_pin} PYTHONPATH="$work:${PYTHONPATH:-}" HOTKERNEL_WORKSPACE="$work" $cmd \
     > "$OUT/$mode/sync.json" 2> "$OUT/$mode/sync.err")
  rc=$?
  t1=$(date +%s.%N)
  echo "$mode rc=$rc wall_s=$(echo "$t1 - $t0" | bc)" | tee -a "$OUT/walls.txt"
  rm -rf "$work"
done
"$PY" - "$OUT" $MODES <<'PY' | tee "$OUT/summary.txt"
import json, re, sys
out, modes = sys.argv[1], sys.argv[2:]
walls = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\w+) rc=\d+ wall_s=([\d.]+)", open(f"{out}/walls.txt").read(), re.M)}
reports = {}
for mode in modes:
    try:
        reports[mode] = json.load(open(f"{out}/{mode}/sync.json"))
    except Exception as err:  # a failed sync leaves its reason in <mode>/sync.err
        reports[mode] = None
        print(f"{mode}: no report ({err}); see {mode}/sync.err")
print("wall s: " + "  ".join(f"{m}={walls.get(m, float('nan')):.1f}" for m in modes))
if "one" in walls and "all" in walls and walls["one"] > 0:
    ratio = walls["all"] / walls["one"]
    print(f"all/one = {ratio:.2f} (goal <= 0.60): {'met' if ratio <= 0.60 else 'MISSED'}")
def items(report):  # a dry run's `sync --check` report lists what the plan would run instead
    if report and report.get("check"):
        return [{"name": i["name"], "status": "planned", "verdict": i["action"]} for i in report["plan"]["items"]]
    return (report or {}).get("items", [])
names = sorted({i["name"] for r in reports.values() for i in items(r)})
def cell(report, name):
    for item in items(report):
        if item["name"] == name:
            speed = f" {item['speedup']:.3f}x" if item.get("speedup") else ""
            return f"{item['status']} {item.get('verdict') or ''}{speed}".strip()
    return "-"
print("target".ljust(18) + "".join(m.ljust(28) for m in modes))
for name in names:
    print(name.ljust(18) + "".join(cell(reports[m], name).ljust(28) for m in modes))
PY
