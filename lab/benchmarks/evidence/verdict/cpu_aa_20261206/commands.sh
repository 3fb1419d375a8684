cd /tmp/wt_aar && . /work/main/.venv/bin/activate && export PYTHONPATH=/tmp/wt_aar
mkdir -p /tmp/aa_out
python lab/benchmarks/cpu_aa_rate.py /tmp/aa_out/load1_n3.jsonl --count 200 --load 1 --rounds 3 > /tmp/aa_out/load1.txt 2>&1
python lab/benchmarks/cpu_aa_rate.py /tmp/aa_out/load0_n3.jsonl --count 100 --load 0 --rounds 3 > /tmp/aa_out/load0.txt 2>&1
