"""auto: switches between dt, sweep and scan carry every query's exact accumulated weight, so the
outputs equal the oracle's whatever the switching schedule (forced at random points, or chosen by
the cost model as batch sizes change); snapshots keep the algorithm in use; the cost model."""

from __future__ import annotations

import numpy as np
import pytest

from vigil import registry
from vigil.state import pack, unpack
from vigil.threshold import auto as auto_mod
from vigil.threshold.auto import Auto, CostModel, choices
from vigil.threshold.oracle import ThresholdOracle


@pytest.fixture(autouse=True)
def _compiled_kernels(monkeypatch):
    """These tests steer auto with toy models in abstract units: a cold numba cache (CI's fresh
    clone) must not add its compile price to them (test_cold_cache_prices_the_compilation does)."""
    monkeypatch.setattr(auto_mod, "COMPILE_SECONDS", {})


def same(a, b, ctx=None):
    assert np.array_equal(np.asarray(a[0]), np.asarray(b[0])) and np.array_equal(np.asarray(a[1]), np.asarray(b[1])), (
        ctx, a, b)


def test_registry_entry():
    assert registry.resolve("threshold", "auto") is Auto


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forced_switches_mid_stream_match_the_oracle(d, seed):
    rng = np.random.default_rng(seed + 10 * d)
    o, a = ThresholdOracle(d), Auto(d)
    nq = 0
    seen = set()
    for step in range(60):
        r = rng.random()
        if r < 0.2:
            k = int(rng.integers(1, 30))
            lo = rng.integers(0, 10, (k, d)).astype(float)
            hi = lo + rng.integers(0, 6, (k, d))
            tau = rng.integers(1, 300, k)
            tau[rng.random(k) < 0.1] = 2**53
            ids = np.arange(nq, nq + k)
            nq += k
            o.register(ids, lo, hi, tau)
            a.register(ids, lo, hi, tau)
        elif r < 0.3:
            ids = rng.integers(0, max(nq, 1), 4)
            o.terminate(ids)
            a.terminate(ids)
        elif r < 0.5:
            target = a.algos[int(rng.integers(0, len(a.algos)))]
            a.switch_to(target)  # forced, mid-stream
            seen.add(target)
            if rng.random() < 0.3:
                a = Auto.from_state(unpack(pack(a.state())))
                assert a.current == target
        else:
            n = int(rng.integers(0, 80))
            pts = rng.integers(-1, 12, (n, d)).astype(float)
            w = rng.integers(1, 40, n)
            same(a.push(pts, w), o.push(pts, w), (d, seed, step, a.current))
        assert a.alive() == o.alive()
    assert len(seen) >= 2


class _Flip(CostModel):
    """A model that makes the preferred algorithm depend on the batch size only."""

    def __init__(self):
        super().__init__({})

    def push(self, algo, m, B, d, rho=None):
        best = "dt" if B < 10 else ("sweep" if B > 100 else "scan")
        if d > 2 and best == "sweep":
            best = "scan"
        return 1.0 if algo == best else 5.0

    def build(self, algo, m, d):
        return 2.0


