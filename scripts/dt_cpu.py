"""CPU harness for DT (docs/experiments/threshold_dt_speed.md): a pickled fig3 trace replayed
through a fresh operator, CPU time (time.process_time) per operator-call kind, outputs checked
against the trace.

    python scripts/dt_cpu.py gen --dim 2 --scale 0.1 --out /tmp/fig3_2d_01.pkl
    python scripts/dt_cpu.py run /tmp/fig3_2d_01.pkl --algo dt      # or scan, dt_floor
    python scripts/dt_cpu.py build --dim 2 --scale 1.0               # one register of all queries

Run old code by putting a ``git archive`` of it first on PYTHONPATH (own NUMBA_CACHE_DIR).
"""

from __future__ import annotations

import argparse
import os
import pickle
import resource
import sys
import time

import numpy as np


def _trace(dim, scale, resolver="scan"):
    from vigil.bench.threshold import PRESETS, _point_params, make_operator
    from vigil.workloads.threshold import generate_trace
    wp = _point_params(PRESETS["fig3"], dim, scale, 1000, 0, {})
    return generate_trace(wp, make_operator(resolver, dim))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["gen", "run", "build"])
    ap.add_argument("trace", nargs="?")
    ap.add_argument("--dim", type=int, default=2)
    ap.add_argument("--scale", type=float, default=0.1)
    ap.add_argument("--out")
    ap.add_argument("--algo", default="dt", help="run: the operator; gen: the resolver of the trace")
    ap.add_argument("--bucket", type=int, help="dt.BUCKET (endpoints per bucket, 2D)")
    ap.add_argument("--rebuild", type=int, help="dt.REBUILD (rebuild at alive <= built / REBUILD)")
    ap.add_argument("--sample", type=int, help="dt.SAMPLE (elements run through a new structure)")
    a = ap.parse_args()
    if a.cmd == "gen":
        tr = _trace(a.dim, a.scale, a.algo)
        with open(a.out, "wb") as f:
            pickle.dump((tr.params.dim, tr.steps, tr.outputs), f, protocol=5)
        print("steps", len(tr.steps))
        return
    import vigil.threshold.dt as dtm
    from vigil.bench.threshold import make_operator, warm_up
    print("dt module", dtm.__file__, file=sys.stderr)
    if a.bucket is not None:
        dtm.BUCKET = a.bucket
    if a.rebuild is not None:
        dtm.REBUILD = a.rebuild
    if a.sample is not None:
        dtm.SAMPLE = a.sample
    if a.cmd == "build":
        from vigil.bench.threshold import PRESETS, _point_params
        from vigil.workloads.threshold import draw_queries
        wp = _point_params(PRESETS["fig3"], a.dim, a.scale, 1000, 0, {})
        rng_q = np.random.default_rng(np.random.SeedSequence(wp.seed).spawn(3)[0])
        lo, hi = draw_queries(rng_q, wp.m, wp)
        dtm._warmup()
        op = dtm.DT(a.dim)
        t0 = time.process_time()
        op.register(np.arange(wp.m), lo, hi, np.full(wp.m, wp.tau, np.int64))
        cpu = time.process_time() - t0
        t = [x for x in op._trees if x is not None][0]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        parts = {n: dtm._owner(getattr(t, n)).nbytes / 2**20 for n in ("NR", "tt", "qn", "qr")
                 if getattr(t, n, None) is not None}
        E = t.qn.shape[0]
        print(f"B={getattr(dtm, 'BUCKET', '-')} m {wp.m}: build {cpu:.2f} s CPU, index {op.nbytes() / 2**30:.3f} GiB, peak RSS {rss / 1024:.2f} GiB, "
              f"E {E / 1e6:.2f}M (h {E / wp.m:.1f}), rows {t.NR.shape[0] / 1e6:.2f}M, "
              + ", ".join(f"{n} {v:.0f} MiB" for n, v in parts.items()) + f", load {os.getloadavg()[0]:.2f}")
        return
    with open(a.trace, "rb") as f:
        dim, steps, outputs = pickle.load(f)
    warm_up(a.algo if a.algo != "dt_floor" else "dt", dim)
    op = make_operator(a.algo, dim)
    tk = {"register": 0.0, "terminate": 0.0, "push": 0.0}
    mism = 0
    pt = time.process_time
    for i, s in enumerate(steps):
        k = s[0]
        t0 = pt()
        if k == "push":
            q, o = op.push(s[1], s[2])
        elif k == "register":
            op.register(s[1], s[2], s[3], s[4])
        else:
            op.terminate(s[1])
        tk[k] += pt() - t0
        if k == "push" and a.algo != "dt_floor":
            rq, ro = outputs[i]
            if not (np.array_equal(np.asarray(q), rq) and np.array_equal(np.asarray(o), ro)):
                mism += 1
    tot = sum(tk.values())
    extra = ""
    if hasattr(op, "stats"):
        st = op.stats
        extra = f" signals {st.get('signals', 0)/1e6:.2f}M rounds {st.get('rounds', 0)/1e3:.0f}k rebuilds {st.get('rebuilds', 0)}"
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{a.algo} B={getattr(dtm, 'BUCKET', '-')}: register {tk['register']:.2f} terminate {tk['terminate']:.2f} push {tk['push']:.2f} "
          f"total {tot:.2f} s CPU, mismatches {mism}{extra}, peak RSS {rss:.0f} MiB, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
