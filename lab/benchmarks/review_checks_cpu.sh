#!/bin/bash
# What this CPU box can show of the eleventh session's changes, raw output under OUT (one file per step):
#   warm_up.txt    torch.compile's warm-up of one tiny CPU function (what a compile-warm fork server does first),
#                  with an empty inductor cache and again with it warm
#   new.txt        `hotkernel new` wall times: a file function, a module function (looked up in the user's python),
#                  and the refusals of a function the target cannot call
#   kernelbench.txt  KernelBench level 1 as shipped (LEVEL1 dir, unchanged): import of 4 problems at --scale 0.02
#                  on the CPU and their A/A sync
#   gpumode.txt    GPU MODE's problems/ as shipped (GM dir): import on the CPU, A/A of what imports, within a budget
# Usage (repo root, venv with torch active): bash lab/benchmarks/review_checks_cpu.sh OUT LEVEL1 GM_PROBLEMS [BUDGET] (GM_PROBLEMS: a problems/ folder)
set -u
OUT=$(realpath -m "${1:?usage: review_checks_cpu.sh OUT LEVEL1 GM [BUDGET]}"); LEVEL1=$(realpath "$2"); GM=$(realpath "$3")
BUDGET=${4:-6m}
mkdir -p "$OUT"
export HOTKERNEL_PYTHON=${HOTKERNEL_PYTHON:-$(command -v python)}
REPO=$PWD
{
  echo "# $(date -u +%FT%TZ) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
  CACHE=$(mktemp -d)
  for pass in empty warm; do
    TORCHINDUCTOR_CACHE_DIR=$CACHE CUDA_VISIBLE_DEVICES= python - "$pass" <<'PY'
import sys, time
import torch
import torch._inductor.config as config
config.compile_threads = 1
start = time.perf_counter()
compiled = torch.compile(lambda x: (x * 2.0).sum())
with torch.no_grad():
    compiled(torch.ones(64))
print(f"warm-up compile, inductor cache {sys.argv[1]}: {time.perf_counter() - start:.2f} s")
PY
  done
} > "$OUT/warm_up.txt" 2>&1

# One line per item of a `sync --json` report: name, status, verdict, seconds, the reason's start.
sync_items() {
  python -c "
import json, sys
for i in json.load(open(sys.argv[1]))['items']:
    print(i['name'], i['status'], i.get('verdict'), i.get('seconds'), (i.get('reason') or '')[:160])" "$1"
}

WS=$(mktemp -d)
printf 'import torch\n\n\ndef add(x, y, alpha=2.0):\n    return x * alpha + y\n' > "$WS/k.py"
{
  cd "$WS" || exit 1
  for args in "a --from ./k.py:add --shape 64x64 --extra y:64x64 --device cpu" \
              "b --from torch.nn.functional:layer_norm --shape 8x16 --kwarg normalized_shape=[16] --device cpu" \
              "c --from ./k.py:add --shape 64x64 --device cpu" \
              "d --from torch.nn.functional:layer_norm --shape 8x16 --device cpu" \
              "e --from torch.nn.functional:no_such_function --shape 8 --device cpu"; do
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    python -m hotkernel new $args 2>&1 | tail -1
    echo "  hotkernel new $args: rc=${PIPESTATUS[0]} $(echo "$(date +%s.%N) - $t0" | bc) s"
  done
  cd "$REPO" || exit 1
} > "$OUT/new.txt" 2>&1

WS=$(mktemp -d)
{
  cd "$WS" || exit 1
  git init -q . && python -m hotkernel init --no-ci > /dev/null
  t0=$(date +%s.%N)
  python -m hotkernel import kernelbench "$LEVEL1" --problems 1,19,23,40 --scale 0.02 --device cpu 2>&1 | tail -8
  echo "import: $(echo "$(date +%s.%N) - $t0" | bc) s"
  python -m hotkernel sync -n 3 --budget 4m --json > sync.json 2> sync.err
  sync_items sync.json
  cd "$REPO" || exit 1
} > "$OUT/kernelbench.txt" 2>&1

WS=$(mktemp -d)
{
  cd "$WS" || exit 1
  git init -q . && python -m hotkernel init --no-ci > /dev/null
  t0=$(date +%s.%N)
  python -m hotkernel import gpumode "$GM" --device cpu --cases tests --json > import.json 2> import.err
  echo "import rc=$? $(echo "$(date +%s.%N) - $t0" | bc) s"
  python -c "
import json
r = json.load(open('import.json'))
for t in r.get('imported', []):
    print('imported', t['target'], 'flags:', '; '.join(t.get('flags') or [])[:200])
for s in r.get('skipped', []):
    print('skipped', str(s)[:200])"
  python -m hotkernel sync -n 3 --budget "$BUDGET" --json > sync.json 2> sync.err
  sync_items sync.json
  cd "$REPO" || exit 1
} > "$OUT/gpumode.txt" 2>&1
echo "done: $OUT"
