"""Rank (CDF) queries, ``"rank_of": x``: the fraction of the window's values <= x, answered on
lookup from the quantile operators' summaries, within |f*N - #(values <= x)| <= e*N + 1
(docs/contract.md, "Rank queries"); the oracle answers exactly."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, check_family, implementations, run_log
from vigil.quantiles.gk import GKSummary
from vigil.quantiles.rank import exact_fraction, rank_from_summary, rank_ok


def rank_log(n: int, batch: int, seed: int = 3, every: int = 1) -> Log:
    rng = np.random.default_rng(seed)
    v = np.where(rng.random(n) < 0.5, rng.integers(0, 50, n), rng.normal(300, 80, n).round(1))
    qs = [{"id": "r300", "type": "quantile", "column": "v", "rank_of": 300, "epsilon": 0.01},
          {"id": "r0", "type": "quantile", "column": "v", "rank_of": 0, "epsilon": 0.02},
          {"id": "rw", "type": "quantile", "column": "v", "rank_of": 250.5, "epsilon": 0.01, "rows": 100},
          {"id": "rbig", "type": "quantile", "column": "v", "rank_of": 1e9, "epsilon": 0.05, "rows": 7}]
    ops = [{"op": "register", "at": 0, "query": q} for q in qs]
    ops.append({"op": "register", "at": n // 4, "query": {**qs[0], "id": "late"}})
    ops += [{"op": "lookup", "at": a, "id": q} for a in range(0, n + 2, every) for q in ("r300", "r0", "rw", "rbig", "late")
            if not (q == "late" and a < n // 4)]
    return Log(pa.table({"v": v.astype(float)}), ops, quantile_epsilon=0.01, batch=batch)


def test_oracle_answers_the_exact_fraction():
    log = rank_log(300, 17)
    v = log.stream.column("v").to_numpy()
    got = [r for r in run_log(log, {"quantiles": "oracle"}) if r["event"] == "answer"]
    for r in got:
        if r["id"] == "r300":
            want = exact_fraction(v[:r["at"]], 300) if r["at"] else None
            assert r["value"] == (None if want is None else pytest.approx(want, abs=0)), r


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", [n if n in ("casu", "sliding") else pytest.param(n, marks=pytest.mark.slow)
                                  for n in implementations("quantiles")])  # the others: make test-all
@pytest.mark.parametrize("batch", [1, 64, pytest.param(2000, marks=pytest.mark.slow)])
def test_rank_answers_within_the_bound_at_every_position(name, batch):
    log = rank_log(2000 if batch > 1 else 400, batch, every=1 if batch > 1 else 3)
    check_family("quantiles", name, log, cut=log.stream.num_rows // 3)  # checks_quantiles: rank_ok


@pytest.mark.parametrize("extra", [{"rows": 10}, {"group_by": "v"}])
def test_rank_notify_over_rows_or_keys_is_refused_with_its_reason(extra):
    log = Log(pa.table({"v": [1.0, 2.0]}), [{"op": "register", "at": 0, "query": {
        "id": "r", "type": "quantile", "column": "v", "rank_of": 1, "epsilon": 0.01, "notify": True, **extra}}])
    (rej,) = [r for r in run_log(log) if r["event"] == "rejected"]
    assert "rank_of with notify: pushed rank queries are served over the whole stream" in rej["reason"]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", [n for n in implementations("quantiles") if n != "sliding"])
@pytest.mark.parametrize("batch", [1, 128, 3000])
def test_pushed_rank_within_the_bound_at_every_position(name, batch):
    """Pushed (notify) rank queries: updates only when the maintained fraction must change; the
    latest one within the bound after every element (checks_quantiles), few of them (lazy)."""
    n = 3000 if batch > 1 else 600
    rng = np.random.default_rng(2)
    v = np.where(rng.random(n) < 0.5, rng.integers(0, 50, n), rng.normal(300, 80, n).round(1)).astype(float)
    ops = [{"op": "register", "at": 0, "query": {"id": "r", "type": "quantile", "column": "v", "rank_of": 300,
                                                 "epsilon": 0.01, "notify": True}},
           {"op": "register", "at": n // 6, "query": {"id": "r2", "type": "quantile", "column": "v", "rank_of": 40,
                                                      "epsilon": 0.02, "notify": True}},
           {"op": "lookup", "at": n // 3, "id": "r"}, {"op": "terminate", "at": n // 2, "id": "r2"}]
    log = Log(pa.table({"v": v}), ops, quantile_epsilon=0.005, batch=batch)
    check_family("quantiles", name, log, cut=n // 4)
    ups = [r for r in run_log(log, {"quantiles": name}) if r["event"] == "update"]
    assert 2 <= len(ups) <= n // 20, len(ups)


def test_rank_from_summaries():
    x = np.random.default_rng(0).normal(0, 1, 20_000)
    srt = np.sort(x)
    for t in (-5.0, -1.0, 0.0, 0.3, 2.5, 9.0):
        assert rank_from_summary(srt, t) == exact_fraction(x, t)
    g = GKSummary(0.01)
    g.insert(x)
    v, lo, hi = g.tuples()
    tup = np.column_stack([v, lo.astype(float), hi.astype(float)])
    for t in np.linspace(-3, 3, 41):
        f = rank_from_summary(tup, float(t))
        assert rank_ok(x, f, float(t), 0.01), (t, f, exact_fraction(x, t))
    assert np.isnan(rank_from_summary(np.empty(0), 1.0))


def test_monitor_lookup_of_a_rank_query():
    from vigil import Monitor

    m = Monitor(algos={"quantiles": "casu"})
    m.register({"id": "r", "type": "quantile", "column": "lat", "rank_of": 300, "epsilon": 0.01})
    m.register("SELECT APPROX_CDF(lat, 100, 0.01) FROM requests [ROWS 4]", id="c")
    assert m.lookup("r") is None
    m.push({"lat": [100.0, 250.0, 300.0, 301.0, 900.0]})
    assert m.lookup("r") == pytest.approx(0.6, abs=0.01 + 1 / 5)
    assert m.lookup("c") == pytest.approx(0.0, abs=0.01 + 1 / 4)
