"""The range of weights and thresholds the threshold family accepts, and the helper that keeps
every implementation's int64 arithmetic exact inside it.

Contract: element weights and query thresholds are integers in [1, 2**53] (``MAX_WEIGHT``,
``MAX_THRESHOLD``: every integer up to 2**53 is carried exactly by JSON numbers and float64).
The stream parser and ``ThresholdSpec`` reject values beyond it with a reason naming the limit.

Inside the range every implementation is exact however many elements arrive: a push is cut into
consecutive sub-batches whose total weight is at most 2**60 (:func:`weight_cuts`; at least 128
elements each), so no per-batch sum overflows, and counters that only ever grow (DT's node
counters, the baselines' counters of dead entries) are renormalised between sub-batches before
they could leave int64 (DT rebuilds the structure on the exact remaining thresholds; the
baselines reset dead counters to their sentinel).
"""

from __future__ import annotations

import numpy as np

MAX_WEIGHT = 1 << 53
MAX_THRESHOLD = 1 << 53
#: total weight of one sub-batch (float64 prefix sums decide the cuts; 2**60 leaves a 4x
#: margin to the int64 range for their rounding and for the sentinel arithmetic)
SUB_BATCH_WEIGHT = float(1 << 60)


def weight_cuts(w: np.ndarray, limit: float = SUB_BATCH_WEIGHT) -> list[tuple[int, int]]:
    """Consecutive ranges ``[a, b)`` covering ``w`` whose sums stay <= ``limit`` (one range when the
    whole batch fits; an element heavier than ``limit`` gets a range of its own)."""
    n = w.shape[0]
    cs = np.cumsum(w, dtype=np.float64)
    if n == 0 or cs[-1] <= limit:
        return [(0, n)]
    cuts = []
    c0 = 0
    while c0 < n:
        base = cs[c0 - 1] if c0 else 0.0
        c1 = max(int(np.searchsorted(cs, base + limit, side="right")), c0 + 1)
        cuts.append((c0, min(c1, n)))
        c0 = c1
    return cuts
