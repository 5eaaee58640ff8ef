"""The threshold family's engine adapter: one ThresholdOperator per (range columns, weight column,
equality keys). Rows matching the equality keys are seen; range columns and the weight are checked.
Registrations are buffered and handed to the operator as one batch; matured queries leave the
engine (``engine._gone``), except re-arming ones (``repeat``), which stay until terminated."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..group import Cols, Group, Segment
from ..specs import ThresholdSpec


class ThresholdGroup(Group):
    family = "threshold"
    ends_inside_segment = True  # queries mature inside a segment

    @staticmethod
    def params_of(spec: ThresholdSpec) -> dict[str, Any]:
        return {"cols": list(spec.range_columns()), "weight": spec.weight, "keys": [list(kv) for kv in spec.key_items()]}

    def __init__(self, engine: Any, params: dict[str, Any]) -> None:
        super().__init__(engine, params)
        self.op = engine.impl("threshold")(len(params["cols"]))
        self._rep: set[int] = set()  # alive re-arming queries: a maturity does not end them

    def checks(self, cols, idx):
        mask = None
        for col, value in self.params["keys"]:
            m = cols.equals(col, value)[idx]
            mask = m if mask is None else mask & m
        refs = [(c, "num") for c in self.params["cols"]]
        if self.params["weight"]:
            refs.append((self.params["weight"], "weight"))
        return [(mask, refs)]

    def register(self, qid: int, spec: ThresholdSpec, start: int) -> None:
        # registrations are buffered and handed to the operator as one batch (a million
        # registrations at one position become one register() call)
        lo, hi = spec.bounds()
        self._reg = getattr(self, "_reg", [])
        self._reg.append((qid, *lo, *hi, spec.threshold, spec.threshold if spec.repeat else 0))
        if spec.repeat:
            self._rep.add(qid)
        else:
            self._rep.discard(qid)

    def register_many(self, qids: list[int], rows: list[tuple], start: int) -> None:
        """Queries as columns: ``rows`` in :func:`vigil.specs.fast_spec`'s layout, (lo_1..lo_d,
        hi_1..hi_d, threshold) over ``params["cols"]``, the threshold negated for a re-arming
        query. Buffered like :meth:`register`."""
        self._chunk()
        a = np.array(rows, np.float64).reshape(len(qids), -1)
        tau = a[:, -1]
        neg = tau < 0
        a = np.hstack([a, np.zeros((a.shape[0], 1))])
        if neg.any():
            tau = np.abs(tau)
            a[:, -2] = tau
            a[:, -1] = np.where(neg, tau, 0.0)
        self._chunks.append((np.asarray(qids, np.int64), a))
        if self._rep or neg.any():
            q = np.asarray(qids, np.int64)
            self._rep.difference_update(q[~neg].tolist())
            self._rep.update(q[neg].tolist())

    def _chunk(self) -> None:
        """Move the rows buffered one by one into a chunk (order kept)."""
        self._chunks = getattr(self, "_chunks", [])
        reg = getattr(self, "_reg", None)
        if reg:
            self._reg = []
            self._chunks.append((np.array([r[0] for r in reg], np.int64),
                                 np.array([r[1:] for r in reg], np.float64)))

    def _flush(self) -> None:
        self._chunk()
        if self._chunks:
            chunks, self._chunks = self._chunks, []
            d = len(self.params["cols"])
            qids = np.concatenate([c[0] for c in chunks])
            a = np.concatenate([c[1] for c in chunks]).reshape(-1, 2 * d + 2)
            # thresholds are integers <= 2**53 (vigil.specs): exact in float64
            rep = a[:, 2 * d + 1].astype(np.int64)
            self.op.register(qids, a[:, :d].copy(), a[:, d:2 * d].copy(), a[:, 2 * d].astype(np.int64),
                             rep if rep.any() else None)

    def terminate(self, qid: int) -> None:
        self.terminate_many([qid])

    def terminate_many(self, qids: list[int]) -> None:
        self._flush()
        self.op.terminate(np.array(qids, np.int64))
        if self._rep:
            self._rep.difference_update(qids)

    def state(self):
        self._flush()
        s = super().state()
        s["repeat_qids"] = np.array(sorted(self._rep), np.int64)
        return s

    def load(self, s: dict[str, Any]) -> None:
        super().load(s)
        self._rep = {int(q) for q in np.asarray(s.get("repeat_qids", ()), np.int64).tolist()}

    def feed(self, cols: Cols, rows: np.ndarray, seqs: np.ndarray, seg: Segment) -> None:
        self._flush()
        pts = np.empty((len(rows), len(self.params["cols"])), np.float64)
        for j, c in enumerate(self.params["cols"]):
            pts[:, j] = cols.get(c, "num")[0][rows]
        w = cols.get(self.params["weight"], "weight")[0][rows] if self.params["weight"] else np.ones(len(rows), np.int64)
        q, off = self.op.push(pts, w)
        if len(q):
            seg.add("matured", q, seqs[off])
            rep = self._rep
            for qid in (np.unique(q).tolist() if rep else q.tolist()):
                if qid not in rep:
                    self.engine._gone(qid)
