"""fig12 on the reworked kernels: is there a tuple class that another plan serves faster than
SJ-Hotspot inside a batch? (docs/experiments/joins.md, part 2, "Current state").

Usage: python docs/experiments/joins/fig12_class_check.py N   (N = |Q| = |S|, e.g. 20000, 50000)

Per batch of 1,000 fig12 arrivals (20 batches), the tuples of a class (quartiles of the exact m'
among tuples with a partner, of the exact n', and their combination) are probed as one sub-batch
by SJ-Hotspot, by SJ-JoinFirst in R.A order (as dynamic runs it) and by SJ-SelectFirst; CPU time
(thread_time), random order per batch; printed: SJ-Hotspot's mean time on the class and the
medians of (other plan's time / SJ-Hotspot's).
"""
import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import load

n = int(sys.argv[1])
nch, B = 20, 1000
op, key, x, t = load("select", n, n, 0, 200_001)
st = op.stats("left", key[:B*nch], x[:B*nch], t[:B*nch], exact=True)
mp, n1 = st["mp"], st["np"]
def run(c, sl, idx, order=False):
    k, xx, tt = key[sl][idx], x[sl][idx], t[sl][idx]
    if order:
        p = np.argsort(xx)
        k, xx, tt = k[p], xx[p], tt[p]
    c0 = time.thread_time()
    op._run(c, "left", np.arange(len(k)), k, xx, tt, 2)
    return time.thread_time() - c0
mq = np.quantile(mp[mp > 0], [0.25, 0.5, 0.75])
nq = np.quantile(n1, [0.25, 0.5, 0.75])
classes = {"mp<q25": lambda m, a: (m > 0) & (m < mq[0]), "mp>q75": lambda m, a: m > mq[2],
           "np<q25": lambda m, a: (m > 0) & (a < nq[0]), "np>q75": lambda m, a: (m > 0) & (a > nq[2]),
           "mp<q50&np<q50": lambda m, a: (m > 0) & (m < mq[1]) & (a < nq[1]), "all": lambda m, a: m >= 0}
rng = np.random.default_rng(0)
res = {}
for ch in range(nch):
    sl = slice(ch*B, (ch+1)*B)
    tests = []
    for nm, f in classes.items():
        idx = np.flatnonzero(f(mp[sl], n1[sl]))
        for c, o in (("hotspot", False), ("join_first", True), ("select_first", False)):
            tests.append((nm, c, idx, o))
    for i in rng.permutation(len(tests)):
        nm, c, idx, o = tests[i]
        res.setdefault((nm, c), []).append(run(c, sl, idx, o))
for nm in classes:
    h = np.array(res[(nm, "hotspot")])
    print(f"{nm:16s} H {h.mean()*1e3:6.2f} ms  JF(ord)/H time {np.median(np.array(res[(nm,'join_first')])/h):.2f}  SF/H {np.median(np.array(res[(nm,'select_first')])/h):.2f}")
