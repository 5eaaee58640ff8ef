"""The JSONL writer of ``vigil replay`` (:func:`vigil.events.write_outputs`): each output event's
line is ``json.dumps(d) + "\\n"`` for ``d`` of :func:`vigil.events.output_rows`, built from whole
columns. Tables of >= 1,024 rows are joined by Arrow into one text array (:func:`lines_array`)
and written from its buffer (:func:`jsonl_bytes`: no Python string per line); smaller ones line
by line. Every line is ASCII (``json.dumps`` escapes the rest)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from .jsonl_concat import Dict as _Dict
from .jsonl_concat import Ints as _Ints
from .jsonl_concat import concat as _concat
from .outschema import OUTPUT_SCHEMA, conform_outputs

#: the events whose line is ``{"event", "id", "at", "value"}`` when they carry no keys and no asked_at
_VALUE_EVENTS = ("answer", "update", "alert", "clear")
BIG = 1024  # tables of at least this many rows: the lines joined by Arrow


def jsonl_lines(table: pa.Table) -> list[str]:
    """``json.dumps(d) + "\\n"`` for every ``d`` of :func:`vigil.events.output_rows`, the same text,
    built from whole columns: ids and event names dumped once each, numbers formatted from the
    float64 column (integral ones as integers), key lists joined by Arrow when no key needs
    escaping; only lines other than answers, updates, alerts and clears are built one by one
    (:func:`_line`). Tables of >= :data:`BIG` rows: :func:`lines_array`'s lines."""
    n = table.num_rows
    if not n:
        return []
    if not set(OUTPUT_SCHEMA.names) <= set(table.column_names):
        table = conform_outputs(table)
    if n >= BIG:
        return lines_array(table).to_pylist()
    ev, ids, at = (table.column(c).to_pylist() for c in ("event", "id", "at"))
    tx = {x: json.dumps(x) for x in set(ev).union(ids)}  # (None: "null")
    at_t = list(map(str, at)) if table.column("at").null_count == 0 else \
        ["null" if a is None else str(a) for a in at]
    tails = [', "value": ' + v for v in _num_texts(table.column("value"))]
    valued = _valued(table)
    keys, asked = table.column("keys"), table.column("asked_at")
    if keys.null_count < n:  # a substream answer's keys are its value; a per-key answer: keys, value
        kt = _key_texts(keys)
        for i in np.flatnonzero(valued & _valid(keys)).tolist():
            t = tails[i]
            tails[i] = ', "value": ' + kt[i] if t == ', "value": null' else ', "keys": ' + kt[i] + t
    if asked.null_count < n:
        for i in np.flatnonzero(valued & _valid(asked)).tolist():
            tails[i] = f', "asked_at": {asked[i].as_py()}' + tails[i]
    out = [f'{{"event": {e}, "id": {i}, "at": {a}{t}}}\n' for e, i, a, t in
           zip(map(tx.__getitem__, ev), map(tx.__getitem__, ids), at_t, tails, strict=True)]
    other = np.flatnonzero(~valued)
    if len(other):
        for i, row in zip(other.tolist(), table.take(pa.array(other)).to_pylist(), strict=True):
            out[i] = _line(row, tx)
    return out


def lines_array(table: pa.Table) -> pa.Array:
    """The lines of :func:`jsonl_lines` (a table with every output column) as one Arrow string
    array without nulls, the row-wise concatenation of text columns by one kernel pass
    (:func:`vigil.jsonl_concat.concat`): the event, id and reason texts dumped once per distinct
    value, ``at``, ``r`` and ``s`` written as decimal text by that pass, ``asked_at`` cast; each row's tail after ``at`` by its event's kind (:data:`_KIND`): answers,
    updates, alerts and clears their values' texts (:func:`_num_array`) with the key lists'
    texts (:func:`_key_array`) in place of a null value or before a value (:func:`_valued_tails`);
    joins ``r``, ``s`` and the ``left`` / ``right`` texts (:func:`_join_tails`); clusters ``r``
    (and a cluster update's value); rejected and late rows their reason; other events nothing.
    Rows of several kinds: each kind's tails concatenated on its rows, taken into place."""
    n = table.num_rows
    kind = _kinds(table.column("event"))
    at = table.column("at").combine_chunks()
    parts: list[Any] = ['{"event": ', _json_dict(table.column("event")), ', "id": ', _json_dict(table.column("id")),
                        ', "at": ', _int_texts(at)]
    asked = table.column("asked_at")
    if asked.null_count < n:
        a_t = pc.binary_join_element_wise(', "asked_at": ', pc.cast(asked.combine_chunks(), pa.string()), "")
        parts.append(pc.fill_null(a_t, ""))
    present = np.flatnonzero(np.bincount(kind, minlength=len(_TAILS)))
    if len(present) == 1:
        parts += _TAILS[present[0]](table)
    else:
        pieces, where, base = [], np.empty(n, np.int64), 0
        for k in present.tolist():
            rows = np.flatnonzero(kind == k)
            pieces.append(_concat(_TAILS[k](table.take(pa.array(rows))), len(rows)))
            where[rows] = base + np.arange(len(rows))
            base += len(rows)
        parts.append(pa.concat_arrays(pieces).take(pa.array(where)))
    parts.append("}\n")
    return _concat(parts, n)


