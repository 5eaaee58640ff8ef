"""Runs of waiting lookups handled with one pass over each of their columns (ids, query numbers,
groups) instead of a Python step per lookup: which lookups may wait until the end of a segment
(:func:`waiting`, part of :func:`vigil.oprun.deferrable`) and which group answers each
(:func:`by_group`), and answering them group by group (:func:`lookups_inside`, :func:`walk`: a group
fed its deferred rows up to each lookup position; :func:`emit_answers`: the answers as columns). Results equal those of the
lookup-by-lookup loops they replace."""

from __future__ import annotations

import math
import operator
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa

from .group import PerKey

_op = operator.itemgetter(2)  # a pending entry's operation
_kind = operator.itemgetter("op")
_id = operator.itemgetter("id")
_pos = operator.itemgetter(0)  # a lookup's position (looks: (at, order, op) entries)


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
    """Answer lookups that waited until the end of a segment (:func:`deferrable`), each at its
    position, group by group: a group's deferred rows up to its last lookup are gathered and their
    visibility computed once, then it is fed the rows up to each of its lookup positions in turn
    and asked there (one ``lookup_many`` or ``lookup_cols`` per position, or one ``push_lookup``
    for all), the rest of its rows stay deferred. A group's answers depend on its own rows only,
    so walking the groups one after the other gives the answers of applying the lookups in order.
    A group with a time column answers with the time of its last row up to the lookup (``t_pre``:
    its time before the segment's rows, for a lookup that feeds it none), and gets back the time
    of the segment's last row for judging the rows after the segment. The answers are emitted in
    the lookups' order, each after the elements up to its position: as columns end to end when
    every group answers as columns (:func:`emit_columns`), else as :func:`emit_answers`."""
    groups = eng.groups
    qids, per = by_group(eng, looks)
    qarr = np.fromiter(qids, np.int64, len(qids))
    answers: list[Any] = [None] * len(looks)
    blocks: dict[str, tuple[np.ndarray, pa.Array | None]] = {}  # a group's answers as columns
    pos0 = eng.position
    try:
        for key, ks in per.items():
            g = groups[key]
            timed = key in t_pre
            if timed:
                t_end = g.t_last
                g.t_last = t_pre[key]
            eng.position = looks[ks[-1]][0]
            if len(ks) == len(looks):  # one group (ks = every index)
                got = walk(eng, g, list(map(_pos, looks)), qarr, ks, answers)
            else:
                got = walk(eng, g, [looks[k][0] for k in ks], qarr[np.asarray(ks, np.int64)], ks, answers)
            if got is not None:
                blocks[key] = got
            if timed:
                g.t_last = max(g.t_last, t_end)
    finally:
        eng.position = pos0
    ats = list(map(_pos, looks))
    if len(blocks) == len(per):
        values, keys = _gathered(per, blocks, len(looks))
        emit_columns(eng, ats, qarr, values, keys, ats)
        return
    for key, (values, keys) in blocks.items():  # beside groups that answer as tuples
        for k, a in zip(per[key], as_tuples(values, keys), strict=True):
            answers[k] = a
    emit_answers(eng, ats, [None] * len(looks), qids, answers, ats)


def walk(eng, g, ats: list[int], qids: np.ndarray, ks: list[int], answers: list) -> tuple | None:
    """Group ``g`` fed its deferred rows up to each position of ``ats`` (ascending) in turn and
    asked for the queries ``qids`` there (one call per position; one ``push_lookup`` for all when
    the group can); its rows after the last position stay deferred. A group with ``lookup_cols``
    answers as columns, returned: (values, float64 with NaN for no value; keys, an Arrow
    ``list<string>`` array or None), in the order of ``qids``; any other's answers go to
    ``answers[ks[i]]`` (None returned)."""
    later = g.__dict__.pop("_later", None)
    rows = seqs = vis = None
    if later:
        later, rest = split_later(later, ats[-1])
        if rest:
            g._later = rest
    if ats[0] == ats[-1]:  # one position
        starts = [0]
    else:
        starts = [i for i in range(len(ats)) if not i or ats[i] != ats[i - 1]]  # one call per position
    qarr = np.asarray(qids, np.int64)
    if later:
        cols, seg = eng._cols, eng._seg
        rows, seqs = np.concatenate([e[0] for e in later]), np.concatenate([e[1] for e in later])
        vis = eng._owned(g, g.visible(cols, rows), rows) & np.concatenate([e[2] for e in later])
        every = bool(vis.all())
        cuts = np.searchsorted(seqs, [ats[i] for i in starts], side="right").tolist()
    fed = 0
    starts.append(len(ats))
    as_cols = hasattr(g, "lookup_cols")
    if as_cols and len(starts) > 2 and not g.follows_positions and hasattr(g, "push_lookup"):  # one operator call
        if rows is None:
            rs, ss = np.empty(0, np.int64), np.empty(0, np.int64)
        else:
            rs, ss = (rows, seqs) if every else (rows[vis], seqs[vis])
        pos = np.asarray([ats[i] for i in starts[:-1]], np.int64)
        got = g.push_lookup(eng._cols, rs, ss, np.searchsorted(ss, pos, side="right"), pos,
                            np.asarray(starts, np.int64), qarr)
        if got is not None:
            return got, None
    vparts: list[np.ndarray] = []
    kparts: list[pa.Array | None] = []
    for c, (i, j) in enumerate(pairwise(starts)):
        if rows is not None and cuts[c] > fed:
            e = cuts[c]
            if g.follows_positions:  # rejected rows move its windows too: it gets every row
                g.feed_positions(cols, rows[fed:e], seqs[fed:e], vis[fed:e], seg)
            elif every:
                g.feed(cols, rows[fed:e], seqs[fed:e], seg)
            else:
                v = vis[fed:e]
                if v.any():
                    g.feed(cols, rows[fed:e][v], seqs[fed:e][v], seg)
            fed = e
        if as_cols:
            v, kc = g.lookup_cols(qarr[i:j], ats[i])
            vparts.append(v)
            kparts.append(kc)
            continue
        got = g.lookup_many(qarr[i:j], ats[i])
        if j - i == 1:
            answers[ks[i]], = got
        else:
            for k, a in zip(ks[i:j], got, strict=True):
                answers[k] = a
    if not as_cols:
        return None
    if len(vparts) == 1:
        return vparts[0], kparts[0]
    return np.concatenate(vparts), _concat_keys(kparts, vparts)


