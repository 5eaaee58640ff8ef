"""CSU (and SU) re-evaluate only the cluster a registration creates or changes (paper 004 §3.5.1:
"Once a new cluster Q' forms, Algorithm 3 is invoked with only Q' as the input"), not every
cluster as when the global trigger fires: one registration costs one re-evaluation whatever the
number of clusters, and the answers stay within their precision."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.arrays import quantile_rank
from vigil.quantiles.csu import CSU
from vigil.quantiles.su import SU

EPS = 0.005
GROUPS = 40  # well apart query groups: about one cluster each


def _operator(cls, notify):
    rng = np.random.default_rng(3)
    k = 5
    centre = np.repeat((np.arange(GROUPS) + 0.5) / GROUPS, k)
    phi = centre + rng.uniform(-0.002, 0.002, len(centre))
    eq = rng.uniform(0.008, 0.012, len(centre))
    op = cls(EPS, None)
    op.register_many(np.arange(len(phi)), phi, eq, 0, notify=notify)
    x = rng.normal(0.0, 1.0, 6000)
    op.push(x, np.arange(1, len(x) + 1))
    return op, x, phi, eq


def _quiet_element(op, x):
    """Push elements until the next one fires no trigger of ``op`` (a copy pushed ahead tells);
    returns (the stream pushed so far, that next element)."""
    rng = np.random.default_rng(8)
    for _ in range(200):
        y = np.array([rng.normal()])
        twin = type(op).from_state(op.state())
        twin.push(y, np.array([op.last_seq + 1]))
        if twin.stats["fires"] == 0:  # (a restored operator counts from 0)
            return x, y
        op.push(y, np.array([op.last_seq + 1]))
        x = np.append(x, y)
    raise AssertionError("no quiet position")


def _check_values(op, xs, qids, phi, eq):
    srt = np.sort(xs)
    n = len(srt)
    got = op.lookup(np.asarray(qids), n)
    for v, f, e in zip(got.tolist(), phi.tolist(), eq.tolist(), strict=True):
        lo, hi = np.searchsorted(srt, v, "left") + 1, np.searchsorted(srt, v, "right")
        t = quantile_rank(f, n)
        assert max(0, lo - t, t - hi) <= max(e, EPS) * n + 1, (v, f, e)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("notify", [True, "cluster"])
@pytest.mark.parametrize(("cls", "kind"), [(CSU, "new"), (CSU, "merge"), (SU, "new")])
def test_a_registration_reevaluates_only_its_cluster(cls, kind, notify):
    op, x, phi, eq = _operator(cls, notify)
    k = op.cluster_count()
    assert k >= GROUPS
    x, y = _quiet_element(op, x)
    # new: between two groups (a cluster of its own); merge: a point query inside a group's
    # cluster (the cluster narrows to the point)
    qphi = 3.0 / GROUPS if kind == "new" else 7.5 / GROUPS
    qeps = 0.006 if kind == "new" else EPS
    op.register(10**6, qphi, qeps, 0, notify=notify)
    op.epochs[0].flush()
    assert op.cluster_count() == (k if kind == "merge" else k + 1)
    f0 = op.stats["fires"]
    op.push(y, np.array([op.last_seq + 1]))
    assert op.stats["fires"] - f0 == 1  # only the registration's cluster (before: all k + 1)
    # every answer stays valid, the new query's included, while the stream goes on
    more = np.random.default_rng(5).normal(0.0, 1.0, 3000)
    op.push(more, np.arange(op.last_seq + 1, op.last_seq + 1 + len(more)))
    xs = np.concatenate([x, y, more])
    qids = np.r_[np.arange(len(phi)), 10**6]
    _check_values(op, xs, qids, np.r_[phi, qphi], np.r_[eq, qeps])