def _kinds(events: pa.ChunkedArray) -> np.ndarray:
    """Each row's kind of line (:data:`_KIND`; 5, nothing after ``at``, for other or null events)."""
    enc = events.combine_chunks().dictionary_encode()
    codes = np.array([_KIND.get(x, 5) for x in enc.dictionary.to_pylist()] + [5], np.int64)
    idx = pc.fill_null(enc.indices, len(codes) - 1)
    return codes[np.asarray(idx.to_numpy(zero_copy_only=False), np.int64)]


def _int_texts(col: pa.ChunkedArray | pa.Array) -> _Ints:
    """The decimal text of every value of an integer column ("null" where null), as a part of
    :func:`vigil.jsonl_concat.concat`."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if not arr.null_count:
        return _Ints(np.asarray(arr.to_numpy(zero_copy_only=False), np.int64), np.ones(len(arr), np.bool_))
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), np.bool_)
    return _Ints(np.asarray(pc.fill_null(arr, 0).to_numpy(zero_copy_only=False), np.int64), valid)


def _valued_tails(table: pa.Table) -> list[Any]:
    """``, "keys": [...]`` (per-key answers) and ``, "value": v`` of answers, updates, alerts and
    clears (a substream answer: its key list as its value)."""
    n = table.num_rows
    value = table.column("value")
    vt = _num_array(value)
    keys = table.column("keys")
    parts: list[Any] = []
    if keys.null_count < n:  # a substream answer's keys are its value; a per-key answer: keys, value
        has = _valid(keys)
        kt = _key_array(keys)
        v = np.asarray(value.to_numpy(zero_copy_only=False), np.float64)  # (nulls: NaN)
        as_value = has & np.isnan(v)
        if as_value.any():
            vt = pc.if_else(pa.array(as_value), kt, vt)
        before = has & ~as_value
        if before.any():
            parts.append(pc.if_else(pa.array(before), pc.binary_join_element_wise(', "keys": ', kt, ""), ""))
    return [*parts, ', "value": ', vt]


def _join_tails(table: pa.Table) -> list[Any]:
    """``, "r": r, "s": s`` of join events, then ``, "left": ...`` / ``, "right": ...`` where the
    selected values' text is not null (:func:`_canonical_json`)."""
    parts: list[Any] = [', "r": ', _int_texts(table.column("r")), ', "s": ', _int_texts(table.column("s"))]
    for side in ("left", "right"):
        col = table.column(side)
        if col.null_count < table.num_rows:
            parts.append(pc.fill_null(pc.binary_join_element_wise(f', "{side}": ', _canonical_json(col), ""), ""))
    return parts


def _canonical_json(col: pa.ChunkedArray) -> pa.Array:
    """``json.dumps(json.loads(x))`` of every text of a string column (null where null), once
    per distinct text, taken by Arrow."""
    enc = col.combine_chunks().dictionary_encode()
    texts = [json.dumps(json.loads(x)) for x in enc.dictionary.to_pylist()]
    return pa.array(texts, pa.string()).take(enc.indices)


def _cluster_tails(table: pa.Table) -> list[Any]:
    return [', "cluster": ', _int_texts(table.column("r"))]


def _cluster_update_tails(table: pa.Table) -> list[Any]:
    return [', "cluster": ', _int_texts(table.column("r")), ', "value": ', _num_array(table.column("value"))]


def _reason_tails(table: pa.Table) -> list[Any]:
    return [', "reason": ', _json_texts(table.column("reason"))]


def _no_tails(table: pa.Table) -> list[Any]:
    return []


