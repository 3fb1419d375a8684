#!/bin/bash
# GPU MODE's own tasks (reference-kernels problems/, as their authors ship them, kept outside this repository) as a
# user meets them on one NVIDIA GPU: a fresh workspace (`hotkernel init --no-ci`), one `hotkernel import gpumode
# GM_DIR/problems` of every task (or, with HK_GM_TASKS, one call a task; each under `timeout`, its exit code and
# wall time logged), then, within what is left of BUDGET_S, an A/A `hotkernel verify` of every imported target (the
# untouched rendered candidate) and, where the task ships a submission.py of its own, a verify of that submission
# through the one-line adapter the rendered candidate documents (lab/benchmarks/device/gpumode_check.py
# --workspace). A task that fails or runs past its limit is logged and the next one runs.
# Usage (device, repo root; carry .whl and gm):
#   HOTKERNEL_GIT_COMMIT=<commit> bash lab/benchmarks/device/gpumode_real.sh OUT_DIR GM_DIR BUDGET_S
# OUT_DIR receives three files: gpumode_real.jsonl (one line an import: step, task, imported/skipped with the
# reason, rc, wall_s; one line a verify: target, kind aa or submission, verdict, reason, wall_s),
# gpumode_real.log (every command with its exit code and wall time, then a summary) and gpumode_real.tar.gz (each
# import's JSON and stderr, the workspace's hotkernel.yaml, targets/, results/, hotkernel.lock, LEADERBOARD.md).
# Environment: HK_GM_DEVICE (cuda; cpu for a dry run, which skips env.sh), HK_GM_ROUNDS (verify -n, default 5),
# HK_GM_IMPORT_TIMEOUT_S (default 300), HK_GM_VERIFY_TIMEOUT_S (default 240), HK_GM_CASES (benchmarks, or tests:
# task.yml's smaller correctness sizes, e.g. on a CPU), HK_GM_TASKS (space-separated
# suite/task or suite names; default every folder with a task.yml), HK_GM_FIRST (words, space-separated: the
# targets whose name holds one are verified first, e.g. "top_p fp16_gemm qr").
# CPU dry run: HK_GM_DEVICE=cpu HOTKERNEL_GIT_COMMIT=dry bash ... /tmp/out lab/gpumode 300
set -u
usage="usage: gpumode_real.sh OUT_DIR GM_DIR BUDGET_S (GM_DIR holds problems/<suite>/<task>/task.yml)"
[ $# -eq 3 ] || { echo "$usage" >&2; exit 2; }
OUT=$1; GM_DIR=$2; BUDGET_S=$3
case $BUDGET_S in '' | *[!0-9]*) echo "BUDGET_S must be whole seconds, got '$BUDGET_S'; $usage" >&2; exit 2 ;; esac
[ -d "$GM_DIR/problems" ] || { echo "no $GM_DIR/problems folder; $usage" >&2; exit 2; }
GM_DIR=$(realpath "$GM_DIR")
DEVICE=${HK_GM_DEVICE:-cuda}
case $DEVICE in cuda | cpu) ;; *) echo "HK_GM_DEVICE must be cuda or cpu, got '$DEVICE'" >&2; exit 2 ;; esac
[ "$DEVICE" = cuda ] && . lab/benchmarks/device/env.sh
export PYTHONPATH=${PYTHONPATH:-$PWD}
export GIT_DIR=/nonexistent-hotkernel-git-dir  # records name HOTKERNEL_GIT_COMMIT, not a stale .git
: "${HOTKERNEL_GIT_COMMIT:?set HOTKERNEL_GIT_COMMIT to the commit being run}"
PY=${HOTKERNEL_PYTHON:-python3}
REPO=$PWD
START=$SECONDS
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
JSONL=$OUT/gpumode_real.jsonl; LOG=$OUT/gpumode_real.log
: > "$JSONL"; : > "$LOG"
WORK=$(mktemp -d /tmp/hk_gmreal_XXXX)
WS=$WORK/ws; mkdir -p "$WS" "$WORK/imports"
log() { echo "$*" | tee -a "$LOG"; }
log "gpumode_real: commit=$HOTKERNEL_GIT_COMMIT device=$DEVICE gm=$GM_DIR budget_s=$BUDGET_S at=$(date -u +%FT%TZ)"
[ "$DEVICE" = cuda ] && { gpu_csv "$WORK/gpu.csv"; cat "$WORK/gpu.csv" >> "$LOG"; }
(cd "$WS" && "$PY" -m hotkernel init --no-ci > "$WORK/init.txt" 2>&1)
log "\$ hotkernel init --no-ci   (rc=$?)"