@pytest.mark.parametrize("d", [1, 2])
def test_model_driven_switches_with_hysteresis_match_the_oracle(d):
    rng = np.random.default_rng(7)
    o, a = ThresholdOracle(d), Auto(d, model=_Flip(), adapt=False)
    k = 120
    lo = rng.integers(0, 10, (k, d)).astype(float)
    hi = lo + rng.integers(0, 6, (k, d))
    tau = rng.integers(50, 3000, k)
    o.register(np.arange(k), lo, hi, tau)
    a.register(np.arange(k), lo, hi, tau)
    used = []
    for step in range(40):
        B = [1, 3, 50, 300][(step // 5) % 4]
        pts = rng.integers(0, 12, (B, d)).astype(float)
        w = rng.integers(1, 30, B)
        same(a.push(pts, w), o.push(pts, w), (step, a.current))
        used.append(a.current)
    # regret 4 per push vs build cost 2: the first push in a new regime switches, not the others
    assert {"dt", "scan", "sweep"} <= set(used)
    assert a.switches <= 2 * 8 + 2


def test_default_model_is_fitted_and_sane():
    m = CostModel.default()
    for d in (1, 2):
        for algo in choices(d):
            assert m.push(algo, 100_000, 1000, d) > 0
            assert m.build(algo, 100_000, d) >= 0
        # the regimes the issue describes: huge batches -> sweep beats scan; a large m with
        # single-element pushes -> dt beats scan
        assert m.push("sweep", 100_000, 1_000_000, d) < m.push("scan", 100_000, 1_000_000, d)
        assert m.push("dt", 1_000_000, 1, d) < m.push("scan", 1_000_000, 1, d)


def test_empty_operator_switches_for_free():
    a = Auto(1, model=_Flip(), adapt=False)
    a.push(np.zeros((1, 1)), np.ones(1, np.int64))
    assert a.current == "dt"
    a.push(np.zeros((500, 1)), np.ones(500, np.int64))
    assert a.current == "sweep"


def test_observed_costs_correct_the_model():
    """A model that badly underrates the algorithm in use: the observed cost of its pushes raises
    its factor until auto leaves it, and the outputs stay exact."""

    class Wrong(CostModel):
        def __init__(self):
            super().__init__({})

        def push(self, algo, m, B, d, rho=None):
            return {"dt": 1e-9, "sweep": 2e-9}.get(algo, 1.0)

        def build(self, algo, m, d):
            return 1e-9

    rng = np.random.default_rng(3)
    o, a = ThresholdOracle(1), Auto(1, model=Wrong(), start="dt")
    k = 50
    lo = rng.integers(0, 10, (k, 1)).astype(float)
    for x in (o, a):
        x.register(np.arange(k), lo, lo + 3, np.full(k, 10**6))
    for _ in range(30):
        pts = rng.integers(0, 12, (20, 1)).astype(float)
        w = rng.integers(1, 30, 20)
        same(a.push(pts, w), o.push(pts, w))
    assert a.factor["dt"] > 1.5 and a.switches >= 1  # left dt, which the model underrated
    b = Auto.from_state(unpack(pack(a.state())))
    assert b.factor == a.factor


def test_first_push_picks_by_build_plus_push_without_pushing_on_the_holder():
    """Registrations before the first push are held by scan; the first push, whose batch size is
    known, moves them once to the algorithm with the cheapest predicted build + push."""
    a = Auto(1, model=_Flip(), adapt=False)
    rng = np.random.default_rng(5)
    lo = rng.integers(0, 10, (50, 1)).astype(float)
    a.register(np.arange(50), lo, lo + 3, np.full(50, 10**6))
    a.push(np.zeros((500, 1)), np.ones(500, np.int64))
    assert a.current == "sweep" and a.switches == 1


def test_termination_costs_count_in_the_choice():
    """dt's pushes are predicted cheapest, but each terminated query costs it much more than the
    others: with many terminations between pushes auto leaves dt (and outputs stay exact)."""

    class TermHeavy(CostModel):
        def __init__(self):
            super().__init__({})

        def push(self, algo, m, B, d, rho=None):
            return 1e-4 if algo == "dt" else 2e-4

        def build(self, algo, m, d):
            return 1e-6

        def term(self, algo, m, d):
            return 1e-3 if algo == "dt" else 1e-9

    rng = np.random.default_rng(4)
    o, a = ThresholdOracle(1), Auto(1, model=TermHeavy(), start="dt", adapt=False)
    k = 300
    lo = rng.integers(0, 10, (k, 1)).astype(float)
    for x in (o, a):
        x.register(np.arange(k), lo, lo + 3, np.full(k, 10**6))
    for step in range(20):
        ids = np.arange(12 * step, 12 * step + 12)
        o.terminate(ids)
        a.terminate(ids)
        pts = rng.integers(0, 12, (100, 1)).astype(float)
        w = rng.integers(1, 30, 100)
        same(a.push(pts, w), o.push(pts, w))
    assert a.current != "dt" and a.trate > 5


def _two_ratio_tables():
    """dt costs 1 s per push at rho = 0.2 and 0.01 s at rho = 2; the others 0.1 s whatever rho."""
    grid = {"ms": [1000, 100_000], "Bs": [1, 1000], "build": [1e-6, 1e-6], "term": [0.0, 0.0]}
    tabs = {a: {**grid, "push": [[0.1, 0.1], [0.1, 0.1]]} for a in choices(1)}
    tabs["dt"] = {**grid, "push": [[1.0, 1.0], [1.0, 1.0]], "rho": 0.2, "rho_hi": 2.0,
                  "push_hi": [[0.01, 0.01], [0.01, 0.01]]}
    return CostModel({"1": tabs})


def test_the_model_interpolates_dt_in_log_tau_over_m():
    m = _two_ratio_tables()
    assert m.push("dt", 10_000, 10, 1) == pytest.approx(1.0)  # no rho: the fit's ratio
    assert m.push("dt", 10_000, 10, 1, rho=0.2) == pytest.approx(1.0)
    assert m.push("dt", 10_000, 10, 1, rho=2.0) == pytest.approx(0.01)
    assert m.push("dt", 10_000, 10, 1, rho=0.2 * 10**0.5) == pytest.approx(0.1)  # geometric middle
    assert m.push("dt", 10_000, 10, 1, rho=200.0) == pytest.approx(0.01)  # not beyond the upper table
    assert m.push("dt", 10_000, 10, 1, rho=0.02) == pytest.approx(100.0)  # a decade below the lower one
    assert m.push("scan", 10_000, 10, 1, rho=2.0) == pytest.approx(0.1)  # one table: rho ignored


@pytest.mark.parametrize(("tau", "expect"), [(20, "scan"), (10**4, "dt")])
def test_thresholds_over_queries_steer_the_first_choice(tau, expect):
    """Same queries and batch, only the thresholds differ: with tau / (m x mean weight) = 2 (500
    queries, weights 10, tau 10^4) the two-ratio model predicts dt 10x cheaper than the others;
    at 0.004 (tau 20), far dearer."""
    rng = np.random.default_rng(3)
    o, a = ThresholdOracle(1), Auto(1, model=_two_ratio_tables(), adapt=False)
    k = 500
    lo = rng.integers(0, 10, (k, 1)).astype(float)
    for x in (o, a):
        x.register(np.arange(k), lo, lo + 3, np.full(k, tau))
    for _ in range(5):
        pts = rng.integers(0, 12, (100, 1)).astype(float)
        w = np.full(100, 10)
        same(a.push(pts, w), o.push(pts, w))
    assert (a.current == "dt") == (expect == "dt")


def test_cold_cache_prices_the_compilation(monkeypatch):
    """While DT's kernels are neither loaded nor in the numba cache, a move to DT is charged
    COMPILE_SECONDS: a model that prefers DT by a little keeps the queries elsewhere, one that
    prefers it by more than the compile time moves them; once compiled the charge is 0."""
    from vigil.threshold import dt as dt_mod

    monkeypatch.setattr(auto_mod, "COMPILE_SECONDS", {"dt": 60.0})
    monkeypatch.setattr(auto_mod, "_compiled", set())
    monkeypatch.setattr(dt_mod, "_warm", False)
    monkeypatch.setattr(dt_mod, "is_compiled", lambda: False)

    class DTBy(CostModel):
        def __init__(self, gain):
            super().__init__({})
            self.gain = gain

        def push(self, algo, m, B, d, rho=None):
            return 1e-4 if algo == "dt" else 1e-4 * (1.0 + self.gain)

        def build(self, algo, m, d):
            return 0.0

    rng = np.random.default_rng(0)
    # first push: 8,192 pushes of lookahead x 0.5e-4 s = 0.4 s of gain < 60 s; x 0.1 s = 819 s > 60
    for gain, expect in ((0.5, False), (1000.0, True)):
        a = Auto(1, model=DTBy(gain), adapt=False)
        a.register(np.arange(50), rng.integers(0, 5, (50, 1)).astype(float), np.full((50, 1), 9.0),
                   np.full(50, 10**9))
        for _ in range(3):
            monkeypatch.setattr(dt_mod, "_warm", False)  # building DT loads its kernels in-process
            a.push(np.zeros((2, 1)), np.ones(2, np.int64))
        assert (a.current == "dt") == expect, (gain, a.current)
    assert auto_mod._compile("dt") == 60.0
    monkeypatch.setattr(dt_mod, "_warm", True)
    assert auto_mod._compile("dt") == 0.0
