"""Runs of waiting lookups handled with one pass over each of their columns (ids, query numbers,
groups) instead of a Python step per lookup: which lookups may wait until the end of a segment
(:func:`waiting`, part of :func:`vigil.oprun.deferrable`) and which group answers each
(:func:`by_group`, for :func:`vigil.oprun.lookups_inside`). Results equal those of the
lookup-by-lookup loops they replace."""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
import pyarrow as pa

_op = operator.itemgetter(2)  # a pending entry's operation
_kind = operator.itemgetter("op")
_id = operator.itemgetter("id")


def waiting(eng: Any, k0: int, upto: int, can_wait: dict) -> int:
    """How many pending operations from the ``k0``-th on are lookups that may wait (each with
    ``at <= upto``, of a known id, of an alive query whose group answers lookups inside a
    segment: see :func:`vigil.oprun.deferrable`), stopping at the first that is not."""
    pend = eng.pending
    ops = list(map(_op, pend.peek(k0, pend.count_upto(upto))))
    kinds = list(map(_kind, ops))
    if kinds.count("lookup") != len(kinds):
        ops = ops[:next(i for i, x in enumerate(kinds) if x != "lookup")]
    qids = list(map(eng.by_id.get, map(_id, ops)))
    if None in qids:  # an unknown id is rejected in its place
        qids = qids[:qids.index(None)]
    keys = list(map(eng.where.get, qids))
    groups = eng.groups
    bad = set()
    for key in set(keys):
        ok = can_wait.get(key)
        if ok is None:
            g = None if key is None else groups[key]
            ok = can_wait[key] = not (g is None or g.ends_inside_segment or not hasattr(g, "lookup_many"))
        if not ok:
            bad.add(key)
    if bad:
        return next(i for i, key in enumerate(keys) if key in bad)
    return len(keys)


def by_group(eng: Any, looks: list) -> tuple[list[int], dict[str, list[int]]]:
    """(query numbers of the waiting lookups ``looks``, group key -> indices of its lookups in
    order)."""
    qids = list(map(eng.by_id.__getitem__, map(_id, map(_op, looks))))
    keys = list(map(eng.where.__getitem__, qids))
    if keys and keys.count(keys[0]) == len(keys):
        return qids, {keys[0]: list(range(len(keys)))}
    per: dict[str, list[int]] = {}
    for k, key in enumerate(keys):
        per.setdefault(key, []).append(k)
    return qids, per


def queue_rest(eng: Any, parsed: list, k: int, new: list) -> bool:
    """``Engine.add_operations`` once an operation was queued: every later one that is well
    formed and not late is queued too, in order; when all of ``parsed[k:]`` are, they are appended
    to ``new`` with their arrival numbers at once (True); else nothing is done (False)."""
    rest = parsed[k:]
    if list(map(_second, rest)).count(None) != len(rest):
        return False
    ops = list(map(_first, rest))
    ats = list(map(_at, ops))
    if ats and min(ats) < eng.position:
        return False
    new.extend(zip(ats, range(eng.arrival, eng.arrival + len(ops)), ops, strict=True))
    eng.arrival += len(ops)
    return True


_first, _second, _at = operator.itemgetter(0), operator.itemgetter(1), operator.itemgetter("at")


class KeyRanks:
    """A substream answer's keys kept as numbers until they are written: ``ranks`` (ascending)
    index ``texts`` (an Arrow string array of the group's key texts in text order). A run of
    answers becomes one Arrow list column (:func:`keys_column`) without a Python string per key;
    :meth:`tolist` gives the key texts where one answer is emitted alone."""

    __slots__ = ("ranks", "texts")

    def __init__(self, ranks: np.ndarray, texts: pa.Array) -> None:
        self.ranks = ranks
        self.texts = texts

    def tolist(self) -> list[str]:
        return self.texts.take(pa.array(self.ranks, pa.int64())).to_pylist()


def as_list(keys: Any) -> Any:
    """An answer's keys as a list of texts (None stays None)."""
    return keys.tolist() if type(keys) is KeyRanks else keys


def keys_column(keys: list) -> pa.Array | list:
    """The keys of a run of answers as an Arrow ``list<string>`` column when every one is a
    :class:`KeyRanks` (the texts of each answer taken from its group's texts by Arrow), else the
    keys as lists."""
    if not keys or set(map(type, keys)) != {KeyRanks}:
        return [as_list(k) for k in keys] if KeyRanks in set(map(type, keys)) else keys
    lens = np.fromiter((len(k.ranks) for k in keys), np.int64, len(keys))
    if int(lens.sum()) >= 2**31:
        return [k.tolist() for k in keys]
    parts, i = [], 0
    while i < len(keys):  # stretches of answers of one group: one take each
        t, j = keys[i].texts, i + 1
        while j < len(keys) and keys[j].texts is t:
            j += 1
        ranks = np.concatenate([k.ranks for k in keys[i:j]]) if j - i > 1 else keys[i].ranks
        parts.append(t.take(pa.array(ranks, pa.int64())))
        i = j
    values = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
    offsets = np.zeros(len(keys) + 1, np.int32)
    np.cumsum(lens, out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values.cast(pa.string()))
