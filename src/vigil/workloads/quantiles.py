"""Workloads of paper 004's experiments (§5, Table 1): data streams (uniform, normal, semisort),
query sets ((phi, eps_q) uniform or Zipf, eps_q in a range, eps_q < phi), query arrival patterns
(predefined, dynamic, batches dropped like a sliding window)."""

from __future__ import annotations

import numpy as np


def data_stream(kind: str, n: int, seed: int = 0) -> np.ndarray:
    """float64[n]: 'uniform' (on [0, 1e6)), 'normal' (mean 5e5, sd 1e5) or 'semisort' (disjoint
    increasing blocks of 1,000 values, unsorted inside: later blocks hold larger values)."""
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.random(n) * 1e6
    if kind == "normal":
        return rng.normal(5e5, 1e5, n)
    if kind == "semisort":
        return (np.arange(n) // 1000) * 1000.0 + rng.random(n) * 1000.0
    raise ValueError(f"unknown stream {kind!r}; expected uniform, normal or semisort")


def query_set(n: int, dist: str = "uniform", eps_range: tuple[float, float] = (0.005, 0.02),
              seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(phi, eps_q) of n queries: phi uniform on (0, 1] or Zipf (parameter 1.0 over 1,000 ranks of
    phi, ranks shuffled), eps_q uniform in eps_range, with eps_q < phi (§5.1)."""
    rng = np.random.default_rng(seed)
    if dist == "uniform":
        phi = 1.0 - rng.random(n)
    elif dist == "zipf":
        k = 1000
        w = 1.0 / np.arange(1, k + 1)
        grid = rng.permutation(np.arange(1, k + 1) / k)
        phi = grid[rng.choice(k, n, p=w / w.sum())]
    else:
        raise ValueError(f"unknown query distribution {dist!r}")
    lo, hi = eps_range
    eps_q = lo + rng.random(n) * (hi - lo)
    eps_q = np.minimum(eps_q, np.maximum(phi * 0.999, lo))
    return phi, eps_q


def arrivals(n_queries: int, n_elements: int, seed: int = 2) -> np.ndarray:
    """Dynamic queries (§5.5): each query's arrival position, uniform over the stream, sorted."""
    return np.sort(np.random.default_rng(seed).integers(0, n_elements, n_queries))


def query_batches(n_queries: int, k: int, seed: int = 3) -> list[np.ndarray]:
    """§5.1/§5.5: the query ids split at random into k batches (uni10, zipf20, ...)."""
    perm = np.random.default_rng(seed).permutation(n_queries)
    return np.array_split(perm, k)
