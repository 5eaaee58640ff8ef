"""fig9mix: where dynamic's routed probe loses against the per-group ceiling
(docs/experiments/joins.md, "Where dynamic loses"). Each 1,000-tuple chunk is cut into the
ceiling's groups (exact m', n'; m' = 0 set aside); per group: every plan's CPU time on the group
(min of REPS), dynamic's choices on the group's tuples, and the time of dynamic's choices there
(each chosen plan on the group's tuples routed to it). Totals over the chunks per group, and the
whole chunk: best static, ceiling, sum of dynamic's choices per group, dynamic's routed probe.

Usage: python fig9mix_group_breakdown.py SCALE QUERIES_AT_SCALE_1 CHUNKS [REPS]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from vigil.bench.joins_dynamic import load

EDGES_N, EDGES_M = [1, 10, 100, 1000], [100, 300]


def main() -> None:
    scale, nq0, chunks = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    reps = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    nq, ns, b = int(nq0 * scale), int(100_000 * scale), 1000
    op, key, x, t = load("select", nq, ns, 0, 200_001, mixed=True, hot_frac=0.7)
    seqs = np.arange(b) + op.seq
    P = len(op.choices)

    def cpu(fn, *args) -> float:
        best = np.inf
        for _ in range(reps):
            c0 = time.thread_time()
            fn(*args)
            best = min(best, time.thread_time() - c0)
        return best

    G = 15
    plan_t = np.zeros((G, P))
    dyn_t = np.zeros(G)
    cnt = np.zeros(G, np.int64)
    dyn_cnt = np.zeros((G, P), np.int64)
    est = np.zeros((G, P))
    tot = {"static": np.zeros(P), "dyn_probe": 0.0, "skip": 0}
    for ci in range(chunks):
        s = slice(ci * b, (ci + 1) * b)
        k, xx, tt = key[s], x[s], t[s]
        st = op.stats("left", k, xx, tt, exact=True)
        mp, npr = st["mp"], st["np"]
        grp = np.where(mp == 0, -1, np.digitize(npr, EDGES_N) * 3 + np.digitize(mp, EDGES_M))
        ch = op.choose("left", k, xx, tt)
        e = op.estimated_costs("left", k, xx, tt)
        tot["skip"] += int((grp < 0).sum())
        for j, c in enumerate(op.choices):
            tot["static"][j] += cpu(op._run_ordered, c, "left", seqs, k, xx, tt, 2)
        for g in np.unique(grp[grp >= 0]):
            i = np.flatnonzero(grp == g)
            cnt[g] += len(i)
            for j, c in enumerate(op.choices):
                plan_t[g, j] += cpu(op._run_ordered, c, "left", seqs[i], k[i], xx[i], tt[i], 2)
                est[g, j] += e[i, j].sum()
                ij = i[ch[i] == j]
                dyn_cnt[g, j] += len(ij)
                if len(ij):
                    dyn_t[g] += cpu(op._run_ordered, c, "left", seqs[ij], k[ij], xx[ij], tt[ij], 2)
        tot["dyn_probe"] += cpu(op._probe, "left", seqs, k, xx, tt, 2)
    n = chunks * b
    names = [c[:2] for c in op.choices]
    print(f"|Q| = {nq}, {chunks} chunks; m' = 0: {tot['skip']} tuples")
    print("group (n', m')            share  " + "  ".join(f"{c:>7}" for c in names) + "   est us/t " +
          " ".join(f"{c:>5}" for c in names) + "  dyn choices          dyn  loss_ms")
    for g in range(G):
        if not cnt[g]:
            continue
        ni, mi = divmod(g, 3)
        lab = f"n'{['0', '1-9', '10-99', '100-999', '1000+'][ni]:>7} m'{['1-99', '100-299', '300+'][mi]:>7}"
        us = 1e6 * plan_t[g] / cnt[g]
        print(f"{lab}  {cnt[g] / n:6.3f}  " + "  ".join(f"{v:7.2f}" for v in us) + "   " +
              " ".join(f"{v:5.2f}" for v in est[g] / cnt[g]) + "  " +
              " ".join(f"{v:4d}" for v in dyn_cnt[g]) + f"  {1e6 * dyn_t[g] / cnt[g]:7.2f}"
              f"  {1e3 * (dyn_t[g] - plan_t[g].min()):7.2f}")
    best = tot["static"].min()
    print("static per plan (ms): " + ", ".join(f"{c} {1e3 * v:.1f}" for c, v in zip(op.choices, tot["static"], strict=True)))
    print(f"best static / ceiling {best / plan_t.min(axis=1).sum():.3f}; / sum of dynamic's choices per group "
          f"{best / dyn_t.sum():.3f}; / dynamic's routed probe {best / tot['dyn_probe']:.3f}")


if __name__ == "__main__":
    main()
