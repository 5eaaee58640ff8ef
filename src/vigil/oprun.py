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
from itertools import repeat
from typing import Any

from . import jsonline, lookups, registry
from .errors import HistoryRefused, Unsupported
from .specs import fast_spec

# how the reasons of registers refused after a valid spec begin (sharded mode frees their ids)
REFUSALS = ("unsupported by ", "the stream has no column ")
OP_FIELDS = {"register": {"op", "at", "query"}, "terminate": {"op", "at", "id"}, "lookup": {"op", "at", "id"}}
AT_MAX = 2**63 - 1  # an operation's position is a seq (int64, docs/contract.md)


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


def parse_ops(raws: list, vector: bool = True) -> list[tuple[dict, str | None]]:
    """``[parse_op(raw) for raw in raws]``, the JSON lines decoded in one pass. Plain lookup lines
    (:func:`vigil.jsonline.lookup_lines`) are recognized and decoded as columns when every raw is
    a text line (``vector``), the other lines one by one, in their places."""
    out: list[tuple[dict, str | None]] = []
    lines = set(map(type, raws)) == {str}
    if lines:
        texts = raws
    elif not any(isinstance(r, str | bytes) for r in raws):
        return [check_op(r) for r in raws]
    else:
        texts = [r for r in raws if isinstance(r, str | bytes)]
    if vector and lines and len(texts) >= jsonline.LOOKUP_MIN:
        got = jsonline.lookup_lines(texts)
        if got is not None:
            ops, rest = got
            out = list(zip(ops, repeat(None)))
            if rest:
                for i, r in zip(rest, parse_ops([texts[i] for i in rest], False), strict=True):
                    out[i] = r
            return out
    dec = iter(jsonline.loads_many(texts))
    app, fields_of, ids_ops = out.append, OP_FIELDS.get, _ID_OPS
    for r in raws:
        if not isinstance(r, str | bytes):
            app(check_op(r))
            continue
        r = next(dec)
        if type(r) is dict:  # decoded here: a fresh dict, used as the op without a copy
            kind, at = r.get("op"), r.get("at", 0)
            if type(at) is int and 0 <= at <= AT_MAX and type(kind) is str:
                if kind in ids_ops:  # a lookup or termination: {op, at, id}
                    if type(r.get("id")) is str and r.keys() <= ids_ops[kind]:
                        r["at"] = at
                        app((r, None))
                        continue
                elif (fields := fields_of(kind)) is not None and type(r.get("query")) is dict and r.keys() <= fields:
                    r["at"] = at
                    app((r, None))
                    continue
        app(({}, _malformed(r)) if isinstance(r, ValueError) else check_op(r))
    return out


_ID_OPS = {k: OP_FIELDS[k] for k in ("lookup", "terminate")}


def check_op(raw: Any) -> tuple[dict, str | None]:
    """The field checks of a decoded operation (``at`` defaults to 0; an integral float ``at`` is
    taken as an integer)."""
    if type(raw) is dict:  # the common well-formed shapes, checked at once
        kind, at = raw.get("op"), raw.get("at", 0)
        fields = OP_FIELDS.get(kind) if type(kind) is str else None
        if fields is not None and type(at) is int and 0 <= at <= AT_MAX and raw.keys() <= fields \
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
            op["at"] = at = int(at)
        else:
            return {**op, "at": None}, f"at: must be a non-negative integer, got {at!r}"
    if at > AT_MAX:
        return {**op, "at": None}, f"at: must be at most 2^63 - 1 (a stream position), got {at!r}"
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



def terminate_run(eng: Any, ops: list[dict], n: int) -> None:
    """Apply the terminations ``ops`` (parsed, in order) at position ``n``, exactly as
    ``for op in ops: eng._apply(op, n)`` does, with one ``terminate_many`` call per group: each
    operation is walked in order (an unknown id rejected in its place, the group of a known one
    fed its deferred rows when first touched, as one by one: feeding may mature queries), and the
    alive queries are handed to their groups at the end (terminations change no other group, and
    a run of terminations emits nothing but those rejections). A query terminated twice, or one
    that matured, is a no-op after the first. O(1) per operation plus one operator call per group."""
    by_id, where, groups = eng.by_id, eng.where, eng.groups
    per: dict[str, list[int]] = {}
    done: set[int] = set()
    applied = 0
    for op in ops:
        ident = op["id"]
        qid = by_id.get(ident)
        if qid is None:
            eng._reject_op(op["at"], ident, f"id: unknown query id {ident!r}")
            continue
        applied += 1
        if qid in done:
            continue
        key = where.get(qid)
        if key is not None and key not in per:
            key = eng._where(qid)  # its group fed first (once: later calls feed nothing)
        if key is not None:
            per.setdefault(key, []).append(qid)
            done.add(qid)
    for key, qids in per.items():
        g = groups[key]
        g.__dict__.pop("_chk", None)  # what it checks changes (as _ready(key) before each one)
        g.__dict__.pop("_chk_refs", None)
        g.terminate_many(qids)
        for qid in qids:  # as _gone(qid) for each
            del where[qid]
        g.qids.difference_update(qids)
        if not g.qids and not g.keeps_history:
            del groups[key]
    eng.counts["ops_applied"] += applied


# ----------------------------------------------------------------------------- segments


def deferrable(eng, upto: int) -> int:
    """How many pending operations, from the first, may wait until the end of the coming segment
    (:meth:`vigil.engine.Engine._segment`):

    * terminations of known ids with ``at <= upto``, except one that would leave its group without
      queries (which rows a group validates and sees depends on whether it has queries). A
      termination takes effect after element ``at``; applying it at the end of the segment instead
      only means dropping the query's outputs after ``at``, in groups whose queries never affect
      one another's outputs (``Group.independent``);
    * lookups of alive queries (not of a group whose queries end inside a segment): a lookup
      changes nothing, so it is answered after the segment's rows are judged, from its group fed
      the rows up to its position (:func:`lookups_inside`). Lookups and
      terminations never wait together: a termination applied where the segment's runs meet (a
      row judged after a threshold group is fed) feeds its group every row before it, past a
      lookup still waiting in that group.

    So a stream with churn and lookups is cut into segments only at registrations and at
    terminations in dependent groups, not at every operation."""
    left: dict[str, int] = {}
    seen: set[int] = set()
    looked = False
    can_wait: dict[str | None, bool] = {}  # group key -> its lookups may wait
    fed: set[str] = set()  # groups whose queries end inside segments, fed their deferred rows
    by_id, where, groups = eng.by_id, eng.where, eng.groups
    for k, (at, _, op) in enumerate(eng.pending):
        kind = op["op"]
        if at > upto or kind not in ("terminate", "lookup"):
            return k
        qid = by_id.get(op["id"])
        if qid is None:  # an unknown id is rejected in its place
            return k
        key = where.get(qid)
        if kind == "lookup" and not left and not looked:  # the rest of the run at once
            return k + lookups.waiting(eng, k, upto, can_wait)
        if kind == "lookup":
            ok = can_wait.get(key)
            if ok is None:
                g = None if key is None else groups[key]
                ok = can_wait[key] = not (g is None or g.ends_inside_segment or not hasattr(g, "lookup_many"))
            if not ok or left:
                return k
            looked = True
            continue
        if looked:
            return k
        if key is not None and key not in fed and groups[key].ends_inside_segment:  # its queries may have ended
            fed.add(key)
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
