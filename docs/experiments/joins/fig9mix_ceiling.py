"""fig9mix: each plan timed on each arriving tuple alone (SJ-Optimum's per_tuple_us, min of 3) and
the per-tuple ceiling of routing (best static plan's total / the sum of per-tuple minima), with
the coverage of the rangeC's (docs/experiments/joins.md, "fig9mix against the paper").

Usage: python fig9mix_ceiling.py SCALE QUERIES_AT_SCALE_1 TUPLES [C_DOMAIN]   (e.g. 0.1 100000 2000 1e6)
"""

from __future__ import annotations

import sys

import numpy as np

from vigil.bench.joins_dynamic import load, per_tuple_us
from vigil.joins.costs import coverage


def main() -> None:
    scale, nq0, n = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    cd = float(sys.argv[4]) if len(sys.argv) > 4 else 1e4
    nq, ns = int(nq0 * scale), int(100_000 * scale)
    op, key, x, t = load("select", nq, ns, 0, 200_001, mixed=True, hot_frac=0.7, c_domain=cd)
    key, x, t = key[:n], x[:n], t[:n]
    st = op.stats("left", key, x, t, exact=True)
    _, rows = op.query_arrays()
    sc = np.concatenate([p.kx for p in op.sides["right"].parts()])
    print("cov, pbar", coverage(sc, rows[:, 2], rows[:, 3]))
    us = per_tuple_us(op, key, x, t)
    print("mean us/tuple alone:", {c: round(float(us[:, j].mean()), 2) for j, c in enumerate(op.choices)})
    best = us.min(1)
    print(f"per-tuple minimum {best.mean():.2f}; ceiling (best static / minimum) {us.mean(0).min() / best.mean():.3f}")
    mp, npr = st["mp"], st["np"]
    for name, m in (("m'=0", mp == 0), ("0<m'<50", (mp > 0) & (mp < 50)), ("m'>=50", mp >= 50),
                    ("n'<10", npr < 10), ("n'>=10", npr >= 10)):
        if m.any():
            print(f"{name}: share {m.mean():.3f}", {c: round(float(us[m, j].mean()), 2) for j, c in enumerate(op.choices)},
                  f"minimum {best[m].mean():.2f}")


if __name__ == "__main__":
    main()
