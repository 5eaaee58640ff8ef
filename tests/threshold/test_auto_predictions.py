"""Auto's cost predictions: the default model's table is shared by every Auto of a dimension, each
entry is computed when first read, and the choices are those of computing every entry at once."""

import numpy as np
import pytest

from vigil.threshold._auto_model import MODEL
from vigil.threshold.auto import Auto, CostModel, _Predictions, choices


def test_default_model_and_its_predictions_are_shared():
    a, b = Auto(1), Auto(1)
    assert a.model is b.model is CostModel.default()
    assert a._pred is b._pred
    assert Auto(2)._pred is not a._pred
    own = CostModel(MODEL["tables"])
    assert Auto(1, model=own)._pred is not a._pred


@pytest.mark.parametrize("d", [1, 2])
def test_entries_equal_the_model(d):
    m = CostModel(MODEL["tables"])
    rng = np.random.default_rng(d)
    for _ in range(50):
        key = (int(rng.integers(0, 90)), int(rng.integers(0, 90)), None if rng.random() < 0.3 else int(rng.integers(-40, 20)))
        p = _Predictions(m, d, key)
        mq = max(0, int(round(2 ** (key[0] / 4) - 1)))
        bq = max(1, int(round(2 ** (key[1] / 4))))
        rq = None if key[2] is None else 2 ** (key[2] / 4)
        h = max(1, mq // 2)
        for a in choices(d):
            assert p["term:" + a] == m.term(a, mq, d) + m.build(a, h, d) / h
            assert p[a] == m.push(a, mq, bq, d, rq)
            assert p["build:" + a] == m.build(a, mq, d)


class _Eager(Auto):
    """Every entry of a key computed at its first read (the table filled at once)."""

    def _predict(self, m, B):
        p = super()._predict(m, B)
        for a in self.algos:
            p[a], p["build:" + a], p["term:" + a]  # noqa: B018
        return p


@pytest.mark.parametrize("d", [1, 2])
def test_choices_equal_those_of_the_full_table(d):
    rng = np.random.default_rng(11 + d)
    # adapt=False: no observed seconds (which differ between two runs) in the choices
    lazy = Auto(d, model=CostModel(MODEL["tables"]), adapt=False)
    eager = _Eager(d, model=CostModel(MODEL["tables"]), adapt=False)
    seen = []
    nq = 0
    for step in range(120):
        r = rng.random()
        if r < 0.15:
            k = int(rng.integers(1, 20_000))
            lo = rng.uniform(0, 50, (k, d))
            hi = lo + rng.uniform(0, 30, (k, d))
            tau = rng.integers(1, 5000, k)
            q = np.arange(nq, nq + k)
            nq += k
            for a in (lazy, eager):
                a.register(q, lo, hi, tau)
        elif r < 0.25 and nq:
            q = rng.integers(0, nq, int(rng.integers(1, 50)))
            for a in (lazy, eager):
                a.terminate(np.unique(q))
        else:
            B = int(rng.choice([1, 1, 5, 60, 700, 50_000]))
            pts = rng.uniform(0, 80, (B, d))
            w = rng.integers(1, 20, B)
            x, y = lazy.push(pts, w), eager.push(pts, w)
            assert all(np.array_equal(u, v) for u, v in zip(x, y, strict=True))
        assert lazy.current == eager.current, step
        seen.append(lazy.current)
    assert lazy.switches == eager.switches
    assert len(set(seen)) >= 2
