#!/bin/bash
# Where a verify's time goes at KernelBench's own shapes: a fresh workspace, the named problems imported, then one
# A/A `hotkernel verify --json` per target (the untouched candidate calls the baseline). OUT receives walls.txt (the
# import's and each verify's wall time), phases.txt (`python lab/benchmarks/judge_phases.py` over the verifies:
# every run's worker and judge phases) and profile.tar.gz (the raw verify JSON and stderr).
# Usage (device, repo root; carry .whl and kb):
#   HOTKERNEL_GIT_COMMIT=<commit> bash lab/benchmarks/device/judge_profile.sh OUT LEVEL_DIR PROBLEMS [BUDGET_S]
# PROBLEMS: KernelBench numbers, e.g. 1,19,23; BUDGET_S (default 300): no verify starts with under 20 s left.
# CPU dry run: HOTKERNEL_GIT_COMMIT=x HK_LEVEL_DEVICE=cpu HK_LEVEL_SCALE=0.01 bash ... /tmp/out kb 19 120
set -u
OUT=${1:?usage: judge_profile.sh OUT LEVEL_DIR PROBLEMS [BUDGET_S]}; LEVEL_DIR=$(realpath "${2:?level folder}")
PROBLEMS=${3:?problem numbers, e.g. 1,19}; BUDGET=${4:-300}
[ "${HK_LEVEL_DEVICE:-cuda}" = cuda ] && . lab/benchmarks/device/env.sh
export GIT_DIR=/nonexistent-hotkernel-git-dir  # records name HOTKERNEL_GIT_COMMIT, not a stale .git
: "${HOTKERNEL_GIT_COMMIT:?set HOTKERNEL_GIT_COMMIT to the commit being run}"
HERE=$PWD
HK=(python3 -m hotkernel)
mkdir -p "$OUT/raw"
WS=$(mktemp -d /tmp/hk_profile_XXXX)
opts=(--device "${HK_LEVEL_DEVICE:-cuda}" --problems "$PROBLEMS" --json)
[ -n "${HK_LEVEL_SCALE:-}" ] && opts+=(--scale "$HK_LEVEL_SCALE")
(cd "$WS" && "${HK[@]}" init --no-ci > /dev/null) || exit 1
t0=$SECONDS
(cd "$WS" && "${HK[@]}" import kernelbench "$LEVEL_DIR" "${opts[@]}" > "$OUT/raw/import.json" 2> "$OUT/raw/import.err")
echo "import rc=$? wall_s=$((SECONDS - t0))" | tee -a "$OUT/walls.txt"
start=$SECONDS
for baseline in $(cd "$WS" && find targets -name baseline.py | sort); do
  dir=$(dirname "$baseline"); name=$(basename "$dir")
  left=$((BUDGET - (SECONDS - start)))
  if [ "$left" -lt 20 ]; then echo "$name not run: budget" | tee -a "$OUT/walls.txt"; continue; fi
  t0=$SECONDS
  (cd "$WS" && timeout "$left" "${HK[@]}" verify "$dir/baseline.py" "$dir/candidate.py" --json \
    > "$OUT/raw/$name.json" 2> "$OUT/raw/$name.err")
  echo "$name rc=$? wall_s=$((SECONDS - t0))" | tee -a "$OUT/walls.txt"
done
python3 "$HERE/lab/benchmarks/judge_phases.py" "$OUT"/raw/*.json > "$OUT/phases.txt" 2>&1
tar czf "$OUT/profile.tar.gz" -C "$OUT" raw && rm -rf "$OUT/raw"
cat "$OUT/phases.txt"
