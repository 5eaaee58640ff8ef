"""The eager baseline of paper 004 §2.4: at every element, re-evaluate every notify query by the
first-hit scan of the summary (the first tuple satisfying (1)), no clustering, no triggers.

Per element O(Q m) (Q notify queries, m summary tuples) plus GK maintenance with one-element
chunks, O(m). Lookups of other queries as in :mod:`.triggers`.
"""

from __future__ import annotations

from .triggers import TriggerQuantiles


class Naive(TriggerQuantiles):
    name = "naive"
    mode = 2
    clustered = False
