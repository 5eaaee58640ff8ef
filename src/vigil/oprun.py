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