#: the kind of line of each event: 0 valued, 1 join, 2 cluster, 3 cluster_update, 4 reason, 5 none
_KIND = {**{e: 0 for e in _VALUE_EVENTS}, "join": 1, "cluster": 2, "cluster_update": 3, "rejected": 4, "late": 4}
_TAILS = (_valued_tails, _join_tails, _cluster_tails, _cluster_update_tails, _reason_tails, _no_tails)


def jsonl_bytes(table: pa.Table) -> bytes | memoryview:
    """The text of :func:`jsonl_lines` (every line ASCII) as bytes; from :func:`lines_array`'s
    buffer for tables of >= :data:`BIG` rows."""
    n = table.num_rows
    if n < BIG:
        return "".join(jsonl_lines(table)).encode("ascii")
    if not set(OUTPUT_SCHEMA.names) <= set(table.column_names):
        table = conform_outputs(table)
    arr = lines_array(table)
    if arr.type != pa.string() or arr.null_count:
        return "".join(arr.to_pylist()).encode("ascii")
    offs = np.frombuffer(arr.buffers()[1], np.int32)
    a, b = int(offs[arr.offset]), int(offs[arr.offset + n])
    return memoryview(arr.buffers()[2])[a:b] if b > a else b""


def _valued(table: pa.Table) -> np.ndarray:
    """Rows whose event is one of :data:`_VALUE_EVENTS`."""
    return np.asarray(pc.fill_null(pc.is_in(table.column("event"), value_set=pa.array(_VALUE_EVENTS)),
                                   False).to_numpy(zero_copy_only=False), bool)


def _valid(col: pa.ChunkedArray) -> np.ndarray:
    return np.asarray(col.is_valid().to_numpy(zero_copy_only=False), bool)


def _num_array(values: pa.ChunkedArray) -> pa.Array:
    """:func:`_num_texts` as an Arrow string array: integral values cast by Arrow, the others as
    :func:`_float_array` writes them, null / NaN / infinities from constants, one ``take``."""
    v = np.asarray(values.to_numpy(zero_copy_only=False), np.float64)  # (nulls: NaN)
    where = np.zeros(len(v), np.int64)  # index into the concatenated texts; 0: "null"
    where[v == np.inf] = 1
    where[v == -np.inf] = 2
    parts = [pa.array(["null", "Infinity", "-Infinity"], pa.string())]
    with np.errstate(invalid="ignore"):
        intg = (np.abs(v) < 2**53) & (v == np.trunc(v))
    base = 3
    for k, texts in ((np.flatnonzero(intg), None), (np.flatnonzero(~intg & np.isfinite(v)), 1)):
        if len(k):
            if texts is None:
                parts.append(pc.cast(pa.array(v[k].astype(np.int64)), pa.string()))
            else:
                parts.append(_float_array(v[k]))
            where[k] = base + np.arange(len(k))
            base += len(k)
    if len(parts) == 1:
        return parts[0].take(pa.array(where))
    return pa.concat_arrays(parts).take(pa.array(where))


def _float_array(v: np.ndarray) -> pa.Array:
    """:func:`_float_texts` as an Arrow string array."""
    a = np.abs(v)
    mid = np.flatnonzero((a >= 1e-4) & (a < 1e10))
    if len(mid) < 64:
        return pa.array(list(map(repr, v.tolist())), pa.string())
    texts = pc.cast(pa.array(v[mid]), pa.string())
    step = max(1, len(mid) // 16)
    probe = mid[::step][:16]
    if texts.take(pa.array(np.arange(0, len(mid), step)[:16])).to_pylist() != list(map(repr, v[probe].tolist())):
        return pa.array(list(map(repr, v.tolist())), pa.string())
    if len(mid) == len(v):
        return texts
    rest = np.ones(len(v), bool)
    rest[mid] = False
    rest = np.flatnonzero(rest)
    where = np.empty(len(v), np.int64)
    where[mid] = np.arange(len(mid))
    where[rest] = len(mid) + np.arange(len(rest))
    return pa.concat_arrays([texts, pa.array(list(map(repr, v[rest].tolist())), pa.string())]).take(pa.array(where))


def _key_array(keys: pa.ChunkedArray) -> pa.Array:
    """:func:`_key_texts` as an Arrow string array (null where the list is null): written from
    the list's buffers by one kernel pass (:func:`_list_json`) when every key is plain (printable
    ASCII without quote or backslash), else one by one."""
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    got = _plain_lists(arr)
    if got is not None:
        return got
    return pa.array(_key_texts(arr), pa.string())


def _plain_lists(arr: pa.Array) -> pa.Array | None:
    """``json.dumps`` of each list of a ``list<string>`` array, from its buffers (None when a
    key is not plain or a key is null, or the texts would pass 2 GB)."""
    if arr.type != pa.list_(pa.string()):
        return None
    child = arr.values
    if child.null_count:
        return None
    n = len(arr)
    loffs = np.asarray(arr.offsets.to_numpy(zero_copy_only=False), np.int64)
    soffs = np.frombuffer(child.buffers()[1], np.int32)[child.offset:child.offset + len(child) + 1]
    buf = child.buffers()[2]
    data = np.frombuffer(buf, np.uint8) if buf is not None and buf.size else np.zeros(1, np.uint8)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool)
    ok, offs, out = _list_json(loffs, soffs, data, valid, _ESCAPED)
    if not ok or offs[-1] >= 2**31:
        return None
    texts = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offs.astype(np.int32)), pa.py_buffer(out)])
    if arr.null_count:
        texts = pc.if_else(pa.array(valid), texts, pa.nulls(n, pa.string()))
    return texts


