"""CSU: synchronous lazy updates over clustered queries (paper 004 §3.5.1, Algorithm 3, with OQC
§3.4 / QC_A §3.3).

A single global trigger T_global = min over clusters of their expiry N + L (the root of the same
trigger heap CASU uses); when it fires every cluster is re-evaluated (each search starts at the
tuple its previous result was linked to, the sort-merge of Algorithm 3 realized per cluster) and
the trigger rebuilt. Per element O(1); per fire O(K log m) for K clusters. See :mod:`.triggers`.
"""

from __future__ import annotations

from .triggers import TriggerQuantiles


class CSU(TriggerQuantiles):
    name = "csu"
    mode = 1
    clustered = True
