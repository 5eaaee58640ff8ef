"""Windows lookups at many positions answered in one operator call (``RInt.push_lookup``,
``WindowGroup.push_lookup``) give the answers of pushing and looking up position by position."""

import numpy as np
import pytest

from vigil.specs import parse_query
from vigil.windows.auto import Auto
from vigil.windows.rint import RInt


def _ops(agg, windows, cls):
    op = cls(agg, False)
    for q, (nl, nr) in enumerate(windows):
        op.register(q, parse_query({"type": "window_aggregate", "id": f"q{q}", "agg": agg, "column": "v",
                                    "rows": [nl, nr]}), 0)
    return op


@pytest.mark.timeout(300)
@pytest.mark.parametrize("cls", [RInt, Auto])
@pytest.mark.parametrize("agg", ["sum", "count", "avg"])
def test_push_lookup_equals_push_then_lookup(cls, agg):
    rng = np.random.default_rng(3)
    windows = [(int(rng.integers(1, 300)), int(rng.integers(0, 3))) for _ in range(40)]
    a, b = _ops(agg, windows, cls), _ops(agg, windows, cls)
    seq, fast = 0, 0
    for _ in range(60):
        k = int(rng.integers(0, 200))
        vals = rng.normal(size=k)
        vals[rng.random(k) < 0.1] = np.nan
        seqs = seq + np.cumsum(rng.integers(1, 3, k)).astype(np.int64)
        seq = int(seqs[-1]) if k else seq
        npos = int(rng.integers(1, 6))
        cuts = np.sort(rng.integers(0, k + 1, npos)).astype(np.int64)
        cuts[-1] = k
        ns = np.asarray([int(seqs[c - 1]) if c else 0 for c in cuts], np.int64)
        ns = np.maximum.accumulate(np.maximum(ns, 1))
        per = [rng.integers(0, len(windows), int(rng.integers(1, 5))) for _ in cuts]
        starts = np.r_[0, np.cumsum([len(p) for p in per])].astype(np.int64)
        qids = np.concatenate(per).astype(np.int64)
        got = a.push_lookup(vals, seqs, cuts, ns, starts, qids)
        fast += got is not None
        for op in ([b] if got is not None else [a, b]):  # None: nothing done, the caller goes one by one
            want, fed = [], 0
            for c, n in enumerate(ns.tolist()):
                if cuts[c] > fed:
                    op.push(vals[fed:cuts[c]], seqs[fed:cuts[c]])
                    fed = int(cuts[c])
                want.append(op.lookup(qids[starts[c]:starts[c + 1]], n))
            got = np.concatenate(want) if got is None else got
        np.testing.assert_array_equal(got, np.concatenate(want))
        if rng.random() < 0.1:  # terminations and new queries: the rings resize (push_lookup declines)
            q, w = int(rng.integers(0, len(windows))), int(rng.integers(1, 600))
            for op in (a, b):
                op.terminate(q)
                op.register(q, parse_query({"type": "window_aggregate", "id": "x", "agg": agg, "column": "v",
                                            "rows": [w, 0]}), seq)
    assert fast >= 10
