"""Safe (pickle-free) serialization of operator and engine state.

``pack(obj) -> bytes`` accepts nested dicts/lists of JSON scalars (str, int, float incl. inf/nan,
bool, None) and numeric numpy arrays; it writes a zip holding ``meta.json`` and one ``.npy`` per
array. ``unpack(bytes)`` reads it back with ``allow_pickle=False``: loading a snapshot can never
execute code.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import numpy as np
import pyarrow as pa

_ND = "__ndarray__"


def pack(obj: Any) -> bytes:
    arrays: list[np.ndarray] = []

    def enc(x: Any) -> Any:
        if isinstance(x, np.ndarray):
            if x.dtype == object:
                raise TypeError("object arrays cannot be snapshotted; use lists of str")
            arrays.append(np.ascontiguousarray(x))
            return {_ND: len(arrays) - 1}
        if isinstance(x, dict):
            if not all(isinstance(k, str) for k in x):
                raise TypeError(f"snapshot dict keys must be str, got {list(x)[:3]}")
            return {k: enc(v) for k, v in x.items()}
        if isinstance(x, list | tuple):
            return [enc(v) for v in x]
        if isinstance(x, np.integer):
            return int(x)
        if isinstance(x, np.floating):
            return float(x)
        if x is None or isinstance(x, str | int | float | bool):
            return x
        raise TypeError(f"cannot snapshot a {type(x).__name__}")

    meta = enc(obj)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("meta.json", json.dumps(meta))
        for i, a in enumerate(arrays):
            b = io.BytesIO()
            np.save(b, a, allow_pickle=False)
            z.writestr(f"{i}.npy", b.getvalue())
    return buf.getvalue()


def unpack(data: bytes) -> Any:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        meta = json.loads(z.read("meta.json"))

        def dec(x: Any) -> Any:
            if isinstance(x, dict):
                if set(x) == {_ND}:
                    return np.load(io.BytesIO(z.read(f"{x[_ND]}.npy")), allow_pickle=False)
                return {k: dec(v) for k, v in x.items()}
            if isinstance(x, list):
                return [dec(v) for v in x]
            return x

        return dec(meta)


def table_bytes(t: pa.Table) -> bytes:
    """An Arrow table as IPC stream bytes (pickle-free; inverse :func:`bytes_table`)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def bytes_table(b: bytes) -> pa.Table:
    """The Arrow table of IPC stream bytes written by :func:`table_bytes`."""
    with pa.ipc.open_stream(pa.py_buffer(b)) as r:
        return r.read_all()
