"""SU: synchronous lazy updates without clustering (paper 004 §3.5.1, Algorithm 3; §5.3 "SU").

As :mod:`.csu` but every notify query is its own cluster (interval I_q of eq. (2)): when the
global trigger fires, all queries are re-evaluated (a registration: only the new query's). Per
fire O(Q log m). See :mod:`.triggers`.
"""

from __future__ import annotations

from .triggers import TriggerQuantiles


class SU(TriggerQuantiles):
    name = "su"
    mode = 1
    clustered = False
