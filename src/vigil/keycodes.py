"""Key codes of a batch's rows without a Python step per row.

A key column of the batch is dictionary-encoded once (cached in the batch's :class:`vigil.group.Cols`,
shared by every group that reads the column); a group's :class:`vigil.group.Codes` then encodes
only the distinct texts of the rows it is fed, in the order of their first row, so the codes it
gives out are the ones ``Codes.encode`` over the rows' texts would give (new texts get the next
codes in order of first appearance), at one dictionary lookup per distinct key instead of one per
row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_SMALL = 32  # below this many rows the per-row encoding is as fast


def batch_dict(cols, col: str) -> tuple[np.ndarray, list]:
    """(index + 1 of each row's text in the texts, 0: null or missing column; [None, texts...]),
    texts as :func:`vigil.events.key_column` reads them (numbers as their text)."""
    k = (col, "key-dict")
    got = cols.cache.get(k)
    if got is None:
        t = cols.table
        n = t.num_rows
        if col not in t.column_names or not n:
            got = (np.zeros(n, np.int64), [None])
        else:
            c = t.column(col)
            if not pa.types.is_string(c.type) and not pa.types.is_large_string(c.type):
                c = pc.cast(c, pa.string())
            d = c.combine_chunks().dictionary_encode()
            idx = np.asarray(pc.fill_null(d.indices, -1).to_numpy(zero_copy_only=False), np.int64) + 1
            got = (idx, [None, *d.dictionary.to_pylist()])
        cols.cache[k] = got
    return got


def encode_rows(codes, cols, col: str, rows: np.ndarray) -> np.ndarray:
    """``codes.encode`` of column ``col``'s key texts at ``rows`` (same codes, same new entries)."""
    if len(rows) < _SMALL:
        return codes.encode(cols.get(col, "key")[0][rows])
    idx, texts = batch_dict(cols, col)
    i = idx[rows]
    if not len(i):
        return np.empty(0, np.int64)
    u, first = np.unique(i, return_index=True)
    present = u[np.argsort(first, kind="stable")]  # distinct texts in the order of their first row
    enc = codes.encode(np.array([texts[j] for j in present.tolist()], object))
    m = np.empty(len(texts), np.int64)
    m[present] = enc
    return m[i]
