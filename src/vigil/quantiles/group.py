"""The quantiles family's engine adapter: one QuantileOperator per (column, rows window).

Notify queries (``"notify": true``) get ``update`` events ``{"event": "update", "id", "at",
"value"}`` from the operator's push (docs/contract.md); other queries answer on lookup."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import Unsupported
from ..group import Group
from ..specs import QuantileSpec


class QuantileGroup(Group):
    family = "quantiles"
    independent = False  # queries share clusters and triggers (a termination changes when others update)

    @staticmethod
    def params_of(spec: QuantileSpec) -> dict[str, Any]:
        return {"column": spec.column, "rows": spec.rows}

    def __init__(self, engine, params):
        super().__init__(engine, params)
        self.op = engine.impl("quantiles")(engine.quantile_epsilon, params["rows"])

    def part_tag(self):
        return "seq"

    def checks(self, cols, idx):
        return [(None, [(self.params["column"], "num")])]

    def register(self, qid, spec, start):
        if spec.notify and self.engine.partial is not None:
            raise Unsupported("notify quantile queries are not served in sharded mode (shards hold parts of the stream)")
        self.op.register(qid, float(spec.phi), float(spec.epsilon), start, notify=bool(spec.notify))

    def feed(self, cols, rows, seqs, seg):
        qids, offsets, values = self.op.push(cols.get(self.params["column"], "num")[0][rows], seqs)
        if len(qids):
            seg.add("update", qids, seqs[offsets], value=values)

    def lookup_many(self, qids, n):
        return [(None if math.isnan(x) else x, None) for x in self.op.lookup(qids, n).tolist()]

    def summary(self, qid: int, n: int) -> np.ndarray:
        return self.op.summary(qid, n)
