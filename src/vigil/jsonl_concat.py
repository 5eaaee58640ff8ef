"""Row-wise concatenation of text columns into one Arrow string array (the JSONL writer's lines,
:mod:`vigil.jsonl_out`): each part a text repeated on every row, a string column, a dictionary
column (:class:`Dict`) or an integer column written as decimal text (:class:`Ints`); one numba
pass over the parts' buffers writes every row."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit


class Dict(NamedTuple):
    """A text column as distinct texts (a string array without nulls) and each row's index into them."""
    texts: pa.Array
    idx: np.ndarray


class Ints(NamedTuple):
    """An integer column, written as decimal text ("null" where ``valid`` is False)."""
    values: np.ndarray
    valid: np.ndarray


def as_array(x: Any) -> Any:
    if isinstance(x, Dict):
        return x.texts.take(pa.array(x.idx))
    if isinstance(x, Ints):
        t = pc.cast(pa.array(x.values, pa.int64()), pa.string())
        return pc.if_else(pa.array(x.valid), t, "null")
    return x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x


def concat(parts: list[Any], n: int) -> pa.Array:
    """The row-wise concatenation of ``parts`` as one string array of ``n`` rows. A part is a text
    (repeated on every row), a string array of ``n`` texts without nulls, a :class:`Dict` or an
    :class:`Ints`. The parts' offsets, bytes, indices and integers are gathered into one array
    each, then one kernel pass writes the rows (:func:`_concat_kernel`); Arrow's
    ``binary_join_element_wise`` does it when a part is of another type or the text would pass 2 GB."""
    arrays = [x if isinstance(x, (Dict, Ints, str)) else as_array(x) for x in parts] or [""]
    if any(not isinstance(x, (str, Dict, Ints)) and (x.type != pa.string() or x.null_count or len(x) != n)
           for x in arrays):
        return pc.binary_join_element_wise(*map(as_array, arrays), "")
    P = len(arrays)
    offs, datas, ints, valid = [], [], [], []
    kind, start, shift, istart = (np.zeros(P, np.int64) for _ in range(4))
    at = base = iat = 0
    for p, x in enumerate(arrays):
        if isinstance(x, Ints):
            kind[p], istart[p] = 2, iat
            ints.append(np.asarray(x.values, np.int64))
            valid.append(np.asarray(x.valid, np.bool_))
            iat += n
            continue
        if isinstance(x, str):
            b = np.frombuffer(x.encode(), np.uint8)
            o = np.array([0, len(b)], np.int32)
        else:
            arr = x.texts if isinstance(x, Dict) else x
            o = np.frombuffer(arr.buffers()[1], np.int32)[arr.offset:arr.offset + len(arr) + 1]
            buf = arr.buffers()[2]
            b = np.frombuffer(buf, np.uint8)[o[0]:o[-1]] if buf is not None and o[-1] > o[0] else np.zeros(0, np.uint8)
            kind[p] = 1
            if isinstance(x, Dict):
                kind[p], istart[p] = 3, iat
                ints.append(np.asarray(x.idx, np.int64))
                valid.append(np.ones(n, np.bool_))
                iat += n
        start[p], shift[p] = at, base - int(o[0])
        offs.append(o)
        datas.append(b)
        at += len(o)
        base += len(b)
    e64, eb = np.zeros(0, np.int64), np.zeros(0, np.bool_)
    ok, out_offs, out = _concat_kernel(
        n, np.concatenate(offs) if offs else np.zeros(1, np.int32), np.concatenate(datas) if datas else np.zeros(0, np.uint8),
        kind, start, shift, istart, np.concatenate(ints) if ints else e64, np.concatenate(valid) if valid else eb)
    if not ok:
        return pc.binary_join_element_wise(*map(as_array, arrays), "")
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(out_offs), pa.py_buffer(out)])


@njit(cache=True, nogil=True)
def _int_size(v):
    if v == 0:
        return 1
    size = 1 if v < 0 else 0
    u = np.uint64(-(v + 1)) + np.uint64(1) if v < 0 else np.uint64(v)
    while u > 0:
        size += 1
        u //= np.uint64(10)
    return size


@njit(cache=True, nogil=True)
def _concat_kernel(n, offs, data, kind, start, shift, istart, ints, valid):
    """(fits, int32 offsets, bytes) of the rows' texts: row i is, for each part p, by ``kind[p]``:
    0 the bytes ``data[offs[j] + shift[p]:offs[j + 1] + shift[p]]`` with ``j = start[p]`` (a text),
    1 the same with ``j = start[p] + i`` (a column), 3 with ``j = start[p] + ints[istart[p] + i]``
    (a dictionary's text), 2 the decimal text of ``ints[istart[p] + i]`` ("null" where not
    ``valid``). fits is False (and nothing written) when the text would pass 2 GB."""
    P = len(kind)
    total = 0
    for i in range(n):
        for p in range(P):
            k = kind[p]
            if k == 2:
                m = istart[p] + i
                total += _int_size(ints[m]) if valid[m] else 4
            else:
                j = start[p] + (0 if k == 0 else i if k == 1 else ints[istart[p] + i])
                total += offs[j + 1] - offs[j]
    if total >= 2**31:
        return False, np.zeros(1, np.int32), np.zeros(0, np.uint8)
    out_offs = np.empty(n + 1, np.int32)
    out = np.empty(total, np.uint8)
    out_offs[0] = 0
    q = 0
    for i in range(n):
        for p in range(P):
            k = kind[p]
            if k == 2:
                m = istart[p] + i
                if not valid[m]:
                    out[q:q + 4] = _NULL
                    q += 4
                    continue
                v = ints[m]
                size = _int_size(v)
                e = q + size
                if v < 0:
                    out[q] = 45  # -
                u = np.uint64(-(v + 1)) + np.uint64(1) if v < 0 else np.uint64(v)
                while True:
                    e -= 1
                    out[e] = 48 + np.uint8(u % np.uint64(10))
                    u //= np.uint64(10)
                    if u == 0:
                        break
                q += size
                continue
            j = start[p] + (0 if k == 0 else i if k == 1 else ints[istart[p] + i])
            d = shift[p]
            for b in range(offs[j] + d, offs[j + 1] + d):
                out[q] = data[b]
                q += 1
        out_offs[i + 1] = q
    return True, out_offs, out


_NULL = np.frombuffer(b"null", np.uint8).copy()
