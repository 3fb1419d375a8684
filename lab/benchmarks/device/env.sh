# Sourced by the device scripts, from the repository root (`. lab/benchmarks/device/env.sh`): installs the carried
# wheels (.whl/, the packages the device's python lacks) into /tmp/site, exports the environment every script
# runs with, and defines `gpu_csv FILE [COLUMNS]`: the card as nvidia-smi reports it, by default its name, uuid,
# driver, current clocks and power limit.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 HOTKERNEL_PYTHON=python3
python3 -c "import pydantic, ruamel.yaml, filelock" 2> /dev/null || {
  echo "env.sh: python3 lacks pydantic, ruamel.yaml or filelock and no .whl/ installs them: carry .whl/ with" \
       "wheels of them and their dependencies for this python" >&2
  exit 1
}
gpu_csv() {
  nvidia-smi --query-gpu="${2:-name,uuid,driver_version,clocks.sm,clocks.mem,power.limit}" --format=csv > "$1" 2>&1
}
