"""CASU: asynchronous lazy updates over clustered queries (paper 004 §3.5.2, Algorithm 4, with OQC
§3.4 / QC_A §3.3).

One trigger per query cluster, in a min-heap keyed by the stream size at which the cluster's
result expires (N + L_{Q,t,N}, eqs. (10)-(12), Theorem 4), so a new element costs one comparison
with the root, O(1); a fired trigger re-evaluates only its own cluster, searching from the summary
tuple it is linked to (the three cases of §3.5.2 as a gallop toward the alpha/beta crossing),
O(log K + log m), and is pushed back. Triggers follow their tuple when GK merges it (the link is
the tuple's value; a merged tuple resolves to the tuple it merged into). Registrations use OQC
(Algorithm 2) online, QC_A (Algorithm 1) for a batch registered before any cluster exists.

Per element: O(1) + amortized GK maintenance (:mod:`.gk`) + O(log K + log m) per fire; a static
cluster with |I_Q| > 0 fires O(log_{1 + |I_Q|/(2(1-eps))} N) times (Theorem 6). Space: O(m + K +
number of queries). Details and the update contract: :mod:`.triggers`.
"""

from __future__ import annotations

from .triggers import TriggerQuantiles


class CASU(TriggerQuantiles):
    name = "casu"
    mode = 0
    clustered = True
    summary_ratio = 0.25  # GK at eps/4: wider query intervals, fewer fires (see .triggers)
