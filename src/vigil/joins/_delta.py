"""Queries registered and terminated between two full builds of a join operator's indexes.

Every plan of paper 003 indexes the alive queries (SSI groups, R-trees, stabbing trees) and is
rebuilt at the first probe after the queries changed: O(n) (n alive queries) per registration
or termination. A stream whose registrations are spread between its tuples (each one cuts the
run of tuples the engine feeds at once) paid that for every one of them: O(updates x n).

Here the built indexes stay as they are between full builds:

* a query registered meanwhile goes to a **shadow** operator (the class's ``shadow_cls``:
  SJ-SelectFirst / WJ-SelectFirst, :mod:`vigil.joins.strategies`) that shares the stored tuples
  (the same ``_Side`` objects) and holds only these queries: its index is rebuilt in
  O(d log d) for d shadow queries;
* a query of the built indexes terminated meanwhile is **dead**: removed from the operator's
  queries and plans' incremental structures at once, its pairs dropped from the built indexes'
  output until the next full build;
* when d + dead exceeds ``limit(n) = max(DELTA_MIN, 2 sqrt(n))`` the shadow's queries move into
  the operator and the next probe builds everything (as before).

A probe runs the built indexes and the shadow on the same tuples; the union of their pairs is
exactly the pairs of one index over all alive queries (their query sets are disjoint, and a
query's pairs do not depend on which index finds them). Cost per update: the shadow's rebuild,
O(sqrt(n) log n), plus the full build amortized over sqrt(n) updates, O(sqrt(n)); per probed
tuple, the shadow's SelectFirst probe over <= 2 sqrt(n) queries. Band joins (one plan chosen per
batch, Theorem 2) and count-only output keep the full rebuild.
"""

from __future__ import annotations

import math

import numpy as np

DELTA_MIN = 32  # below this many queries every update rebuilds (cheap then)


def limit(op) -> int:
    return max(DELTA_MIN, int(2 * math.sqrt(len(op.q))))


def usable(op) -> bool:
    """May an update of ``op`` go to the shadow / dead set instead of a full rebuild?"""
    return (op.kind != "band" and op.mode != 2 and not op._dirty and len(op.q) >= DELTA_MIN
            and op.shadow_cls is not None and op.__dict__.get("delta", True))


def shadow(op):
    """``op``'s shadow operator, created on first use (shares the stored sides and columns)."""
    sh = op.__dict__.get("_shadow")
    if sh is None:
        sh = op._shadow = op.shadow_cls(op.kind, op.output)
        sh.sides, sh.cols, sh.horizon = op.sides, op.cols, op.horizon
        sh.delta = False  # no shadow of its own
    return sh


def pending(op) -> bool:
    """Does ``op`` hold queries outside its built indexes (in the shadow)?"""
    sh = op.__dict__.get("_shadow")
    return sh is not None and bool(sh.q)


def add(op, qid: int, spec, row: tuple) -> bool:
    """Register ``qid`` in the shadow if the delta is usable (True), else leave it to ``op``."""
    if not usable(op):
        return False
    sh = shadow(op)
    sh.register(qid, spec)
    if len(sh.q) + len(op.__dict__.get("_dead", ())) > limit(op):
        merge(op)
    return True


def drop(op, qid: int) -> bool:
    """Terminate ``qid`` if the shadow holds it (True)."""
    sh = op.__dict__.get("_shadow")
    if sh is None or qid not in sh.q:
        return False
    sh.terminate(qid)
    return True


def dead(op, qid: int) -> bool:
    """``qid`` (removed from ``op.q``) stays in the built indexes, its pairs filtered (True);
    False: ``op`` rebuilds."""
    if not usable(op):
        return False
    d = op.__dict__.setdefault("_dead", set())
    d.add(qid)
    sh = op.__dict__.get("_shadow")
    if len(d) + (len(sh.q) if sh is not None else 0) > limit(op):
        merge(op)
    return True


def merge(op) -> None:
    """Move the shadow's queries into ``op``; its next probe rebuilds every index."""
    sh = op.__dict__.pop("_shadow", None)
    if sh is not None:
        for qid, row in sh.q.items():
            op.q[qid] = row
            op._on_register(qid, row)
    op._dead = set()
    op._dirty = True
    op._intra_trees = None


def _alive(op, q: np.ndarray) -> np.ndarray | None:
    """Mask of pairs whose query is not dead (None: all alive)."""
    d = op.__dict__.get("_dead")
    if not d or not len(q):
        return None
    return ~np.isin(q, np.fromiter(d, np.int64, len(d)))


def _built(op):
    """``op`` with its indexes marked for the queries it holds now (built at the probe)."""
    if op._dirty:
        op._queries_changed()
        op._dirty = False
    return op


def probe(op, side, seqs, key, x, t, mode):
    """``op._probe_checked`` over the built indexes (dead queries' pairs dropped) and the shadow."""
    e = np.empty(0, np.int64)
    out = []
    if op.q:
        q, i, o, cnt = _built(op)._probe_checked(side, seqs, key, x, t, mode)
        keep = _alive(op, q)
        if keep is not None:
            q, i, o = q[keep], i[keep], o[keep]
        out.append((q, i, o, cnt))
    if pending(op):
        out.append(_built(op._shadow)._probe_checked(side, seqs, key, x, t, mode))
    if not out:
        return e, e, e.copy(), 0
    if len(out) == 1:
        return out[0]
    return (np.concatenate([p[0] for p in out]), np.concatenate([p[1] for p in out]),
            np.concatenate([p[2] for p in out]), sum(p[3] for p in out))


def intra(op, blocks, intra_fn):
    """``intra_fn`` (the pairs inside a batch) over ``op``'s alive built queries and the shadow."""
    q, a, b, left = intra_fn(op, blocks) if op.q else (np.empty(0, np.int64),) * 3 + (np.empty(0, bool),)
    keep = _alive(op, q)
    if keep is not None:
        q, a, b, left = q[keep], a[keep], b[keep], left[keep]
    if pending(op):
        q2, a2, b2, l2 = intra_fn(op._shadow, blocks)
        q, a, b, left = (np.concatenate([q, q2]), np.concatenate([a, a2]), np.concatenate([b, b2]),
                         np.concatenate([left, l2]))
    return q, a, b, left
