"""Quick fig3-style measurement of DT (paper 000 §8.1), independent of ``vigil bench``.

m static queries (intervals / squares of 10% of [0, 1e5]^d, centres N(5e4, 7500) per coordinate,
re-drawn if outside), threshold tau, element values uniform integers, weights round(N(100, 15))
>= 1; every query terminated at a geometric time with P(terminated before tau/10 elements) = 0.9,
applied at block boundaries. Runs until every query matured or was terminated.

    python scripts/bench_dt.py --m 100000 --d 1 [--tau 20000000] [--block 4096] [--floor]

Prints CPU seconds (process time; the machine is shared), operations (register + terminate + element) and microseconds per operation.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from vigil.threshold.dt import DT

DOM = 1e5


def queries(rng, m, d):
    side = DOM * 0.1 ** (1 / d)
    c = rng.normal(DOM / 2, 0.15 * DOM / 2, (m, d))
    bad = np.any((c - side / 2 < 0) | (c + side / 2 > DOM), axis=1)
    while bad.any():
        c[bad] = rng.normal(DOM / 2, 0.15 * DOM / 2, (int(bad.sum()), d))
        bad = np.any((c - side / 2 < 0) | (c + side / 2 > DOM), axis=1)
    lo = np.round(c - side / 2)
    return lo, lo + np.round(side)


def weights(rng, n):
    w = np.round(rng.normal(100, 15, n)).astype(np.int64)
    while (w < 1).any():
        b = w < 1
        w[b] = np.round(rng.normal(100, 15, int(b.sum()))).astype(np.int64)
    return w


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=1)
    ap.add_argument("--tau", type=int, default=20_000_000)
    ap.add_argument("--block", type=int, default=4096)
    ap.add_argument("--floor", action="store_true")
    ap.add_argument("--max-elements", type=int, default=10**9)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    m, d, tau = a.m, a.d, a.tau
    lo, hi = queries(rng, m, d)
    life = tau // 10
    p = 1 - 0.1 ** (1 / life)
    tdie = rng.geometric(p, m)  # element index before which the query is terminated
    order = np.argsort(tdie)
    tdie_sorted = tdie[order]
    op = DT(d, floor_only=a.floor)
    t0 = time.process_time()
    op.register(np.arange(m), lo, hi, np.full(m, tau))
    t_reg = time.process_time() - t0
    print(
        f"register {m}: {t_reg:.2f}s, {op.nbytes() / 2**20:.0f} MiB, h(avg) {op._trees[-1].qr[-1, 3] / m:.1f}"
    )
    done = 0
    n = 0
    n_term = 0
    n_mat = 0
    ptr = 0
    t_push = t_term = 0.0
    while op.alive() > 0 and n < a.max_elements:
        j = np.searchsorted(tdie_sorted, n + 1, side="right")
        if j > ptr:
            s = time.process_time()
            before = op.alive()
            op.terminate(order[ptr:j])
            t_term += time.process_time() - s
            n_term += before - op.alive()
            ptr = j
        b = a.block
        pts = rng.integers(0, int(DOM) + 1, (b, d)).astype(np.float64)
        w = weights(rng, b)
        s = time.process_time()
        q, _ = op.push(pts, w)
        t_push += time.process_time() - s
        n_mat += q.shape[0]
        n += b
        done += 1
        if done % 100 == 0:
            el = time.process_time() - t0
            st = op.stats
            print(
                f"  {n} elements, alive {op.alive()}, {el:.1f}s (push {t_push:.1f}), "
                f"{op.nbytes() / 2**20:.0f} MiB, signals {st['signals']}, rounds {st['rounds']}",
                flush=True,
            )
    total = time.process_time() - t0
    ops = m + n + n_term
    print(f"m={m} d={d} tau={tau} floor={a.floor}: n={n} terminated={n_term} matured={n_mat}")
    print(f"  total {total:.2f}s (register {t_reg:.2f}, push {t_push:.2f}, terminate {t_term:.2f})")
    print(f"  ops {ops}: {1e6 * total / ops:.3f} us/op; per element push {1e6 * t_push / n:.3f} us")
    print(f"  stats {op.stats}")


if __name__ == "__main__":
    main()