if [ -n "${HK_GM_TASKS:-}" ]; then  # a suite name stands for its every task
  TASKS=$(cd "$GM_DIR/problems" && for t in $HK_GM_TASKS; do
    if [ -f "$t/task.yml" ]; then echo "$t"; else for f in "$t"/*/task.yml; do [ -f "$f" ] && dirname "$f"; done; fi
  done)
else  # as a user would: the whole problems/ folder in one import (one probe run for every task)
  TASKS=.
fi
for task in $TASKS; do
  left=$((BUDGET_S - (SECONDS - START)))
  name=${task//\//__}; [ "$task" = . ] && name=all
  if [ "$left" -le 10 ]; then
    log "skip import $task: budget spent"
    printf '{"step": "import", "task": "%s", "rc": null, "skipped": "budget", "wall_s": 0}\n' "$task" >> "$JSONL"
    continue
  fi
  limit=${HK_GM_IMPORT_TIMEOUT_S:-300}; [ "$left" -lt "$limit" ] && limit=$left
  t0=$SECONDS
  (cd "$WS" && timeout -k 10 "$limit" "$PY" -m hotkernel import gpumode "$GM_DIR/problems/$task" --device "$DEVICE" \
     --cases "${HK_GM_CASES:-benchmarks}" --json > "$WORK/imports/$name.json" 2> "$WORK/imports/$name.err")
  rc=$?; wall=$((SECONDS - t0))
  log "\$ hotkernel import gpumode problems/$task --device $DEVICE   (rc=$rc wall_s=$wall)"
  "$PY" - "$WORK/imports/$name.json" "$WORK/imports/$name.err" "$task" "$rc" "$wall" "$GM_DIR/problems" >> "$JSONL" \
    2>> "$LOG" <<'PY'
import json, os, sys
out, err, task, rc, wall, problems = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
row = {"step": "import", "task": task, "rc": rc, "wall_s": wall}
try:
    report = json.load(open(out))
except ValueError:
    tail = open(err, errors="replace").read().strip().splitlines()
    why = "past its time limit" if rc in (124, 137) else (tail[-1] if tail else "no output")
    print(json.dumps({**row, "skipped": f"import failed (rc={rc}): {why}"}))
    sys.exit(0)
def task_of(path):  # problems/<suite>/<task>[/reference.py], in the workspace's copy or the source
    parts = path.replace(os.sep, "/").rstrip("/").split("/")
    parts = parts[:-1] if parts[-1].endswith(".py") else parts
    return "/".join(parts[-2:])
for item in report.get("imported", []):
    print(json.dumps({**row, "task": task_of(item["problem"]), "target": item["target"], "shapes": item.get("shapes"),
                      "flags": item.get("flags")}))
for item in report.get("skipped", []):
    print(json.dumps({**row, "task": task_of(item["problem"]), "skipped": item["reason"]}))
PY
  tail -n +1 "$WORK/imports/$name.json" 2> /dev/null | "$PY" -c "
import json, sys
try:
    r = json.load(sys.stdin)
except ValueError:
    sys.exit()
for i in r.get('imported', []): print('  added', i['target'])
for s in r.get('skipped', []): print('  skipped', s['problem'] + ':', s['reason'])" >> "$LOG"
done

left=$((BUDGET_S - (SECONDS - START)))
t0=$SECONDS
if [ "$left" -gt 10 ]; then
  timeout -k 10 "$((left + 30))" "$PY" "$REPO/lab/benchmarks/device/gpumode_check.py" "$WORK/verify" \
    --workspace "$WS" --budget-s "$left" --rounds "${HK_GM_ROUNDS:-5}" \
    --verify-timeout-s "${HK_GM_VERIFY_TIMEOUT_S:-240}" --first "${HK_GM_FIRST:-}" > "$WORK/verify.txt" \
    2> "$WORK/verify.err"
  rc=$?
  [ -f "$WORK/verify/gpumode.jsonl" ] && cat "$WORK/verify/gpumode.jsonl" >> "$JSONL"
  log "\$ gpumode_check.py --workspace WS --budget-s $left   (rc=$rc wall_s=$((SECONDS - t0)))"
else
  log "verify: budget spent before any verify"
fi

"$PY" - "$JSONL" >> "$LOG" <<'PY'
import collections, json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
imports = [r for r in rows if r.get("step") == "import"]
print(f"tasks: {len({r['task'] for r in imports})}, imported: {sum(1 for r in imports if 'target' in r)}, "
      f"skipped: {sum(1 for r in imports if 'skipped' in r)}")
for kind in ("aa", "submission"):
    verdicts = collections.Counter(str(r.get("verdict")) for r in rows if r.get("kind") == kind)
    print(f"{kind}: {dict(verdicts)}")
PY
tail -n 4 "$LOG"
cp "$JSONL" "$LOG" "$WORK/" 2> /dev/null
tar czf "$OUT/gpumode_real.tar.gz" -C "$WORK" imports init.txt verify.txt verify.err $(cd "$WORK" && ls gpu.csv 2> /dev/null) \
  -C "$WS" hotkernel.yaml targets $(cd "$WS" && ls -d results hotkernel.lock LEADERBOARD.md 2> /dev/null) 2> /dev/null
rm -rf "$WORK"
exit 0
