"""Why per-tuple routing does not beat SJ-JoinFirst on fig12 (docs/experiments/joins.md, part 2).

Usage: python docs/experiments/joins/fig12_stream_check.py OUT.json [n ...]   (n = |Q| = |S|)

Per fig12 point (scale 0.1: n = 10,000..50,000), on the bench's loaded operator:
(a) warm vs stream: the bench's per-tuple timings (``per_tuple_us``: each plan on each tuple
    alone, the minimum of 3 repeated calls, i.e. warm caches) pick SJ-Hotspot over SJ-JoinFirst
    for some tuples; the same tuples timed in a stream (each tuple once per plan, plans in random
    order, one call each) say which plan is really cheaper for them;
(b) batches of 1,000: the tuples of the lowest n' decile / quintile / 30% (with a partner), where
    the warm timings favour SJ-Hotspot, probed as a sub-batch by SJ-JoinFirst and by SJ-Hotspot,
    and the whole batch by SJ-JoinFirst unordered and in R.A order; CPU time (thread_time), 30
    batches, random order per batch, medians of per-batch ratios.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import load, per_tuple_us


def point(n: int, n_warm: int = 600, n_batches: int = 30, B: int = 1000) -> dict:
    op, key, x, t = load("select", n, n, 0, 200_001)
    N = max(n_warm, n_batches * B)
    st = op.stats("left", key[:N], x[:N], t[:N], exact=True)
    mp, n1 = st["mp"], st["np"]
    rng = np.random.default_rng(0)
    seqs = np.arange(B)

    def run(c, sl, idx=None):
        k, xx, tt = key[sl], x[sl], t[sl]
        if idx is not None:
            k, xx, tt = k[idx], xx[idx], tt[idx]
        c0 = time.thread_time()
        op._run(c, "left", seqs[: len(k)], k, xx, tt, 2)
        return time.thread_time() - c0

    # (a)
    warm = per_tuple_us(op, key[:n_warm], x[:n_warm], t[:n_warm])
    stream = np.zeros((n_warm, 2))
    for i in range(n_warm):
        sl = slice(i, i + 1)
        for j in rng.permutation(2):
            stream[i, j] = run(("join_first", "hotspot")[j], sl) * 1e6
    h = (warm[:, 3] < warm[:, 0]) & (mp[:n_warm] > 0)
    out = {"n": n, "warm_hotspot_better": int(h.sum()), "of": n_warm,
           "warm_us_on_them": {"join_first": float(warm[h, 0].mean()), "hotspot": float(warm[h, 3].mean())},
           "stream_us_on_them": {"join_first": float(stream[h, 0].mean()), "hotspot": float(stream[h, 1].mean())}}
    # (b)
    qs = {q: float(np.quantile(n1[mp > 0], q / 100)) for q in (10, 20, 30)}
    res: dict[str, list[float]] = {}
    for b in range(n_batches):
        sl = slice(b * B, (b + 1) * B)
        tests = {"JF": ("join_first", None), "JF x-ordered": ("join_first", np.argsort(x[sl]))}
        for q, T in qs.items():
            r = np.flatnonzero((n1[sl] < T) & (mp[sl] > 0))
            tests[f"JF on np<q{q}"] = ("join_first", r)
            tests[f"H on np<q{q}"] = ("hotspot", r)
        names = list(tests)
        for i in rng.permutation(len(names)):
            c, idx = tests[names[i]]
            res.setdefault(names[i], []).append(run(c, sl, idx))
    ms = {k: float(np.mean(v) * 1e3) for k, v in res.items()}
    out["batch_ms"] = ms
    out["median_ratio"] = {"JF / JF x-ordered": float(np.median(np.array(res["JF"]) / np.array(res["JF x-ordered"])))}
    for q in qs:
        out["median_ratio"][f"JF / H on np<q{q}"] = float(np.median(np.array(res[f"JF on np<q{q}"])
                                                                   / np.array(res[f"H on np<q{q}"])))
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    ns = [int(a) for a in sys.argv[2:]] or [10_000, 30_000, 50_000]
    doc = {"points": [point(n) for n in ns]}
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f, indent=1)
