"""Kernels that turn a run of substream answers into columns (vigil.windows.group.ranked_lists)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def sorted_ranks(rank, codes, offs):
    """``rank[codes]`` with each answer's slice ``offs[i]:offs[i + 1]`` sorted ascending."""
    out = np.empty(len(codes), np.int64)
    for j in range(len(codes)):
        out[j] = rank[codes[j]]
    for i in range(len(offs) - 1):
        a, b = offs[i], offs[i + 1]
        if b - a > 1:
            out[a:b].sort()
    return out
