"""DT memory pool (paper 000 §4 global rebuilding in the memory of the replaced structure): the
big arrays of a new structure are carved from the released buffers of the structure(s) it
replaces, so a rebuild neither asks the kernel for fresh (zeroed) pages nor holds more than
O(m_alive log^d m_alive) words."""

from __future__ import annotations

import numpy as np

#: a rebuild reuses a buffer of the structure it replaces only if it needs >= 1/REUSE_SLACK of it
REUSE_SLACK = 4


def _madvise_hugepage(on: bool) -> bool:
    """numpy's process-wide huge-page hint for new large arrays; returns the previous setting."""
    try:
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:  # pragma: no cover - other numpy layouts: leave numpy's default
        return on
    return bool(_set_madvise_hugepage(on))


def _take(pool: list[np.ndarray] | None, shape: tuple[int, ...], dtype) -> np.ndarray:
    """An uninitialised array of ``shape``: carved from the smallest released buffer of ``pool``
    that is large enough but at most ``REUSE_SLACK`` times too large (memory already faulted in:
    no page zeroing by the kernel; the bound keeps space O(m_alive) through the halvings of §4),
    else new."""
    need = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if pool:
        fits = [i for i, b in enumerate(pool) if need <= b.nbytes <= REUSE_SLACK * max(need, 1 << 16)]
        if fits:
            b = pool.pop(min(fits, key=lambda i: pool[i].nbytes))
            return b[:need].view(dtype).reshape(shape)
    return np.empty(shape, dtype=dtype)


def _owner(a: np.ndarray) -> np.ndarray:
    """The array owning ``a``'s memory (made by np.empty, contiguous)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a
