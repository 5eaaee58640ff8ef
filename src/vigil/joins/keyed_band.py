"""Band joins with an equality key (``left_key`` / ``right_key``): pairs with r.key = s.key and
lo <= s.on - r.on <= hi (SQL: ``ON r.symbol = s.symbol AND s.price - r.price BETWEEN lo AND hi``).

The stored tuples are partitioned by key value: one band-join operator of the chosen strategy
per key value (created at the key's first tuple), each holding every query of the group, so the
band index of each key holds only that key's tuples (BJ-SSI per key: O(tau log m_b + k) per
arriving tuple with m_b the stored tuples of its key). Tuples reach ``insert_both`` with the key's
dictionary code as their one attribute; a batch costs one operator call per key value present in
it. Space: the stored tuples once, plus each key's operator's query index (O(keys x queries):
the strategies' query indexes are per operator).
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np

from . import JoinOperator

SIDES = ("left", "right")


class KeyedBand(JoinOperator):
    name = "keyed_band"

    def __init__(self, impl: type, output: str = "pairs") -> None:
        super().__init__("band", output)
        self.impl = impl
        self.ops: dict[int, JoinOperator] = {}
        self.specs: dict[int, Any] = {}

    def _op(self, code: int) -> JoinOperator:
        op = self.ops.get(code)
        if op is None:
            op = self.ops[code] = self.impl("band", self.output)
            for qid, spec in self.specs.items():
                op.register(qid, spec)
        return op

    def register(self, qid: int, spec: Any) -> None:
        if not self.ops:  # no key seen yet: let the strategy judge the query now (Unsupported)
            self.impl("band", self.output).register(qid, spec)
        for op in self.ops.values():
            op.register(qid, spec)
        self.specs[int(qid)] = spec

    def terminate(self, qid: int) -> None:
        if self.specs.pop(int(qid), None) is not None:
            for op in self.ops.values():
                op.terminate(qid)

    def _split(self, blocks: dict):
        """code -> {side: (seqs, key, no attrs, times)} of the tuples of ``blocks``."""
        out: dict[int, dict] = {}
        for side, b in blocks.items():
            if b is None or not len(b[0]):
                continue
            seqs, key, attrs, _ = b
            codes = np.asarray(attrs, np.float64).reshape(len(seqs), -1)[:, 0].astype(np.int64)
            o = np.argsort(codes, kind="stable")
            cs = codes[o]
            cut = np.flatnonzero(np.diff(cs)) + 1
            for a, z in zip(np.r_[0, cut], np.r_[cut, len(cs)], strict=True):
                idx = o[a:z]
                out.setdefault(int(cs[a]), {})[side] = (np.asarray(seqs)[idx], np.asarray(key)[idx],
                                                        np.zeros((len(idx), 0)), None)
        return out

    def insert_both(self, blocks: dict):
        outs = [self._op(code).insert_both(sub) for code, sub in self._split(blocks).items()]
        outs = [o for o in outs if len(o[0])]
        e = np.empty(0, np.int64)
        if not outs:
            return e, e, e.copy()
        q, r, s = (np.concatenate([o[j] for o in outs]) for j in range(3))
        arriving = np.maximum(r, s)
        o = np.lexsort((s, r, q, arriving))
        return q[o], r[o], s[o]

    def insert(self, side, seqs, key, attrs=None, times=None):
        return self.insert_both({side: (seqs, key, attrs, times)})

    def preload(self, side, seqs, key, attrs=None, times=None) -> None:
        for code, sub in self._split({side: (seqs, key, attrs, times)}).items():
            self._op(code).preload(side, *sub[side])

    def state(self) -> dict[str, Any]:
        codes = sorted(self.ops)
        return {"impl": f"{self.impl.__module__}:{self.impl.__qualname__}", "output": self.output,
                "qids": np.array(sorted(self.specs), np.int64),
                "specs": [self.specs[q].dump() for q in sorted(self.specs)],
                "codes": np.array(codes, np.int64), "ops": [self.ops[c].state() for c in codes]}

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> KeyedBand:
        from ..specs import parse_query

        mod, name = s["impl"].split(":")
        impl = getattr(importlib.import_module(mod), name)
        kb = cls(impl, s["output"])
        kb.specs = {int(q): parse_query(sp) for q, sp in zip(np.asarray(s["qids"]).tolist(), s["specs"], strict=True)}
        for c, st in zip(np.asarray(s["codes"]).tolist(), s["ops"], strict=True):
            kb.ops[int(c)] = impl.from_state(st)
        return kb
