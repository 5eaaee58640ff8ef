"""DT kernels: the key space (order-preserving float64 -> int64 keys) and shared constants.
See :mod:`vigil.threshold._kernels` for the layout of every array."""

from __future__ import annotations

import numpy as np

I64_MAX = np.iinfo(np.int64).max
I64_MIN = np.iinfo(np.int64).min
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)
_LO32 = np.int64(0xFFFFFFFF)
#: key(+inf) + 1: the upper key of a range unbounded above; never stored in a tree
KINF1 = np.int64(0x7FF0000000000001)

#: distributed tracking (paper 000 §3.2/§7, slack split by rate): a round's slack tau'/2 is cut
#: into (1 + SHARE) * h units, one unit per participant plus SHARE * h units shared by rate
SHARE = 3
#: direct mode when the remaining threshold is <= DIRECT * h (>= 2 (1 + SHARE): a unit >= 1)
DIRECT = max(6, 2 * (1 + SHARE))

#: private pieces of bucketed trees (``_dt_bucket``) per chunk = 2**CHUNK_BITS (one tag row each)
CHUNK_BITS = 5

# indices of the statistics vector filled by the kernels
ST_SIGNALS, ST_ROUNDS, ST_MATURED, ST_DIRECT, ST_PURGED = 0, 1, 2, 3, 4
N_STATS = 5


# --------------------------------------------------------------------------------------------
# key mapping (numpy, vectorized)
# --------------------------------------------------------------------------------------------


def float_keys(x: np.ndarray) -> np.ndarray:
    """Order-preserving bijection float64 -> int64 (``-0.0`` is first folded into ``+0.0``).
    Consecutive floats map to consecutive integers, so ``key(hi) + 1`` stands for ``hi + eps``."""
    x = np.ascontiguousarray(x, dtype=np.float64) + 0.0
    b = x.view(np.int64)
    return np.where(b < 0, b ^ _FLIP, b)


def keys_to_float(k: np.ndarray) -> np.ndarray:
    """Inverse of :func:`float_keys`."""
    k = np.ascontiguousarray(k, dtype=np.int64)
    return np.where(k < 0, k ^ _FLIP, k).view(np.float64)
