"""B-INT: base-interval decomposition (paper 002, §3.1.1, Definition 3.1, Theorem 3.1, Example 3.1).

This module holds only :func:`base_intervals`, the decomposition of a lookup interval into
base-intervals (Step 1 of LOOKUP in the paper's Figure 3). The full B-INT operator (per-level
arrays of f(I_b) for the active base-intervals, UPDATE / LOOKUP, paper Figure 3 and §5) is to be
built around it by a later engineer.

Definition 3.1: over 1-based stream positions, the level-l base-interval number i >= 0 is
(2^l * i + 1, 2^l * (i + 1)): width 2^l, left end - 1 a multiple of 2^l ("dyadic intervals").

:func:`base_intervals` returns the *canonical* decomposition: from the left end, repeatedly take
the widest base-interval that starts there and fits in what is left. Widths first grow (the
alignment of the left end allows ever larger levels) then shrink (the remaining length does not),
so the result has at most 2*floor(log2 W) + 1 pieces (W = r - l + 1), it is the minimum number of
base-intervals whose disjoint union is (l, r), and it takes O(log W) time (Theorem 3.1).

Note on Example 3.1: the paper decomposes (1, 43) as (1,2), (3,4), (5,8), (9,16), (17,32),
(33,40), (41,42), (43,43). That is *a* valid disjoint union of base-intervals, but not the
minimal one: (1,2) through (17,32) together form the single level-5 base-interval
(1, 32) = (2^5*0 + 1, 2^5*1). This function returns (1,32), (33,40), (41,42), (43,43); the right
part coincides with the paper's. Both yield the same f(I) for a distributive f.
"""

from __future__ import annotations


def base_intervals(l: int, r: int) -> list[tuple[int, int]]:  # noqa: E741
    """Canonical decomposition of the position interval (l, r) (1-based, inclusive) into
    base-intervals, left to right: [(l_1, r_1), ..., (l_k, r_k)] with l_1 = l, r_k = r and
    r_i + 1 = l_{i+1}. Empty list when l > r (an empty window). O(log W) time.

    >>> base_intervals(1, 43)
    [(1, 32), (33, 40), (41, 42), (43, 43)]
    >>> base_intervals(6, 13)
    [(6, 6), (7, 8), (9, 12), (13, 13)]
    """
    l, r = int(l), int(r)  # noqa: E741
    if l < 1:
        raise ValueError(f"positions are 1-based; got left end {l}")
    out: list[tuple[int, int]] = []
    p = l
    while p <= r:
        width = 1
        # grow while the doubled interval is still a base-interval (aligned) and still fits
        while (p - 1) % (2 * width) == 0 and p + 2 * width - 1 <= r:
            width *= 2
        out.append((p, p + width - 1))
        p += width
    return out
