"""The substream-filter workload of paper 002 §6.3 (Fig. 12): a one-day stream of stock trades with
about 5,000 ticker symbols (the paper used a TAQ day; this is a synthetic stand-in), and SSF
queries "symbols with more than v trades in the last T" with suffix windows of 15 minutes to
3 hours and thresholds of 3-5% selectivity, lookups and updates equally interleaved.

Stream: ``n`` trades over the 6.5-hour trading day (09:30-16:00, timestamps in seconds since
midnight, Poisson arrivals), symbols drawn from a Zipf law over ``n_symbols`` ranks (exponent
``zipf_a``), share counts log-normal. Thresholds: for a window of T seconds, the expected count
of the symbol of rank r is n/day * T * p_r; a query with target selectivity s uses
v = floor(expected count of rank s * n_symbols), so about s * n_symbols symbols exceed it once the
window is full (the measured selectivity is reported by the benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DAY_OPEN = 9.5 * 3600.0
DAY_SECONDS = 6.5 * 3600.0


@dataclass(frozen=True)
class TradeDay:
    times: np.ndarray  # float64 seconds since midnight, non-decreasing
    keys: np.ndarray  # int64 symbol codes (0 = most traded)
    shares: np.ndarray  # float64 positive integers
    probs: np.ndarray  # the symbols' Zipf probabilities


def trade_day(n: int, n_symbols: int = 5000, zipf_a: float = 1.1, seed: int = 0) -> TradeDay:
    """``n`` trades of one trading day over ``n_symbols`` Zipf-distributed symbols."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, n_symbols + 1, dtype=np.float64)
    probs = ranks ** (-zipf_a)
    probs /= probs.sum()
    # a random permutation of codes would hide nothing from the algorithms: code = rank - 1
    keys = rng.choice(n_symbols, size=n, p=probs).astype(np.int64)
    times = np.round(DAY_OPEN + np.sort(rng.random(n)) * DAY_SECONDS, 3)
    shares = np.maximum(1.0, np.round(rng.lognormal(4.0, 1.2, n) / 100.0) * 100.0)
    return TradeDay(times, keys, shares, probs)


@dataclass(frozen=True)
class SSFQueries:
    T: np.ndarray  # float64 window lengths (seconds)
    v: np.ndarray  # float64 lower thresholds: range (v, inf)
    selectivity: np.ndarray  # target selectivity of each query


def ssf_queries(day: TradeDay, n_queries: int = 100, t_min: float = 900.0, t_max: float = 10800.0,
                sel: tuple[float, float] = (0.03, 0.05), seed: int = 1) -> SSFQueries:
    """COUNT queries (v, inf) over suffix windows T uniform in [t_min, t_max] with thresholds at
    the target selectivity (uniform in ``sel``)."""
    rng = np.random.default_rng(seed)
    T = np.round(rng.uniform(t_min, t_max, n_queries))
    s = rng.uniform(sel[0], sel[1], n_queries)
    rate = len(day.times) / DAY_SECONDS
    rank = np.maximum(1, np.round(s * len(day.probs))).astype(np.int64)
    v = np.floor(rate * T * day.probs[rank - 1])
    return SSFQueries(T, v, s)