@njit(cache=True, nogil=True)
def _list_json(loffs, soffs, data, valid, escaped):
    """(True, text offsets, text bytes) of ``["k1", "k2"]`` per list (``[]`` when empty, nothing
    when not ``valid``); False first when a key holds an ``escaped`` byte."""
    n = len(loffs) - 1
    offs = np.zeros(n + 1, np.int64)
    for i in range(n):
        a, b = loffs[i], loffs[i + 1]
        size = 0
        if valid[i]:
            size = 2 if b == a else soffs[b] - soffs[a] + 4 * (b - a)
        offs[i + 1] = offs[i] + size
    if n and loffs[n] > loffs[0]:
        for j in range(soffs[loffs[0]], soffs[loffs[n]]):
            if escaped[data[j]]:
                return False, offs, np.zeros(0, np.uint8)
    out = np.empty(offs[n], np.uint8)
    for i in range(n):
        if not valid[i]:
            continue
        p = offs[i]
        out[p] = 91  # [
        p += 1
        for k in range(loffs[i], loffs[i + 1]):
            if k > loffs[i]:
                out[p] = 44  # ,
                out[p + 1] = 32
                p += 2
            out[p] = 34  # "
            p += 1
            for j in range(soffs[k], soffs[k + 1]):
                out[p] = data[j]
                p += 1
            out[p] = 34
            p += 1
        out[p] = 93  # ]
    return True, offs, out


def _joined_keys(arr: pa.Array) -> pa.Array:
    """``json.dumps`` of each list of a ``list<string>`` array of plain texts, joined by Arrow."""
    joined = pc.binary_join(arr, '", "')
    return pc.if_else(pc.equal(pc.list_value_length(arr), 0), pa.scalar("[]"),
                      pc.binary_join_element_wise('["', joined, '"]', ""))


def _json_dict(col: pa.ChunkedArray) -> _Dict:
    """``json.dumps`` of every value of a string column (null: "null") as a
    :class:`vigil.jsonl_concat.Dict`: one dump per distinct value, and each row's index into them."""
    enc = col.combine_chunks().dictionary_encode()
    texts = [json.dumps(x) for x in enc.dictionary.to_pylist()]
    idx = enc.indices
    if idx.null_count:
        idx = pc.fill_null(idx, len(texts))
        texts.append("null")
    return _Dict(pa.array(texts, pa.string()), np.asarray(idx.to_numpy(zero_copy_only=False), np.int64))


def _json_texts(col: pa.ChunkedArray) -> pa.Array:
    """:func:`_json_dict`'s texts, one per row, as an Arrow array (taken by Arrow)."""
    d = _json_dict(col)
    return d.texts.take(pa.array(d.idx))


def _key_texts(keys: pa.ChunkedArray) -> list[str | None]:
    """``json.dumps`` of every key list (None where null): joined by Arrow when no key needs
    escaping (every byte printable ASCII, no quote or backslash), else one by one (each list once)."""
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    if _plain_texts(arr.flatten()):
        return _joined_keys(arr).to_pylist()  # (null lists: None)
    done: dict[tuple, str] = {}
    out: list[str | None] = []
    for k in arr.to_pylist():
        if k is None:
            out.append(None)
            continue
        t = done.get(tk := tuple(k))
        if t is None:
            t = done[tk] = json.dumps(k)
        out.append(t)
    return out