def _concat_keys(kparts: list, vparts: list[np.ndarray]) -> pa.Array | None:
    """Key columns of consecutive answer blocks as one (None: no block has keys)."""
    if all(k is None for k in kparts):
        return None
    return pa.concat_arrays([pa.nulls(len(v), _KEYS) if k is None else k for k, v in zip(kparts, vparts, strict=True)])


_KEYS = pa.list_(pa.string())


def _gathered(per: dict[str, list[int]], blocks: dict, n: int) -> tuple[np.ndarray, pa.Array | None]:
    """The groups' answer columns (``blocks[key]`` answers the lookups ``per[key]``) in the
    lookups' order."""
    if len(per) == 1:
        return next(iter(blocks.values()))
    order = np.concatenate([np.asarray(ks, np.int64) for ks in per.values()])
    where = np.empty(n, np.int64)
    where[order] = np.arange(n)
    vals = [blocks[key][0] for key in per]
    keys = _concat_keys([blocks[key][1] for key in per], vals)
    return np.concatenate(vals)[where], None if keys is None else keys.take(pa.array(where))


def as_tuples(values: np.ndarray, keys: pa.Array | None) -> list[tuple]:
    """Answer columns as (value or None, keys as a list of texts or None) tuples."""
    vals = [None if math.isnan(x) else x for x in values.tolist()]
    return list(zip(vals, keys.to_pylist() if keys is not None else [None] * len(vals), strict=True))


def emit_columns(eng, ats: list[int], qids: np.ndarray, values: np.ndarray, keys: pa.Array | None,
                 pos: list[int]) -> None:
    """Answer events of lookups of queries ``qids`` at positions ``ats``, applied at engine
    positions ``pos``, from their columns (values: NaN for no value; keys: an Arrow
    ``list<string>`` array or None): ids taken by Arrow from the distinct queries' ids, no Python
    object per answer but the positions. Counts the lookups applied."""
    eng.counts["ops_applied"] += len(qids)
    eng._out.emit_answer_columns(id_column(eng.ids, qids), ats, values, keys, pos, eng.out_counts)


def id_column(ids: list[str], qids: np.ndarray) -> pa.Array:
    """The ids of queries ``qids`` (query numbers, int64) as an Arrow string array (each distinct
    id converted once)."""
    if len(qids) < 64:
        return pa.array([ids[q] for q in qids.tolist()], pa.string())
    top = int(qids.max()) + 1
    if top <= 8 * len(qids):  # distinct numbers by counting, not sorting
        u = np.flatnonzero(np.bincount(qids, minlength=top))
        code = np.empty(top, np.int64)
        code[u] = np.arange(len(u))
        inv = code[qids]
    else:
        u, inv = np.unique(qids, return_inverse=True)
    return pa.array([ids[q] for q in u.tolist()], pa.string()).take(pa.array(inv.ravel()))


def emit_answers(eng, ats: list[int], asked: list, qids: list[int], answers: list, pos: list[int]) -> None:
    """The answers (value, keys) of lookups of queries ``qids`` at positions ``ats`` (``asked``:
    their ``asked_at`` or None), applied at engine positions ``pos``, as answer events, in order,
    as columns (no dict per event): a per-key answer
    (:class:`vigil.group.PerKey`) is one event per key, or one with an empty key list when no
    key has a value. Counts the lookups applied."""
    ids = eng.ids
    values = list(map(_first, answers))
    if PerKey not in set(map(type, values)):  # one event per lookup: the columns at once
        run = (list(map(ids.__getitem__, qids)), list(ats), values, keys_column(list(map(_second, answers))),
               list(asked), list(pos))
        eng.counts["ops_applied"] += len(qids)
        eng._out.emit_answers(run, eng.out_counts)
        return
    run: tuple[list, list, list, list, list, list] = ([], [], [], [], [], [])  # id, at, value, keys, asked, pos
    r_id, r_at, r_val, r_keys, r_asked, r_pos = run
    for at, ask, q, (value, keys), p in zip(ats, asked, qids, answers, pos, strict=True):
        if isinstance(value, PerKey):
            items = value or [([], None)]
            for k, v in items:
                r_id.append(ids[q])
                r_at.append(at)
                r_val.append(v)
                r_keys.append(list(k))
                r_asked.append(ask)
                r_pos.append(p)
            continue
        r_id.append(ids[q])
        r_at.append(at)
        r_val.append(value)
        r_keys.append(as_list(keys))
        r_asked.append(ask)
        r_pos.append(p)
    eng.counts["ops_applied"] += len(qids)
    eng._out.emit_answers(run, eng.out_counts)
