"""Quantile alerts: crossings of a query's maintained value, with hysteresis (docs/contract.md,
"Quantile alerts").

An alert query (``"above": x`` or ``"below": x``, optional ``"rearm": r``) is a notify query
whose per-query updates (paper 004 §2.4, §3.5: the trigger-based lazy updates of SU/CSU/CASU or
the window summary's, :mod:`.triggers`, :mod:`.sliding`) are not emitted; they go through a
two-state machine per query, and only its transitions are events:

* ``above x`` (rearm r <= x, default x): armed -> *alert* at the first update with value > x;
  alerted -> *clear* (armed again) at the first update with value <= r.
* ``below x`` (rearm r >= x, default x): armed -> *alert* at the first update with value < x;
  alerted -> *clear* at the first update with value >= r.
* A null value (an empty window) changes nothing.

The maintained value only changes at an update, so the machine sees every value the query ever
shows: the events are exactly the crossings of the maintained value. The trigger-based operators
re-evaluate a query only when its value can have changed (its trigger fires), so an alert costs
what a notify query costs plus O(1) per update here, in one compiled pass over the push's
updates (:func:`Alerts.filter`). Guarantee (by the answer contract of the maintained value):
whenever every element of the window within e*N + 1 ranks of the target rank is > x, the query
is alerted after that position; whenever every such element is <= r, it is armed (``below``:
< x, >= r). The oracle maintains the exact quantile, so the same machine over its updates gives
the exact crossings.

Space O(largest slot), time O(updates) per push. Slots are the operator's qids (per-key
operators: the (query, key) slots of :mod:`.keyed`).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

NONE, ABOVE, BELOW = 0, 1, 2
ALERT, CLEAR = 0, 1  # event codes of :meth:`Alerts.filter`


@numba.njit(cache=True, nogil=True)
def _filter(ids, values, kind, x, rearm, on, is_alert, ev_pos, ev_code):
    m = 0
    for i in range(ids.shape[0]):
        q = ids[i]
        if q < 0 or q >= kind.shape[0] or kind[q] == NONE:
            continue
        is_alert[i] = True
        v = values[i]
        if v != v:  # null: no value, no change
            continue
        if kind[q] == ABOVE:
            if on[q] == 0:
                if v > x[q]:
                    on[q] = 1
                    ev_pos[m] = i
                    ev_code[m] = ALERT
                    m += 1
            elif v <= rearm[q]:
                on[q] = 0
                ev_pos[m] = i
                ev_code[m] = CLEAR
                m += 1
        else:
            if on[q] == 0:
                if v < x[q]:
                    on[q] = 1
                    ev_pos[m] = i
                    ev_code[m] = ALERT
                    m += 1
            elif v >= rearm[q]:
                on[q] = 0
                ev_pos[m] = i
                ev_code[m] = CLEAR
                m += 1
    return m


def spec_alert(spec: Any) -> tuple[int, float, float] | None:
    """(kind, bound, rearm) of a quantile spec with ``above``/``below``, else None."""
    if getattr(spec, "above", None) is not None:
        x = float(spec.above)
        return ABOVE, x, x if spec.rearm is None else float(spec.rearm)
    if getattr(spec, "below", None) is not None:
        x = float(spec.below)
        return BELOW, x, x if spec.rearm is None else float(spec.rearm)
    return None


class Alerts:
    """Per-slot alert machines (module doc), in flat arrays indexed by slot."""

    def __init__(self) -> None:
        self.kind = np.zeros(0, np.int8)
        self.x = np.zeros(0, np.float64)
        self.rearm = np.zeros(0, np.float64)
        self.on = np.zeros(0, np.int8)
        self.n = 0  # alive alert slots

    def _grow(self, size: int) -> None:
        if size > len(self.kind):
            cap = max(size, 2 * len(self.kind), 16)
            for name in ("kind", "x", "rearm", "on"):
                a = getattr(self, name)
                b = np.zeros(cap, a.dtype)
                b[:len(a)] = a
                setattr(self, name, b)

    def set(self, slot: int, kind: int, x: float, rearm: float) -> None:
        """Slot ``slot`` becomes an armed alert."""
        self._grow(slot + 1)
        if self.kind[slot] == NONE:
            self.n += 1
        self.kind[slot], self.x[slot], self.rearm[slot], self.on[slot] = kind, x, rearm, 0

    def drop(self, slot: int) -> None:
        if slot < len(self.kind) and self.kind[slot] != NONE:
            self.kind[slot] = NONE
            self.n -= 1

    def is_alert(self, slot: int) -> bool:
        return slot < len(self.kind) and self.kind[slot] != NONE

    def filter(self, ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Feed the updates (slot ids, values), in position order, to the machines. Returns
        (is_alert: the updates that belong to alert slots, not to be emitted as updates;
        event positions into the updates; event codes ALERT / CLEAR)."""
        k = len(ids)
        is_alert = np.zeros(k, np.bool_)
        pos = np.empty(k, np.int64)
        code = np.empty(k, np.int8)
        if not self.n or not k:
            return is_alert, pos[:0], code[:0]
        m = _filter(np.ascontiguousarray(ids, np.int64), np.ascontiguousarray(values, np.float64), self.kind,
                    self.x, self.rearm, self.on, is_alert, pos, code)
        return is_alert, pos[:m], code[:m]

    def state(self) -> dict[str, Any]:
        return {"kind": self.kind.copy(), "x": self.x.copy(), "rearm": self.rearm.copy(), "on": self.on.copy()}

    @classmethod
    def from_state(cls, s: dict[str, Any] | None) -> Alerts:
        a = cls()
        if s:
            a.kind = np.asarray(s["kind"], np.int8).copy()
            a.x = np.asarray(s["x"], np.float64).copy()
            a.rearm = np.asarray(s["rearm"], np.float64).copy()
            a.on = np.asarray(s["on"], np.int8).copy()
            a.n = int(np.count_nonzero(a.kind))
        return a