def _num_texts(values: pa.ChunkedArray) -> list[str]:
    """The JSON text of every value as :func:`_line` writes it: null (and NaN) "null", an integral
    value below 2^53 in magnitude as an integer, any other as ``json.dumps`` writes it."""
    v = np.asarray(values.to_numpy(zero_copy_only=False), np.float64)  # (nulls: NaN)
    out = np.full(len(v), "null", object)
    with np.errstate(invalid="ignore"):
        intg = (np.abs(v) < 2**53) & (v == np.trunc(v))
    k = np.flatnonzero(intg)
    if len(k):
        out[k] = list(map(str, v[k].astype(np.int64).tolist()))
    k = np.flatnonzero(~intg & np.isfinite(v))
    if len(k):
        out[k] = _float_texts(v[k])
    out[v == np.inf] = "Infinity"  # as json.dumps writes them
    out[v == -np.inf] = "-Infinity"
    return out.tolist()


def _float_texts(v: np.ndarray) -> list[str]:
    """``repr`` of finite non-integral floats. Arrow's cast to text writes the same shortest
    round-trip digits, and the same notation for 1e-4 <= |v| < 1e10 (checked on millions of
    values per decade; outside it Arrow's exponent form differs), ~3x faster: used there, when
    a sample of the values agrees with ``repr``."""
    a = np.abs(v)
    mid = np.flatnonzero((a >= 1e-4) & (a < 1e10))
    if len(mid) < 64:
        return list(map(repr, v.tolist()))
    out = np.empty(len(v), object)
    texts = pc.cast(pa.array(v[mid]), pa.string()).to_pylist()
    probe = mid[:: max(1, len(mid) // 16)][:16]
    if [texts[i] for i in range(0, len(mid), max(1, len(mid) // 16))][:16] != list(map(repr, v[probe].tolist())):
        return list(map(repr, v.tolist()))
    out[mid] = texts
    rest = np.ones(len(v), bool)
    rest[mid] = False
    rest = np.flatnonzero(rest)
    if len(rest):
        out[rest] = list(map(repr, v[rest].tolist()))
    return out.tolist()


_ESCAPED = np.ones(256, bool)  # bytes json.dumps does not write as they are in a string
_ESCAPED[0x20:0x7F] = False
_ESCAPED[[0x22, 0x5C]] = True


def _plain_texts(a: pa.Array) -> bool:
    """Whether no string of ``a`` (a string array) is null or holds a byte :data:`_ESCAPED`."""
    if a.null_count or a.type != pa.string():
        return False
    if not len(a):
        return True
    offs = np.frombuffer(a.buffers()[1], np.int32)
    data = a.buffers()[2]
    if data is None:
        return True
    b = np.frombuffer(data, np.uint8)[offs[a.offset]:offs[a.offset + len(a)]]
    return not _ESCAPED[b].any()


def _line(row: dict[str, Any], tx: dict[Any, str]) -> str:
    """One output line (see :func:`jsonl_lines`) from its row."""
    dumps = json.dumps

    def num(v: Any) -> str:
        if v is None or v != v:
            return "null"
        return str(int(v)) if v.is_integer() and abs(v) < 2**53 else json.dumps(v)

    e, a, asked = row["event"], row["at"], row.get("asked_at")
    parts = ['{"event": ', tx[e], ', "id": ', tx[row["id"]], ', "at": ', "null" if a is None else str(a)]
    if asked is not None:
        parts += (', "asked_at": ', str(asked))
    if e in _VALUE_EVENTS:
        v, k = row["value"], row.get("keys")
        null = v is None or v != v
        if k is not None and null:
            parts += (', "value": ', dumps(k))
        else:
            if k is not None:
                parts += (', "keys": ', dumps(k))
            parts += (', "value": ', num(v))
    elif e == "join":
        r, s_ = row.get("r"), row.get("s")
        parts += (', "r": ', "null" if r is None else str(r), ', "s": ', "null" if s_ is None else str(s_))
        for side in ("left", "right"):
            x = row.get(side)
            if x is not None:
                parts += (f', "{side}": ', dumps(json.loads(x)))
    elif e in ("cluster", "cluster_update"):
        r = row.get("r")
        parts += (', "cluster": ', "null" if r is None else str(r))
        if e == "cluster_update":
            parts += (', "value": ', num(row["value"]))
    elif e in ("rejected", "late"):
        parts += (', "reason": ', dumps(row.get("reason")))
    parts.append("}\n")
    return "".join(parts)
