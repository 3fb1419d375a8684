#!/bin/bash
# Where a sync's compile competitor spends its runs, in one device call: for each target of HK_DIAG_TARGETS
# (default `rmsnorm cpu_rmsnorm`: a GPU target's competitor, and the CPU target's on a GPU host, whose fork server
# now warms torch.compile with the GPUs hidden), `hotkernel sync TARGET --from-scratch` in a fresh copy of this
# repository's workspace (its inductor cache empty), then what that cache holds after the sync (one FX graph for
# the script, or one per run?) and each run's wall time from the records (runs.rows).
# Usage (device, repo root; carry .whl): HOTKERNEL_GIT_COMMIT=<commit> bash lab/benchmarks/device/compile_sync_diag.sh OUT
# OUT receives walls.txt, run_walls.txt, caches.txt, fxgraph_<target>.txt, sync_<target>.json and .err.
# CPU dry run: HK_DIAG_DEVICE=cpu HK_DIAG_TARGETS=cpu_rmsnorm HOTKERNEL_GIT_COMMIT=dry bash ... OUT
set -u
OUT=${1:?usage: compile_sync_diag.sh OUT}
[ "${HK_DIAG_DEVICE:-cuda}" = cuda ] && . lab/benchmarks/device/env.sh
export GIT_DIR=/nonexistent-hotkernel-git-dir  # records name HOTKERNEL_GIT_COMMIT, not a stale .git
: "${HOTKERNEL_GIT_COMMIT:?set HOTKERNEL_GIT_COMMIT to the commit being run}"
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
REPO=$PWD
# The caches of this host outside a workspace (a sync's first compiled runs on a fresh lease took 6.4-7.6 s each
# against 2.4-3.2 s in later syncs, even in a fresh workspace copy whose own inductor cache was empty): files and
# bytes of each, before the first sync and after each one, in caches.txt. Run this script first on a fresh lease.
host_caches() {
  for dir in "$HOME/.triton" "$HOME/.cache" "$HOME/.nv" /tmp/torchinductor_* "${TRITON_CACHE_DIR:-}"; do
    [ -n "$dir" ] && [ -d "$dir" ] || continue
    echo "$1 $dir files=$(find "$dir" -type f 2> /dev/null | wc -l) kib=$(du -sk "$dir" 2> /dev/null | cut -f1)"
    find "$dir" -mindepth 1 -maxdepth 1 -printf "$1   %p\n" 2> /dev/null | head -10
  done >> "$OUT/caches.txt"
}
host_caches "before"
for target in ${HK_DIAG_TARGETS:-rmsnorm cpu_rmsnorm}; do
  WS=$(mktemp -d /tmp/hk_compile_diag_XXXX)
  tar cf - --exclude=./.hotkernel --exclude=./.whl --exclude=./kb --exclude=./gm --exclude=./.venv --exclude=./lab \
    --exclude=./.git . | (cd "$WS" && tar xf -)
  t0=$SECONDS
  (cd "$WS" && python3 -m hotkernel sync "$target" --from-scratch --json > "$OUT/sync_$target.json" \
    2> "$OUT/sync_$target.err")
  echo "$target sync rc=$? wall_s=$((SECONDS - t0)) at=$(date -u +%FT%TZ)" | tee -a "$OUT/walls.txt"
  host_caches "after_$target"
  {
    echo "# $target: $(find "$WS/.hotkernel/inductor/fxgraph" -type f 2> /dev/null | wc -l) FX graph cache entries"
    find "$WS/.hotkernel/inductor/fxgraph" -type f -printf '%T@ %p\n' 2> /dev/null | sort
  } > "$OUT/fxgraph_$target.txt"
  python3 - "$WS" "$target" >> "$OUT/run_walls.txt" <<'PY'
import glob, json, sys

ws, target = sys.argv[1], sys.argv[2]
for path in sorted(glob.glob(f"{ws}/results/{target}/*.json")):
    with open(path) as handle:
        record = json.load(handle)
    result = record["result"]
    runs = [f"{row[0][0]}{row[1]} {row[-1]}" for row in result["runs"].get("rows") or []]
    print(target, path.rsplit("/", 1)[-1], "competitor", record.get("competitor"), result["verdict"], "; ".join(runs))
PY
done
