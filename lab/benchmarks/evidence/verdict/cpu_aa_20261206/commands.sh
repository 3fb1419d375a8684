# CPU A/A verifies of lab/benchmarks/cpu_aa_rate.py on this 2-core box (torch 2.13.0+cpu), 2026-12-06, each run
# from a git worktree of the commit named (PYTHONPATH=<worktree>), python = this repository's .venv.
# load1_n3.jsonl, load0_n3.jsonl: commit 6b9fb71 (the untouched candidate is the baseline's function; forked
# workers inherit the server's heap free chunks and pymalloc pools in one order)
python lab/benchmarks/cpu_aa_rate.py load1_n3.jsonl --count 200 --load 1 --rounds 3
python lab/benchmarks/cpu_aa_rate.py load0_n3.jsonl --count 100 --load 0 --rounds 3
# load1_n3_b.jsonl, decided_b/: commit 5734856 (the contract of 9d0ce95: the judge's exit code and close changed);
# stopped after 218 verifies, so it has no summary line
python lab/benchmarks/cpu_aa_rate.py load1_n3_b.jsonl --count 300 --load 1 --rounds 3 --keep decided_b
# load1_n3_chunks.jsonl, decided_chunks/: commit 78d58d5 (forked workers reshuffle the heap's free chunks);
# stopped after 118 verifies
python lab/benchmarks/cpu_aa_rate.py load1_n3_chunks.jsonl --count 240 --load 1 --rounds 3 --keep decided_chunks
# load1_n3_after.jsonl, decided_after/: commit 238712b (and pymalloc's pools, in a random order); stopped after 114
python lab/benchmarks/cpu_aa_rate.py load1_n3_after.jsonl --count 200 --load 1 --rounds 3 --keep decided_after
# crown_real.txt: python lab/benchmarks/crown_real.py (after all of the above were committed)
# load1_n3_gc.jsonl, decided_gc/: commit a432358 (the sampled loop runs with Python's garbage collector paused, and
# the fork server freezes its objects before each fork: gc.freeze()); the box also ran a test suite and a CPU
# import at times during it
python lab/benchmarks/cpu_aa_rate.py load1_n3_gc.jsonl --count 300 --load 1 --rounds 3 --keep decided_gc
