cd /tmp/aa_ws && . /work/main/.venv/bin/activate && export PYTHONPATH=/tmp/wt_aa HOTKERNEL_PYTHON=$(which python) HOTKERNEL_WORKSPACE=/tmp/aa_ws
for i in $(seq 1 8); do
 for c in candidate direct; do
  python -m hotkernel verify targets/scale/baseline.py targets/scale/$c.py -n 7 --json > /tmp/aa_ws/v_${c}_$i.json 2>/tmp/aa_ws/v_${c}_$i.err
  python3 -c "import json,sys; r=json.load(open('/tmp/aa_ws/v_${c}_$i.json')); print('$c', $i, r['verdict'], r.get('speedup'), r.get('interval') or r.get('ci'), r.get('rounds_completed'))"
 done
done
