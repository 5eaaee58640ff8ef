"""auto's shortcuts answer exactly as the plain algorithms: QUANTILE windows of <= QUANTILE_DIRECT
elements by a quickselect over the raw ring (vs B-INT-QNT's piece selection), and the seq search's
no-gap fast path (vs streams with seq gaps)."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.specs import parse_query
from vigil.windows import auto as auto_mod
from vigil.windows.auto import Auto
from vigil.windows.bint_qnt import BIntQnt
from vigil.windows.materialize import MaterializeNone


def _spec(qid: int, agg: str, nl: int, nr: int, phi: float | None = None):
    d = {"type": "window_aggregate", "id": f"q{qid}", "agg": agg, "column": "v", "rows": [nl, nr]}
    if phi is not None:
        d["phi"] = phi
    return parse_query(d)


@pytest.mark.parametrize("gaps", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_auto_quantile_direct_equals_pieces(seed: int, gaps: bool) -> None:
    rng = np.random.default_rng(seed)
    ops = [Auto("quantile", False), BIntQnt("quantile", False), MaterializeNone("quantile", False)]
    assert ops[0]._sub("main").direct == auto_mod.QUANTILE_DIRECT > 0 and ops[1].direct == 0
    n_q = 60
    for qid in range(n_q):
        w = int(rng.integers(1, 3 * auto_mod.QUANTILE_DIRECT))
        nr = int(rng.integers(0, 40)) if qid % 2 else 0
        phi = float(rng.choice([0.01, 0.1, 0.5, 0.9, 1.0]))
        for op in ops:
            op.register(qid, _spec(qid, "quantile", nr + w, nr, phi), 0)
    seq = 0
    for _ in range(6):
        k = int(rng.integers(1, 300))
        vals = np.round(rng.normal(size=k), 1)  # ties
        vals[rng.random(k) < 0.15] = np.nan  # NULLs
        step = rng.integers(1, 4, size=k) if gaps else np.ones(k, np.int64)
        seqs = seq + np.cumsum(step)
        seq = int(seqs[-1])
        for op in ops:
            op.push(vals, seqs, None)
        q = rng.integers(0, n_q, size=500)
        got = [op.lookup(q, seq) for op in ops]
        np.testing.assert_array_equal(got[0], got[2])
        np.testing.assert_array_equal(got[1], got[2])
    st = ops[0].state()
    again = Auto.from_state(st)
    assert again._sub("main").direct == auto_mod.QUANTILE_DIRECT
    np.testing.assert_array_equal(again.lookup(np.arange(n_q), seq), ops[2].lookup(np.arange(n_q), seq))


@pytest.mark.parametrize("agg", ["min", "max"])
def test_auto_minmax_routes_lint_bint_deque(agg: str) -> None:
    """Suffix windows on the deque, historical ones on L-INT while they fit LINT_GAMMA parts, the
    rest on B-INT; registrations, terminations and a restore between pushes; same answers as
    materialize_none."""
    rng = np.random.default_rng(7)
    op, ref = Auto(agg, False), MaterializeNone(agg, False)
    widths = [3, 5, 40, 70, 300, 9, 1, 2]  # classes 2, 4, 32, 64, 256, 8, 1, 2
    qid, seq, alive = 0, 0, []
    for rnd in range(8):
        for _ in range(4):
            w = widths[(qid * 3) % len(widths)]
            nr = 0 if qid % 3 == 0 else int(rng.integers(1, 50))
            for o in (op, ref):
                o.register(qid, _spec(qid, agg, nr + w, nr), seq)
            alive.append(qid)
            qid += 1
        if rnd % 3 == 2:
            dead = alive.pop(int(rng.integers(0, len(alive))))
            op.terminate(dead)
            ref.terminate(dead)
        k = int(rng.integers(1, 400))
        vals = np.round(rng.normal(size=k), 1)
        vals[rng.random(k) < 0.1] = np.nan
        seqs = seq + np.cumsum(rng.integers(1, 3, size=k))
        seq = int(seqs[-1])
        op.push(vals, seqs, None)
        ref.push(vals, seqs, None)
        if rnd == 4:
            op = Auto.from_state(op.state())
        q = np.array(alive)[rng.integers(0, len(alive), size=300)]
        np.testing.assert_array_equal(op.lookup(q, seq), ref.lookup(q, seq))
    assert set(op.subs) == {"main", "hist", "lint"}
    assert len(op.subs["lint"].part_w) == auto_mod.LINT_GAMMA
    assert set(np.unique(op.route[alive]).tolist()) == {0, 1, 2}
