"""CSU: synchronous lazy updates over clustered queries (paper 004 §3.5.1, Algorithm 3, with OQC
§3.4 / QC_A §3.3).

A single global trigger T_global = min over clusters of their expiry N + L (the root of the same
trigger heap CASU uses); when it fires every cluster is re-evaluated (each search starts at the
tuple its previous result was linked to, the sort-merge of Algorithm 3 realized per cluster) and
the trigger rebuilt. A registration that creates a cluster or changes one (OQC merges clusters or
narrows one's interval; a new member joins one) re-evaluates only that cluster, at the next
element, and T_global becomes min(T_global, its expiry): §3.5.1, "once a new cluster Q' forms,
Algorithm 3 is invoked with only Q' as the input". Such a registration costs one re-evaluation,
O(log m), whatever the number K of clusters (measured on fig10's 20,000 queries: 1 fire, where
re-evaluating every cluster cost 878; tests/quantiles/test_csu_registration.py).

Per element O(1); per global fire O(K log m) for K clusters; for a pre-given query set whose
shortest cluster interval c_min > 0 the global trigger fires O(log_{1 + c_min/(2(1-eps))} N)
times (Theorem 6). See :mod:`.triggers`.
"""

from __future__ import annotations

from .triggers import TriggerQuantiles


class CSU(TriggerQuantiles):
    name = "csu"
    mode = 1
    clustered = True
