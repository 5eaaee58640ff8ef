"""Rank (CDF) queries: the fraction of a window's values <= x, from the same summaries the
quantile queries use (docs/contract.md, "Rank queries").

A query ``"rank_of": x`` is registered in its operator like a quantile query that is answered on
lookup (it shares the operator's summary: the GK summary of its epoch, paper 004 §2.3, or the
window's bucket summary, §4); a lookup reads the query's summary as tuples (v, r-, r+) (the
mergeable form of :meth:`QuantileOperator.summary`) and estimates the number of values <= x:
with i the last tuple whose value is <= x, the count lies in [r-_i, r+_{i+1} - 1] (0 before the
first tuple, N after the last), and the answer is the middle of that interval over N. A GK
summary of precision e keeps r+_{i+1} - r-_i <= 2 e N, so the answer f satisfies
|f N - #(values <= x)| <= e N (the contract allows e N + 1); the oracle's summary is the sorted
window (exact). O(m) per lookup for m tuples.
"""

from __future__ import annotations

import math

import numpy as np

from . import as_tuples


def rank_from_summary(summary: np.ndarray, x: float) -> float:
    """The estimated fraction of the summarized values that are <= x (module doc); NaN when the
    summary is empty."""
    t = as_tuples(summary)
    m = len(t)
    if not m:
        return math.nan
    n = float(t[-1, 2])
    if n <= 0:
        return math.nan
    i = int(np.searchsorted(t[:, 0], x, side="right")) - 1
    lo = 0.0 if i < 0 else float(t[i, 1])
    hi = n if i + 1 >= m else float(t[i + 1, 2]) - 1.0
    hi = max(hi, lo)
    return (lo + hi) / 2.0 / n


def rank_answers(op, rank: dict[int, float], qids: np.ndarray, n: int, out: np.ndarray) -> np.ndarray:
    """``out`` (the operator's answers for ``qids`` after element n) with the rank queries' answers
    put in place."""
    out = np.array(out, np.float64)
    for i, q in enumerate(qids.tolist()):
        x = rank.get(q)
        if x is not None:
            out[i] = rank_from_summary(op.summary(q, n), x)
    return out


def exact_fraction(values: np.ndarray, x: float) -> float:
    """The exact fraction of the non-null ``values`` <= x (NaN when there is none): the oracle."""
    v = np.asarray(values, np.float64)
    v = v[~np.isnan(v)]
    return float(np.count_nonzero(v <= x)) / len(v) if len(v) else math.nan


def rank_ok(values: np.ndarray, answer: float, x: float, eps: float) -> bool:
    """Does ``answer`` satisfy a rank query over ``values`` at precision eps: null for an empty
    window, else |answer * N - #(values <= x)| <= eps * N + 1 (eps, as a decimal, exactly)?"""
    from fractions import Fraction

    from ..arrays import decimal_value

    v = np.asarray(values, np.float64)
    v = v[~np.isnan(v)]
    if not len(v):
        return math.isnan(answer)
    if math.isnan(answer):
        return False
    c = int(np.count_nonzero(v <= x))
    return abs(Fraction(answer) * len(v) - c) <= decimal_value(eps) * len(v) + 1
