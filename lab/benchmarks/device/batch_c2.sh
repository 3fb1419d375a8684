#!/bin/bash
# Device batch C2 (H200): triage the int4/decode candidates, speedrun both targets through hotkernel's loop,
# then A/A verifies of an unchanged script and (if time is left) A/A timing samples with the real timer.
# Usage (device, repo root, wheels installed, PYTHONPATH set): bash lab/benchmarks/device/batch_c2.sh OUT
# The archive holds the loop's records (results/, hotkernel.lock, LEADERBOARD.md, targets/) and its evidence
# (c2/: triage, logs, profiles, A/A runs), which belongs under lab/benchmarks/evidence/speedrun/h200_c2/.
set -u
OUTDIR=${1:?}; R=$OUTDIR/c2; mkdir -p $R
export PYTHONUNBUFFERED=1 HOTKERNEL_PYTHON=python3
S=$SECONDS
timeout 120 python3 lab/speedrun/check_variants.py --device cuda --shapes headline --time --targets int4_gemv decode_attention > $R/triage.jsonl 2> $R/triage.err
echo "triage rc=$? $((SECONDS-S))s"
HK_BUDGET_S=200 timeout 330 python3 lab/benchmarks/device/speedrun.py $R/triage.jsonl $R/log decode_attention int4_gemv
echo "speedrun rc=$? $((SECONDS-S))s"; cat $R/log/*/loop.jsonl
for pair in "int4_gemv $(python3 -c "import json,sys;r=[json.loads(l) for l in open('$R/triage.jsonl') if l.startswith('{')];r=[x for x in r if x['target']=='int4_gemv' and x['variant']!='baseline' and x.get('ok') and x.get('ms')];print(min(r,key=lambda x:x['ms'])['variant'])")" "decode_attention split32_two_pass"; do
  set -- $pair; t0=$SECONDS
  timeout 90 python3 -m hotkernel profile --tool ncu -c 40 --timeout 80 --out $R/ncu_$1 --json -- python3 lab/benchmarks/device/profile_pair.py $1 $2 > $R/profile_$1.json 2> $R/profile_$1.err
  echo "profile $1 $2 rc=$? $((SECONDS-t0))s"
done
for i in 1 2 3; do
  [ $((SECONDS-S)) -gt 420 ] && break
  t0=$SECONDS; python3 -m hotkernel verify targets/gemv/baseline.py targets/gemv/baseline.py -n 7 --json > $R/aa_$i.json 2> $R/aa_$i.err
  echo "aa $i rc=$? $((SECONDS-t0))s"
done
python3 - "$R" <<'PY' > $R/aa_verify_h200.jsonl
import json, sys, glob
for path in sorted(glob.glob(sys.argv[1] + "/aa_*.json")):
    try:
        d = json.load(open(path))
    except Exception as err:
        print(json.dumps({"file": path, "error": str(err)})); continue
    print(json.dumps({"file": path.rsplit("/", 1)[-1], "verdict": d["verdict"], "reason": d["reason"], "decision": d.get("decision"),
                      "baseline_ms": d["baseline"]["stats"]["samples_ms"], "candidate_ms": d["candidate"]["stats"]["samples_ms"]}))
PY
cat $R/aa_verify_h200.jsonl | cut -c1-200
left=$((500-(SECONDS-S)))
[ $left -gt 60 ] && timeout $((left+30)) python3 lab/benchmarks/device/verdict_samples.py --out $R/verdict_samples_contract.jsonl --budget-s $left --timer contract > $R/verdict_samples.log 2>&1; echo "samples rc=$? $((SECONDS-S))s"
tar czf $OUTDIR/c2.tar.gz results hotkernel.lock LEADERBOARD.md targets -C $OUTDIR c2 && rm -rf $R
