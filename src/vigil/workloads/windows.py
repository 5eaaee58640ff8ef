"""Workloads of the windows family: the experimental setup of paper 002 (Arasu & Widom, VLDB
2004), §6.1-§6.2. The paper's experiments are data-independent (synthetic data), so:

* stream: values ``N(0, 1)`` rounded to 3 decimals (float64), seqs 1..n, times = cumulative
  sums of Poisson(1) gaps (equal timestamps occur);
* fig9 (§6.1): 1,000 operators ``SUM S[N, 0]`` with N = 1..1000 (the paper's 0..999; a window
  needs N >= 1 here), an input of updates and lookups mixed at a given update fraction, lookups
  uniform over the operators; :func:`mixed_blocks` cuts it into blocks of ``batch`` events
  (updates first, then lookups, each as one batch call);
* fig10/fig11 (§6.2): operators with windows spread uniformly over the permitted range (suffix and
  historical: width W, right end NR uniform in [0, N_max - W], distinct), one operator with
  NL = N_max so that N_max is what the structure must keep; lookups uniform over the operators.
  fig11 uses N_max = max(10^5, 2 W): at W = N_max = 10^5 every historical window would be the same
  one.
"""

from __future__ import annotations

import numpy as np


def stream(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, seqs, times) of an n-element synthetic stream."""
    rng = np.random.default_rng(seed)
    vals = np.round(rng.normal(size=n), 3)
    seqs = np.arange(1, n + 1, dtype=np.int64)
    times = np.cumsum(rng.poisson(1.0, n)).astype(np.float64)
    return vals, seqs, times


def fig9_windows(n_ops: int = 1000) -> np.ndarray:
    """(NL, NR) rows of the §6.1 operators: SUM S[N, 0], N = 1..n_ops."""
    return np.stack([np.arange(1, n_ops + 1), np.zeros(n_ops, np.int64)], axis=1).astype(np.int64)


def spread_windows(n_ops: int, width: int, n_max: int, seed: int = 0, suffix_only: bool = False) -> np.ndarray:
    """(NL, NR) rows of width W with NR uniform in [0, N_max - W] (NR = 0 when suffix_only); the
    first operator reaches back N_max elements (NL = N_max), so the structure keeps N_max. The
    right ends are drawn without replacement (distinct windows) when N_max - W + 1 >= n_ops; the
    fig11 runner keeps N_max >= 2 W so that this holds at every W (suffix windows of one width are
    one window by definition)."""
    rng = np.random.default_rng(seed)
    width = max(1, min(int(width), int(n_max)))
    span = n_max - width + 1
    if suffix_only:
        nr = np.zeros(n_ops, np.int64)
    else:
        nr = rng.choice(span, n_ops, replace=span < n_ops).astype(np.int64)
    w = np.stack([nr + width, nr], axis=1).astype(np.int64)
    w[0] = (n_max, 0) if suffix_only else (n_max, n_max - width)
    return w


def lookup_qids(n_lookups: int, n_ops: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 1).integers(0, n_ops, n_lookups).astype(np.int64)


def mixed_blocks(n_events: int, update_fraction: float, batch: int) -> list[tuple[int, int]]:
    """Blocks of ``batch`` events as (updates, lookups), updates first; the fractions are exact
    over the whole input (largest-remainder rounding per block)."""
    out = []
    done_u = done = 0
    while done < n_events:
        b = min(batch, n_events - done)
        u = int(round((done + b) * update_fraction)) - done_u
        u = max(0, min(b, u))
        out.append((u, b - u))
        done += b
        done_u += u
    return out
