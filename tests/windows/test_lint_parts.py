"""L-INT's general case (paper 002, §3.1.2): operators partitioned into gamma parts with
W_max/W_min < c in each, one special-case instance (Fig. 5) per part; c a parameter."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vigil.specs import parse_query
from vigil.windows.lint import LInt
from vigil.windows.materialize import MaterializeNone


def _spec(qid: int, agg: str, nl: int, nr: int):
    return parse_query({"type": "window_aggregate", "id": f"q{qid}", "agg": agg, "column": "v", "rows": [nl, nr]})


@pytest.mark.parametrize("c", [2, 3, 4, 8])
@pytest.mark.parametrize("agg", ["max", "count", "sum"])
def test_parts_and_answers(c: int, agg: str) -> None:
    rng = np.random.default_rng(c)
    op, ref = LInt(agg, False, c=c), MaterializeNone(agg, False)
    widths = rng.integers(1, 700, size=40)
    seq = 0
    for qid, w in enumerate(widths.tolist()):
        nr = int(rng.integers(0, 30)) if qid % 2 else 0
        op.register(qid, _spec(qid, agg, nr + w, nr), seq)
        ref.register(qid, _spec(qid, agg, nr + w, nr), seq)
        if qid % 8 == 7:  # elements between registrations
            k = int(rng.integers(1, 900))
            vals = np.round(rng.normal(size=k) * 10)
            vals[rng.random(k) < 0.1] = np.nan
            seqs = seq + np.arange(1, k + 1)
            seq = int(seqs[-1])
            op.push(vals, seqs, None)
            ref.push(vals, seqs, None)
            q = np.arange(qid + 1)
            if agg == "sum":
                np.testing.assert_allclose(op.lookup(q, seq), ref.lookup(q, seq), rtol=1e-12, atol=1e-9)
            else:
                np.testing.assert_array_equal(op.lookup(q, seq), ref.lookup(q, seq))
    # every part: W_min a power of c, and every query's width in [W_min, c W_min - 1]
    classes = {op.part_of(int(w)) for w in widths.tolist()}
    assert set(op.part_w) == classes and op.gamma == len(classes)
    assert op.gamma <= math.floor(math.log(int(widths.max()), c) + 1e-9) + 1
    for w in widths.tolist():
        p = op.part_of(int(w))
        assert p <= w <= c * p - 1 and c ** round(math.log(p, c)) == p
    # snapshot/restore keeps c and the parts
    again = LInt.from_state(op.state())
    assert again.c == c and again.part_w == op.part_w
    q = np.arange(len(widths))
    np.testing.assert_array_equal(again.lookup(q, seq), op.lookup(q, seq))


def test_clustered_widths_need_one_part_and_larger_c_fewer_parts() -> None:
    """Widths clustered in [1024, 2047] form one part for c = 2 (the paper: gamma can be much
    smaller than log N_max); widths 1..4095 need 12 parts for c = 2, 6 for c = 4, 4 for c = 8."""
    op = LInt("min", False)
    for qid, w in enumerate(range(1024, 2048, 37)):
        op.register(qid, _spec(qid, "min", w + 5, 5), 0)
    assert op.gamma == 1
    for c, gamma in ((2, 12), (4, 6), (8, 4)):
        op = LInt("max", False, c=c)
        for qid, w in enumerate([*range(1, 64), *range(64, 4096, 7)]):
            op.register(qid, _spec(qid, "max", w, 0), 0)
        assert op.gamma == gamma, (c, op.gamma)


def test_bad_c() -> None:
    with pytest.raises(ValueError, match="integer >= 2"):
        LInt("sum", False, c=1)
