"""Engine snapshots: everything an :class:`vigil.engine.Engine` holds, pickle-free
(:mod:`vigil.state`): bookkeeping as JSON strings, operator state as arrays (docs/architecture.md).
O(queries + operator state) per call."""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from . import jsonline, registry
from .history import History
from .pending import Pending
from .state import pack, unpack


def dump(eng: Any) -> bytes:
    """The snapshot of ``eng`` (its outputs must have been taken)."""
    if eng._out:
        raise RuntimeError("take_outputs() before snapshot(): outputs would be lost")
    return pack(
        {
            "version": 2,
            "algos": eng.algos,
            "quantile_epsilon": eng.quantile_epsilon,
            "join_output": eng.join_output,
            "columns": None if eng.columns is None else sorted(eng.columns),
            "position": eng.position,
            # per-query bookkeeping as single JSON strings: one field, not a million
            "ids": jsonline.dumps_any(eng.ids),
            # the specs of alive queries only (a dead query's spec is never read again: null)
            "specs": "[" + ",".join(sp if q in eng.where else "null" for q, sp in enumerate(eng.specs)) + "]",
            "where": jsonline.dumps_any(list(eng.where.items())),
            "groups": [{"key": k, "qids": np.array(sorted(g.qids), np.int64), "state": g.state()}
                       for k, g in eng.groups.items()],
            # pending operations as two arrays and one JSON string (not one field per op)
            "pending_at": np.array([a for a, _, _ in eng.pending], np.int64),
            "pending_arrival": np.array([b for _, b, _ in eng.pending], np.int64),
            "pending_ops": jsonline.dumps_any([op for _, _, op in eng.pending]),
            "arrival": eng.arrival,
            "counts": eng.counts,
            "out_counts": eng.out_counts,
            "history": eng.history.state(),
        }
    )


def load(cls: type, data: bytes) -> Any:
    """The engine (of class ``cls``) a snapshot of :func:`dump` holds."""
    s = unpack(data)
    if s.get("version") == 1:  # pending operations as one field each
        s["pending_at"] = np.array([a for a, _, _ in s["pending"]], np.int64)
        s["pending_arrival"] = np.array([b for _, b, _ in s["pending"]], np.int64)
        s["pending_ops"] = "[" + ",".join(op for _, _, op in s["pending"]) + "]"
    elif s.get("version") != 2:
        raise ValueError(f"unknown snapshot version {s.get('version')!r}")
    eng = cls(s["algos"], s["quantile_epsilon"], s["join_output"], None if s["columns"] is None else set(s["columns"]))
    eng.position = s["position"]
    eng.ids = json.loads(s["ids"])
    eng.specs = [json.dumps(q, separators=(",", ":")) for q in json.loads(s["specs"])]  # dead: "null"
    eng.by_id = {ident: q for q, ident in enumerate(eng.ids)}
    eng.where = {int(q): k for q, k in json.loads(s["where"])}
    for gs in s["groups"]:
        family, params = json.loads(gs["key"])
        g = registry.adapter(family)(eng, params)
        g.load(gs["state"])
        g.qids = set(gs["qids"].tolist())
        eng.groups[gs["key"]] = g
    eng.pending = Pending(zip(s["pending_at"].tolist(), s["pending_arrival"].tolist(),
                              json.loads(s["pending_ops"]), strict=True))
    eng.arrival = s["arrival"]
    eng.counts = dict(s["counts"])
    eng.out_counts = dict(s["out_counts"])
    eng.history = History.load(s["history"])
    return eng

