"""Threshold oracle: exact, obviously right, slow. Per element, every alive query is checked
(O(m) per element, O(n*m) total). The reference every ThresholdOperator is compared with.
A re-arming query (``repeat`` r >= 1) restarts at weight 0 with threshold r at each maturity."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import ThresholdOperator, repeat_array


class ThresholdOracle(ThresholdOperator):
    name = "oracle"

    def __init__(self, dim: int) -> None:
        super().__init__(dim)
        self.q: dict[int, list] = {}  # qid -> [lo, hi, tau, weight so far, re-arm threshold]

    def register(self, qids, lo, hi, tau, repeat=None) -> None:
        qids = np.asarray(qids, dtype=np.int64).reshape(-1)
        rep = repeat_array(repeat, qids.shape[0])
        for i, qid in enumerate(qids):
            self.q[int(qid)] = [np.array(lo[i], float), np.array(hi[i], float), int(tau[i]), 0, int(rep[i])]

    def terminate(self, qids) -> None:
        for qid in np.asarray(qids, dtype=np.int64):
            self.q.pop(int(qid), None)

    def push(self, points, weights):
        out_q, out_o = [], []
        for off in range(len(points)):
            p, w = points[off], int(weights[off])
            for qid in sorted(self.q):
                lo, hi, tau, _, rep = self.q[qid]
                if np.all(lo <= p) and np.all(p <= hi):
                    self.q[qid][3] += w
                    if self.q[qid][3] >= tau:
                        out_q.append(qid)
                        out_o.append(off)
                        if rep:  # re-arm: from the next element on, weight 0, threshold rep
                            self.q[qid][2] = rep
                            self.q[qid][3] = 0
                        else:
                            del self.q[qid]
        return np.array(out_q, dtype=np.int64), np.array(out_o, dtype=np.int64)

    def alive(self) -> int:
        return len(self.q)

    def export(self):
        s = self.state()
        return s["qids"], s["lo"], s["hi"], s["tau"] - s["w"], s["repeat"]

    def state(self) -> dict[str, Any]:
        ids = sorted(self.q)
        d = self.dim
        return {
            "dim": d,
            "qids": np.array(ids, dtype=np.int64),
            "lo": np.array([self.q[i][0] for i in ids], dtype=float).reshape(-1, d),
            "hi": np.array([self.q[i][1] for i in ids], dtype=float).reshape(-1, d),
            "tau": np.array([self.q[i][2] for i in ids], dtype=np.int64),
            "w": np.array([self.q[i][3] for i in ids], dtype=np.int64),
            "repeat": np.array([self.q[i][4] for i in ids], dtype=np.int64),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> ThresholdOracle:
        op = cls(int(s["dim"]))
        rep = s.get("repeat")
        for i, qid in enumerate(s["qids"]):
            op.q[int(qid)] = [s["lo"][i], s["hi"][i], int(s["tau"][i]), int(s["w"][i]),
                              0 if rep is None else int(rep[i])]
        return op
