#!/bin/bash
# A KernelBench level as a user meets it: `hotkernel init`, `hotkernel import kernelbench` at the problems' own
# shapes, then `hotkernel sync --from-scratch --budget` of the imported targets (every one an A/A verify: the
# untouched candidate calls the baseline). Measures the import's wall time, each verify's time and verdict, and how
# much of the level one budget covers.
# Usage (device, repo root; carry .whl and kb, see suites.sh):
#   HOTKERNEL_GIT_COMMIT=<commit> bash lab/benchmarks/device/level_sync.sh OUT LEVEL_DIR BUDGET [NAMES...]
# LEVEL_DIR: kb (level 1) or kb/level3; BUDGET: sync's --budget (e.g. 8m); NAMES: the targets to sync (default:
# all imported), e.g. what an earlier call's report left. OUT receives import.json, import.err, sync.json,
# sync.err, walls.txt, records.tar.gz (the workspace's results/, hotkernel.lock, LEADERBOARD.md) and, from the
# workspace's run store, phases.jsonl.gz and phases.txt (every run's phases: lab/benchmarks/run_store_phases.py).
# CPU dry run: HK_LEVEL_DEVICE=cpu HK_LEVEL_PROBLEMS=1,19 HK_LEVEL_SCALE=0.05 bash ... OUT kb 60s
# HK_LEVEL_WS=DIR: the workspace folder (default a new /tmp/hk_level_*). When DIR already holds a hotkernel.yaml the
# init and import are skipped and the sync goes on without --from-scratch (what an earlier call left, e.g. on a
# warm device in an ignored folder such as .hotkernel/tmp/level1). HK_LEVEL_COMPETE=N: after the import, the first
# N imported targets get `competitors: [compile]` (torch.compile of the problem, verified like a candidate).
# HK_LEVEL_END_BY=EPOCH_S: the sync's budget is what is left until then less HK_LEVEL_TAIL_S (default 60 s: a verify
# in flight at the budget finishes, level 1's longest about 50 s), when that is less than BUDGET; so a device call
# that ran other work first (a re-record of 154 s instead of 61 s on 2026-12-07) still ends with its sync.json and
# records.tar.gz written, e.g. `HK_LEVEL_END_BY=$(( $(date +%s) + 570 ))` at the start of a 600 s call.
set -u
OUT=${1:?usage: level_sync.sh OUT LEVEL_DIR BUDGET [NAMES...]}; LEVEL_DIR=$(realpath "${2:?level folder}")
BUDGET=${3:?sync budget, e.g. 8m}; shift 3
[ "${HK_LEVEL_DEVICE:-cuda}" = cuda ] && . lab/benchmarks/device/env.sh
export GIT_DIR=/nonexistent-hotkernel-git-dir  # records name HOTKERNEL_GIT_COMMIT, not a stale .git
: "${HOTKERNEL_GIT_COMMIT:?set HOTKERNEL_GIT_COMMIT to the commit being run}"
HK=(python3 -m hotkernel)
mkdir -p "$OUT"
WS=${HK_LEVEL_WS:-$(mktemp -d /tmp/hk_level_XXXX)}
mkdir -p "$WS"
opts=(--device "${HK_LEVEL_DEVICE:-cuda}" --json)
[ -n "${HK_LEVEL_PROBLEMS:-}" ] && opts+=(--problems "$HK_LEVEL_PROBLEMS")
[ -n "${HK_LEVEL_SCALE:-}" ] && opts+=(--scale "$HK_LEVEL_SCALE")
scratch=(--from-scratch)
if [ -f "$WS/hotkernel.yaml" ]; then
  scratch=()
  echo "continue in $WS: no init, no import, no --from-scratch at=$(date -u +%FT%TZ)" | tee -a "$OUT/walls.txt"
else
  (cd "$WS" && "${HK[@]}" init --no-ci > /dev/null) || exit 1
  t0=$SECONDS
  (cd "$WS" && "${HK[@]}" import kernelbench "$LEVEL_DIR" "${opts[@]}" > "$OUT/import.json" 2> "$OUT/import.err")
  echo "import rc=$? wall_s=$((SECONDS - t0)) at=$(date -u +%FT%TZ)" | tee -a "$OUT/walls.txt"
  if [ "${HK_LEVEL_COMPETE:-0}" -gt 0 ]; then
    python3 - "$WS/hotkernel.yaml" "$HK_LEVEL_COMPETE" <<'PY' || exit 1
import sys
from ruamel.yaml import YAML
yaml = YAML()
path, count = sys.argv[1], int(sys.argv[2])
with open(path) as handle:
    manifest = yaml.load(handle)
names = list(manifest["targets"])[:count]
for name in names:
    manifest["targets"][name]["competitors"] = ["compile"]
with open(path, "w") as handle:
    yaml.dump(manifest, handle)
print("competitors: [compile] on", " ".join(names))
PY
  fi
fi
if [ -n "${HK_LEVEL_END_BY:-}" ]; then
  left=$((HK_LEVEL_END_BY - $(date +%s) - ${HK_LEVEL_TAIL_S:-60}))
  [ "$left" -lt 10 ] && { echo "HK_LEVEL_END_BY: no time left for the sync" | tee -a "$OUT/walls.txt"; exit 1; }
  asked=$(python3 -c "from hotkernel.reconcile.budget import parse_budget; print(int(parse_budget('$BUDGET')))") || exit 1
  [ "$left" -lt "$asked" ] && BUDGET="${left}s" && echo "budget ${BUDGET} (HK_LEVEL_END_BY)" | tee -a "$OUT/walls.txt"
fi
t0=$SECONDS
(cd "$WS" && "${HK[@]}" sync "$@" "${scratch[@]}" --budget "$BUDGET" --json > "$OUT/sync.json" 2> "$OUT/sync.err")
echo "sync rc=$? wall_s=$((SECONDS - t0)) at=$(date -u +%FT%TZ)" | tee -a "$OUT/walls.txt"
tar czf "$OUT/records.tar.gz" -C "$WS" results hotkernel.lock LEADERBOARD.md hotkernel.yaml 2> /dev/null
python3 lab/benchmarks/run_store_phases.py "$WS" --jsonl "$OUT/phases.jsonl.gz" > "$OUT/phases.txt" 2>&1
python3 - "$OUT/sync.json" <<'PY'
import collections, json, sys
try:
    report = json.load(open(sys.argv[1]))
except Exception as err:  # a crashed sync leaves its reason in sync.err
    sys.exit(f"sync.json unreadable: {err}")
items = report.get("items", [])
verdicts = collections.Counter(str(i.get("verdict") or i.get("status")) for i in items)
print("verdicts:", dict(verdicts))
print("left:", " ".join(str(n) for n in report.get("left", []) or []))
PY
