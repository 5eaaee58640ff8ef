"""One quantile definition everywhere (issue 22: 10): QUANTILE(phi) over N values is the value of
1-based rank max(1, ceil(phi*N)), phi read as the decimal it is written as (docs/contract.md), from
``vigil.arrays.quantile_rank``; the numba twin every windows kernel uses agrees with it, and every
windows QUANTILE implementation and both oracles answer it at the boundaries (phi = 1, phi -> 0,
phi*N integral, phi*N a hair above an integer). phi = 0 is not a quantile: rejected with a reason."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest

from vigil.arrays import decimal_value, quantile_rank, rank_fraction
from vigil.checks import Log, run_log
from vigil.quantiles.oracle import QuantileOracle
from vigil.windows._window_kernels import quantile_rank as kernel_rank

QNT_IMPLS = ["oracle", "bint_qnt", "wavelet_qnt", "materialize_none", "auto"]

# (phi, N, rank): phi = 1 (the maximum), phi -> 0 (the minimum), phi*N integral (no rounding up),
# phi*N just above an integer as written (0.0014285714285714286 * 700 = 1.00000000000000002: rank 2,
# where the binary double's product rounds to 1.0), the decimal reading of 0.07 * 100 = 7 exactly
BOUNDARIES = [
    (1.0, 1, 1), (1.0, 7, 7), (1.0, 700, 700),
    (1e-9, 7, 1), (5e-324, 700, 1), (0.0001, 700, 1),
    (0.25, 8, 2), (0.5, 700, 350), (0.75, 4, 3), (0.1, 30, 3), (0.3, 10, 3), (0.07, 100, 7),
    (0.25, 9, 3), (0.5, 7, 4), (0.99, 100, 99), (0.999, 700, 700),
    (0.0014285714285714286, 700, 2), (0.0033333333333333335, 300, 2), (1 / 3, 300, 100), (2 / 3, 3, 2),
]


@pytest.mark.parametrize(("phi", "n", "rank"), BOUNDARIES)
def test_the_helper_is_the_contract(phi, n, rank):
    assert quantile_rank(phi, n) == rank
    exact = decimal_value(phi) * n
    assert rank == max(1, -((-exact.numerator) // exact.denominator))  # ceil, in exact rationals


def test_phi_zero_and_empty_windows():
    assert quantile_rank(0.0, 5) == 1  # max(1, ceil(0)) (queries with phi = 0 are rejected: below)
    assert quantile_rank(0.5, 0) == 0


PHIS = [1.0, 0.5, 0.25, 0.07, 0.1, 0.3, 0.999, 1e-9, 5e-324, 0.0014285714285714286, 0.0033333333333333335,
        1 / 3, 2 / 3, 1 / 7, 0.37454011884736254, 1.2345678901234567e-5, 0.9999999999999999, 0.123456789, 0.1234567891]


@pytest.mark.parametrize("phi", PHIS)
def test_the_kernels_twin_agrees_with_the_helper(phi):
    num, den = rank_fraction(phi)
    assert 0 < den < 2**61
    rng = np.random.default_rng(0)
    counts = [*range(1, 3001), *rng.integers(1, 2**46, 3000).tolist(), 2**46, 2**47 - 1]
    f = decimal_value(phi)
    counts += [int(c) for c in (Fraction(1) / f * k for k in range(1, 50)) if 0 < c < 2**47]  # phi*N near k
    for c in counts:
        assert kernel_rank(phi, num, den, c) == quantile_rank(phi, c), (phi, c)


def _log(phi, n, time_based=False):
    rng = np.random.default_rng(int(n))
    v = rng.permutation(np.arange(1, n + 1)).astype(float)  # value = rank
    t = pa.table({"v": v, "ts": np.arange(n, dtype=float)})
    win = {"time": [10.0**9, 0]} if time_based else {"rows": [n + 5, 0]}
    qq = {"type": "window_aggregate", "id": "q", "agg": "quantile", "column": "v", "phi": phi, **win}
    return Log(t, [{"op": "register", "at": 0, "query": qq}, {"op": "lookup", "at": n, "id": "q"}])


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", QNT_IMPLS)
def test_every_windows_quantile_answers_the_contracts_rank(name):
    for time_based in (False, True):
        for phi, n, rank in BOUNDARIES:
            out = run_log(_log(phi, n, time_based), {"windows": name}, batch=97)
            ans = [r["value"] for r in out if r["event"] == "answer"]
            assert ans == [rank], (name, time_based, phi, n, out[-3:])


def test_the_quantiles_oracle_answers_the_contracts_rank():
    for phi, n, rank in BOUNDARIES:
        for rows in (None, n, n + 3):
            op = QuantileOracle(0.01, rows)
            op.register(0, phi, 0.01)
            op.push(np.random.default_rng(n).permutation(np.arange(1, n + 1)).astype(float), np.arange(1, n + 1))
            assert op.lookup(np.array([0]), n).tolist() == [rank], (phi, n, rows)


def test_phi_zero_is_rejected_with_a_reason():
    t = pa.table({"v": [1.0, 2.0]})
    ops = [{"op": "register", "at": 0, "query": {"type": "window_aggregate", "id": "w", "agg": "quantile",
                                                  "column": "v", "phi": 0, "rows": [5, 0]}},
           {"op": "register", "at": 0, "query": {"type": "quantile", "id": "g", "column": "v", "phi": 0.0,
                                                 "epsilon": 0.01}}]
    out = run_log(Log(t, ops))
    reasons = {r["id"]: r["reason"] for r in out if r["event"] == "rejected"}
    assert "phi" in reasons["w"] and "(0, 1]" in reasons["w"]
    assert "phi" in reasons["g"] and "(0, 1]" in reasons["g"]
