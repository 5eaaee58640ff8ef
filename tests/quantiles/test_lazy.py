"""Member deadlines (vigil's refinement of CASU, :mod:`vigil.quantiles._trigger_kernels`) and the
finer summary (``summary_ratio``): at the operator level, with 200 notify queries, every
query's latest update is a valid answer after every element (ranks within max(eps_q, eps)*N + 1
of max(1, ceil(phi*N))), updates come in (offset, qid) order with no repeated value, and the
member deadlines send fewer updates than giving every member its cluster's value."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.quantiles.casu import CASU
from vigil.workloads.quantiles import data_stream, query_set

EPS = 0.01


def run(lazy: int, kind: str, ratio: float = CASU.summary_ratio, n: int = 2000, nq: int = 200, batch: int = 600):
    cls = type("CASUx", (CASU,), {"lazy": lazy, "summary_ratio": ratio})
    op = cls(EPS, None)
    phi, eq = query_set(nq, "uniform", (EPS, 4 * EPS), 7)
    op.register_many(np.arange(nq), phi, eq, 0, notify=True)
    if kind == "duplicates":
        x = np.random.default_rng(3).integers(0, 20, n).astype(np.float64)
    else:
        x = data_stream(kind, n, 3)
    ups = []
    for p in range(0, n, batch):
        q, o, v = op.push(x[p:p + batch], np.arange(p + 1, p + 1 + len(x[p:p + batch])))
        ups.append((q, o + p, v))
    q, o, v = (np.concatenate(a) for a in zip(*ups, strict=True))
    return x, phi, eq, q, o, v


def check(x, phi, eq, q, o, v):
    nq = len(phi)
    key = o * nq + q
    assert (np.diff(key) > 0).all(), "updates not in (offset, qid) order"
    cur = np.full(nq, np.nan)
    e = np.maximum(eq, EPS)
    j = 0
    srt: list[float] = []
    for i in range(len(x)):
        srt.insert(int(np.searchsorted(srt, x[i])), float(x[i]))
        while j < len(o) and o[j] == i:
            assert cur[q[j]] != v[j], "an update repeats the value"
            cur[q[j]] = v[j]
            j += 1
        assert not np.isnan(cur).any(), "a query without a value after its first element"
        n = i + 1
        a = np.asarray(srt)
        lo = np.searchsorted(a, cur, "left") + 1
        hi = np.searchsorted(a, cur, "right")
        t = np.maximum(1, np.ceil(phi * n - 1e-9))
        err = np.maximum(0, np.maximum(lo - t, t - hi))
        assert (hi >= lo).all(), "a value that is not an element"
        assert (err <= e * n + 1 + 1e-9).all(), (n, float(err.max()))


@pytest.mark.parametrize("ratio", [CASU.summary_ratio, 1.0])
@pytest.mark.parametrize("kind", ["uniform", "semisort", "duplicates"])
def test_member_deadlines_keep_the_invariant_and_send_fewer_updates(kind, ratio):
    eager = run(0, kind, ratio)
    check(*eager)
    for level in (1, 2):  # keep a valid value; also take the own best tuple
        lazy = run(level, kind, ratio)
        check(*lazy)
        assert len(lazy[3]) <= len(eager[3])
