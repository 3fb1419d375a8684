import sys, collections
from pathlib import Path
sys.path.insert(0, "/work/main/tests/contract")
sys.path.insert(0, "/work/main/tests")
from test_forkserver import session, run_twice  # noqa
def test_probe(session):
    runs = run_twice(session, times=24)
    c = collections.Counter(hex(s["big_ptr"]) for s in runs)
    print("DIST", c.most_common(5), len(c))
