"""hotkernel's run contract, protocol 2: the referee a candidate kernel cannot reach.

Built into one file (``hotkernel.contract.build``; the tool builds its own copy on first use, never committed),
vendored into every workspace as ``targets/hk_contract.py`` and sha256-checked before and after every run, so
``python targets/<name>/candidate.py`` works without hotkernel installed. Stdlib only at the top level; torch
is imported inside the worker and the judge. This package imports nothing else of hotkernel.

Four roles::

    python hk_contract.py run SCRIPT            orchestrator: prints exactly one JSON line (the run result)
    python -I hk_contract.py worker [SCRIPT]    times the script's `kernel`; one protocol line on a private fd
    python -I hk_contract.py judge              persistent; one job per stdin line, one JSON reply
    python -I hk_contract.py forkserver         imports torch once; the orchestrator forks its workers and its
                                                judge from it (``worker`` and ``judge`` by hand start one alone)

Where things are: knobs.py (every knob, unit in its name), spec.py (SPEC from baseline.py, seeds), problems.py
(KernelBench and GPU MODE problem files as baselines), probe.py (what a problem file holds, without its inputs),
limits.py (the time and memory limits of a probe's real runs), uninit.py (a generator's uninitialized buffers),
inputs.py (input sets, perturbation), timer.py (the timer), checks.py (the checks table), hygiene.py
(process trees, stale files), transport.py (CUDA IPC / files), shape.py (one shape: input sets, correctness
pass, timed calls), worker.py, judge.py, forkserver.py (workers and judges forked from a process that has
imported torch), orchestrator.py.
"""
