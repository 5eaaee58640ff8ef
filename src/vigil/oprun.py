"""Query operations in bulk: parsing a list of operation lines, and applying a run of registrations
at one stream position as columns (the engine's registration path, used by ``vigil.engine``).

One operation at a time, a log registering 100,000 threshold queries cost ~12 us per operation in
``Engine.add_operations``: JSON decoding (~1.8 us), pydantic validation (~3.4 us) and the engine's
per-query bookkeeping. Here:

* :func:`parse_ops`: every line decoded with :func:`vigil.jsonline.loads_many` (one digit-run
  check for the whole list), then the field checks of :func:`check_op`.
* :func:`register_run`: a run of registrations applied at one position. A query of a common spec
  shape (:func:`vigil.specs.fast_spec`) is decoded without pydantic; the first query of each shape
  takes the one-by-one path (``Engine._apply``: pydantic, its reasons, its group), and what the
  shape means (group key, params, adapter) is remembered from it; every later query of the shape
  is checked for a duplicate id and handed to its group in one ``register_many`` call per group,
  and the engine's bookkeeping (ids, specs, by_id, where, the group's qids) is extended once per
  run. Any other query (another shape, or a group without ``register_many``) takes
  ``Engine._apply`` in its place, after the fast ones before it are flushed.

Outputs, counts, rejections (and their reasons and order) and snapshots are those of applying the
operations one by one (tests/test_oprun.py). Cost: O(size of the operation) per operation, with
one dict lookup per query instead of a pydantic model.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from . import jsonline, registry
from .errors import HistoryRefused, Unsupported
from .specs import fast_spec

# how the reasons of registers refused after a valid spec begin (sharded mode frees their ids)
REFUSALS = ("unsupported by ", "the stream has no column ")
OP_FIELDS = {"register": {"op", "at", "query"}, "terminate": {"op", "at", "id"}, "lookup": {"op", "at", "id"}}


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (restored after it, as it was)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _malformed(e: ValueError) -> str:
    return f"malformed JSON operation: {str(e)[:120]}"


def parse_op(raw: Any) -> tuple[dict, str | None]:
    """One operation (a dict or a raw JSON line) -> (op, None) or (partial op, reason)."""
    if isinstance(raw, str | bytes):
        try:
            raw = jsonline.loads(raw)
        except ValueError as e:
            return {}, _malformed(e)
    return check_op(raw)


def parse_ops(raws: list) -> list[tuple[dict, str | None]]:
    """``[parse_op(raw) for raw in raws]``, the JSON lines decoded in one pass."""
    out = []
    if not any(isinstance(r, str | bytes) for r in raws):
        return [check_op(r) for r in raws]
    texts = [r for r in raws if isinstance(r, str | bytes)]
    dec = iter(jsonline.loads_many(texts))
    for r in raws:
        if not isinstance(r, str | bytes):
            out.append(check_op(r))
            continue
        r = next(dec)
        if type(r) is dict:  # decoded here: a fresh dict, used as the op without a copy
            kind, at = r.get("op"), r.get("at", 0)
            fields = OP_FIELDS.get(kind) if type(kind) is str else None
            if fields is not None and type(at) is int and at >= 0 and r.keys() <= fields \
                    and (type(r.get("query")) is dict if kind == "register" else type(r.get("id")) is str):
                r["at"] = at
                out.append((r, None))
                continue
        out.append(({}, _malformed(r)) if isinstance(r, ValueError) else check_op(r))
    return out


def check_op(raw: Any) -> tuple[dict, str | None]:
    """The field checks of a decoded operation (``at`` defaults to 0; an integral float ``at`` is
    taken as an integer)."""
    if type(raw) is dict:  # the common well-formed shapes, checked at once
        kind, at = raw.get("op"), raw.get("at", 0)
        fields = OP_FIELDS.get(kind) if type(kind) is str else None
        if fields is not None and type(at) is int and at >= 0 and raw.keys() <= fields \
                and (type(raw.get("query")) is dict if kind == "register" else type(raw.get("id")) is str):
            op = dict(raw)
            op["at"] = at
            return op, None
    if not isinstance(raw, dict):
        return {}, f"an operation must be a JSON object, got {type(raw).__name__}"
    op = dict(raw)
    kind = op.get("op")
    if not isinstance(kind, str) or kind not in OP_FIELDS:
        return op, f"op: unknown operation {kind!r}; expected register, terminate or lookup"
    op.setdefault("at", 0)
    at = op["at"]
    if isinstance(at, bool) or not isinstance(at, int) or at < 0:
        if isinstance(at, float) and at.is_integer() and at >= 0:
            op["at"] = int(at)
        else:
            return {**op, "at": None}, f"at: must be a non-negative integer, got {at!r}"
    if kind == "register" and "sql" in op:  # a standing query in SQL (vigil.sql, loaded on use)
        from .sql import register_op
        return register_op(op)
    extra = set(op) - OP_FIELDS[kind]
    if extra:
        return op, f"{kind}: unknown field(s) {sorted(extra)}"
    if kind == "register":
        if not isinstance(op.get("query"), dict):
            return op, "register: 'query' must be a JSON object"
    elif not isinstance(op.get("id"), str):
        return op, f"{kind}: 'id' must be a string"
    return op, None


def register_run(eng: Any, ops: list[dict], n: int) -> None:
    """Apply the registrations ``ops`` (parsed, in order) at position ``n``, exactly as
    ``for op in ops: eng._apply(op, n)`` does."""
    # spec shape -> (group key, params, adapter class), learned under the engine's columns and algos
    ctx = (None if eng.columns is None else frozenset(eng.columns), tuple(sorted(eng.algos.items())))
    if eng.__dict__.get("_shapes_ctx") != ctx:
        eng._shapes.clear()
        eng._shapes_ctx = ctx
    shapes: dict[tuple, tuple] = eng._shapes
    by_id, groups = eng.by_id, eng.groups
    ids: list[str] = []
    texts: list[str] = []
    keys: list[str] = []
    seen: set[str] = set()  # the ids of ``ids``
    per: dict[str, tuple[Any, list[int], list[tuple]]] = {}  # group key -> (group, qids, rows)
    base = len(eng.ids)

    def flush() -> None:
        nonlocal base
        if not ids:
            return
        qs = range(base, base + len(ids))
        eng.ids.extend(ids)
        eng.specs.extend(texts)
        by_id.update(zip(ids, qs, strict=True))
        eng.where.update(zip(qs, keys, strict=True))
        for g, qids, rows in per.values():
            g.register_many(qids, rows, n)
            g.qids.update(qids)
        eng.counts["ops_applied"] += len(ids)
        base += len(ids)
        ids.clear()
        texts.clear()
        keys.clear()
        seen.clear()
        per.clear()

    def one_by_one(op: dict, shape: tuple | None) -> None:
        nonlocal base
        flush()
        before = len(eng.ids)
        eng._apply(op, n)
        base = len(eng.ids)
        if shape is not None and len(eng.ids) > before:  # registered: learn what its shape means
            key = eng.where[before]
            g = groups[key]
            if hasattr(g, "register_many"):
                shapes[shape] = (key, g.params, type(g))

    for op in ops:
        q = op["query"]
        got = fast_spec(q)
        if got is None:
            one_by_one(op, None)
            continue
        ident, shape, row = got
        info = shapes.get(shape)
        if info is None:
            one_by_one(op, shape)
            continue
        if ident in by_id or ident in seen:
            eng._reject_op(op["at"], ident, f"id: duplicate id {ident!r} (ids are unique per run)")
            continue
        text = jsonline.dumps(q)
        if text is None:
            one_by_one(op, None)
            continue
        key = info[0]
        ent = per.get(key)
        if ent is None:
            g = eng._ready(key)
            if g is None:
                gcls = info[2]
                try:
                    g = eng.new_group(gcls, info[1])
                except HistoryRefused as e:
                    eng._reject_op(op["at"], ident, str(e))
                    continue
                except Unsupported as e:
                    name = eng.algos.get(gcls.family) or registry.DEFAULTS[gcls.family]
                    eng._reject_op(op["at"], ident, f"{REFUSALS[0]}{gcls.family}={name}: {e}")
                    continue
                groups[key] = g
            ent = per[key] = (g, [], [])
        ent[1].append(base + len(ids))
        ent[2].append(row)
        ids.append(ident)
        seen.add(ident)
        texts.append(text)
        keys.append(key)
    flush()



# ----------------------------------------------------------------------------- segments


def deferrable(eng, upto: int) -> int:
    """How many pending operations, from the first, may wait until the end of the coming segment
    (:meth:`vigil.engine.Engine._segment`):

    * terminations of known ids with ``at <= upto``, except one that would leave its group without
      queries (which rows a group validates and sees depends on whether it has queries). A
      termination takes effect after element ``at``; applying it at the end of the segment instead
      only means dropping the query's outputs after ``at``, in groups whose queries never affect
      one another's outputs (``Group.independent``);
    * lookups of alive queries (not in sharded mode, not of a group whose queries end inside a
      segment): a lookup changes nothing, so it is answered after the segment's rows are judged,
      from its group fed the rows up to its position (:func:`lookups_inside`). Lookups and
      terminations never wait together: a termination applied where the segment's runs meet (a
      row judged after a threshold group is fed) feeds its group every row before it, past a
      lookup still waiting in that group.

    So a stream with churn and lookups is cut into segments only at registrations and at
    terminations in dependent groups, not at every operation."""
    left: dict[str, int] = {}
    seen: set[int] = set()
    looked: set[int] = set()
    by_id, where, groups = eng.by_id, eng.where, eng.groups
    for k, (at, _, op) in enumerate(eng.pending):
        kind = op["op"]
        if at > upto or kind not in ("terminate", "lookup"):
            return k
        qid = by_id.get(op["id"])
        if qid is None:  # an unknown id is rejected in its place
            return k
        key = where.get(qid)
        if kind == "lookup":
            g = None if key is None else groups[key]
            if (g is None or eng.partial is not None or g.ends_inside_segment or left
                    or not hasattr(g, "lookup_many")):
                return k
            looked.add(qid)
            continue
        if looked:
            return k
        if key is not None and groups[key].ends_inside_segment:  # its queries may have ended
            key = eng._where(qid, False)
        if key is None or qid in seen:
            continue
        g = groups[key]
        if not g.independent:
            return k
        n = left.get(key)
        n = (len(g.qids) if n is None else n) - 1
        if n < 1:
            return k
        left[key] = n
        seen.add(qid)
    return len(eng.pending)


def split_later(later: list[tuple], upto: int) -> tuple[list[tuple], list[tuple]]:
    """A group's deferred entries (rows, seqs, ok, pre-visibility) cut at position ``upto``: the
    entries up to it and those after (one entry split in two)."""
    fed: list[tuple] = []
    for i, e in enumerate(later):
        seqs = e[1]
        if not len(seqs) or seqs[-1] <= upto:
            fed.append(e)
            continue
        c = int(np.searchsorted(seqs, upto, side="right"))
        if c:
            fed.append(tuple(None if x is None else x[:c] for x in e))
            rest = [tuple(None if x is None else x[c:] for x in e)]
        else:
            rest = [e]
        return fed, rest + later[i + 1:]
    return fed, []


def lookups_inside(eng, looks: list[tuple[int, int, dict]], t_pre: dict[str, float]) -> None:
    """Answer lookups that waited until the end of a segment (:func:`deferrable`), in order, each
    at its position: the engine's position is set to it while it applies (the outbox orders its
    answer after the elements up to it), and its group is fed only the rows up to it (the rest
    stays deferred). A group with a time column answers with the time of its last row up to the
    lookup (``t_pre``: its time before the segment's rows, for a lookup that feeds it none), and
    gets back the time of the segment's last row for judging the rows after the segment."""
    pos0 = eng.position
    t_end: dict[str, float] = {}  # group -> its time at the end of the segment (judging)
    t_now = dict(t_pre)  # group -> its time at the rows fed so far
    try:
        i = 0
        while i < len(looks):
            at = looks[i][0]
            j = i + 1
            while j < len(looks) and looks[j][0] == at:
                j += 1
            keys = [k for k in (eng.where.get(eng.by_id[t[2]["id"]]) for t in looks[i:j]) if k in t_now]
            eng._horizon = eng.position = at
            for key in keys:  # fed up to ``at`` here, so that its time is the one of its rows up to at
                g = eng.groups[key]
                t_end.setdefault(key, g.t_last)
                g.t_last = t_now[key]
                eng._ready(key, False)
                t_now[key] = g.t_last
            if j - i > 1:
                eng._lookup_run([t[2] for t in looks[i:j]], at)
            else:
                eng._apply(looks[i][2], at)
            i = j
    finally:
        eng._horizon, eng.position = None, pos0
        for key, t in t_end.items():
            g = eng.groups.get(key)
            if g is not None:
                g.t_last = max(g.t_last, t)
