"""The event-log contract of docs/contract.md: read a stream (Parquet, CSV, JSONL), read query
operations (JSONL), write output events (JSONL or Parquet by suffix), and turn stream columns into
the numeric arrays the operators take, with a reason for every value that cannot be used.

Nothing here raises on bad *data*: a malformed JSON line becomes a row whose ``__error__`` column
holds the reason, a bad value becomes a row-level reason, and the engine reports both as
``rejected`` events. Only unreadable *files* (no such file, unknown suffix, not Parquet) raise.
An empty stream file (0 bytes, or only blank lines; a CSV with only its header) is an empty stream.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .outschema import OUTPUT_SCHEMA, conform_outputs  # noqa: F401 (part of this module's API)

ERROR_COLUMN = "__error__"

# ----------------------------------------------------------------------------- reading streams


def _rows_to_table(rows: list[dict | None], errors: list[str | None]) -> pa.Table:
    """Build a table from parsed JSON rows; a column whose values do not share one type keeps
    strings as they are and other values as JSON text (numbers parse back, strings do not)."""
    names: dict[str, None] = {}
    for r in rows:
        if r:
            names.update(dict.fromkeys(r))
    cols: dict[str, pa.Array] = {}
    for name in names:
        vals = [None if r is None else r.get(name) for r in rows]
        try:
            arr = pa.array(vals)
            if pa.types.is_struct(arr.type) or pa.types.is_list(arr.type):
                raise pa.ArrowInvalid("nested")
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arr = pa.array([v if v is None or isinstance(v, str) else json.dumps(v) for v in vals], pa.string())
        cols[name] = arr
    cols[ERROR_COLUMN] = pa.array(errors, pa.string())
    return pa.table(cols)


def parse_jsonl_lines(lines: list[str]) -> pa.Table:
    rows: list[dict | None] = []
    errors: list[str | None] = []
    for i, line in enumerate(lines):
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError(f"a stream row must be a JSON object, got {type(obj).__name__}")
            rows.append(obj)
            errors.append(None)
        except ValueError as e:
            rows.append(None)
            errors.append(f"malformed JSON on line {i + 1}: {str(e)[:120]}")
    return _rows_to_table(rows, errors)


def read_stream(path: str | Path) -> pa.Table:
    """Read a stream file; the returned table may carry an ``__error__`` column (bad rows)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path)
    if suffix == ".csv":
        import pyarrow.csv as pcsv

        if _blank(path):  # no header, no rows: an empty stream
            return pa.table({})
        # only an empty field is null (as Spark's CSV reader, `vigil run`): NaN stays a number
        # (rejected as NaN, as in every other format), "NA" stays text
        return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(null_values=[""], strings_can_be_null=True))
    if suffix in (".jsonl", ".json", ".ndjson"):
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
        try:
            import pyarrow.json as pjson

            t = pjson.read_json(path)
            if t.num_rows == len(lines) and not any(
                pa.types.is_struct(f.type) or pa.types.is_list(f.type) for f in t.schema
            ):
                return t
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        return parse_jsonl_lines(lines)
    raise ValueError(f"unknown stream format {suffix!r}: use .parquet, .csv or .jsonl")


def _blank(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(1 << 16)
        return not head.strip() and (len(head) < 1 << 16 or not f.read().strip())


def read_operations(path: str | Path) -> list[str]:
    """Query operations, one JSON object per line, returned as raw lines (the engine parses them,
    so that a malformed line becomes a ``rejected`` event instead of an exception)."""
    return read_operation_lines(path)[0]


def read_operation_lines(path: str | Path) -> tuple[list[str], list[int]]:
    """(operations, their 1-based line numbers in the file): blank lines are skipped, so the
    numbers let a rejection name the line (``Engine.add_operations(ops, lines=...)``)."""
    ops: list[str] = []
    nums: list[int] = []
    for i, ln in enumerate(Path(path).read_text().splitlines(), 1):
        if ln.strip():
            ops.append(ln)
            nums.append(i)
    return ops, nums


# ----------------------------------------------------------------------------- writing outputs


def empty_outputs() -> pa.Table:
    return OUTPUT_SCHEMA.empty_table()


def output_rows(table: pa.Table) -> list[dict[str, Any]]:
    """Output events as the JSON objects of the contract (irrelevant fields dropped; a substream
    answer's ``keys`` become its ``value``)."""
    out = []
    for row in table.to_pylist():
        ev = row["event"]
        d: dict[str, Any] = {"event": ev, "id": row["id"], "at": row["at"]}
        if row.get("asked_at") is not None:  # a late lookup's answer
            d["asked_at"] = row["asked_at"]
        if ev in ("answer", "update", "alert", "clear"):  # update: a notify quantile query's pushed value
            v = row["value"]
            null = v is None or (isinstance(v, float) and math.isnan(v))
            if row["keys"] is not None and null:  # a substream filter's keys
                d["value"] = row["keys"]
            else:
                if row["keys"] is not None:  # a per-key (group_by) result: its key, then its value
                    d["keys"] = row["keys"]
                d["value"] = None if null else _num(v)
        elif ev == "join":
            d["r"], d["s"] = row["r"], row["s"]
            for side in ("left", "right"):  # a query with select: the values it selected
                if row.get(side) is not None:
                    d[side] = json.loads(row[side])
        elif ev in ("cluster", "cluster_update"):  # notify "cluster" quantile queries: the number in r
            d["cluster"] = row["r"]
            if ev == "cluster_update":
                v = row["value"]
                d["value"] = None if v is None or (isinstance(v, float) and math.isnan(v)) else _num(v)
        elif ev in ("rejected", "late"):
            d["reason"] = row["reason"]
        out.append(d)
    return out



def _num(v: float) -> int | float:
    return int(v) if float(v).is_integer() and abs(v) < 2**53 else v


def jsonl_lines(table: pa.Table) -> list[str]:
    """The JSONL lines of an output table (:func:`vigil.jsonl_out.jsonl_lines`)."""
    from .jsonl_out import jsonl_lines as lines

    return lines(table)


def write_outputs(table: pa.Table, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        pq.write_table(conform_outputs(table), path)
    elif suffix in (".jsonl", ".json", ".ndjson"):
        from .jsonl_out import jsonl_bytes

        with path.open("wb") as f:
            f.write(jsonl_bytes(table))
    else:
        raise ValueError(f"unknown output format {suffix!r}: use .jsonl or .parquet")


def read_outputs(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        return output_rows(pq.read_table(path))
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


# ----------------------------------------------------------------------------- column extraction

#: The numbers vigil accepts in a numeric column (values, weights, time columns): finite, with
#: |v| <= 2^53. Every operator works in float64, which holds every integer exactly only up to
#: 2^53: 2^53 + 1 would silently become 2^53, so a larger magnitude is rejected row by row (the
#: same bound for integers and floats, whatever type a reader inferred for the column: a JSON or
#: CSV reader reads 2^60 + 1 as an integer or as a double depending on the column's other values).
MAX_ABS = 2**53
SEQ_MAX = 2**63 - 1  # seq is read as an exact integer (int64)


def _bad(reasons: dict[int, str], idx: np.ndarray, msg: str) -> None:
    for i in idx.tolist():
        reasons.setdefault(i, msg)


def _too_big(name: str, v) -> str:
    return (f"column {name!r} holds {v}: beyond |v| <= 2^53 = {MAX_ABS}, the range vigil accepts "
            "(it computes in float64, exact for integers only up to 2^53)")


def _as_float(col: pa.Array, t: pa.DataType) -> np.ndarray:
    """float64 values of a numeric column (nulls as NaN), exact for every |v| <= 2^53."""
    if pa.types.is_integer(t):
        ints = pc.fill_null(col, 0).to_numpy(zero_copy_only=False)
        big = (ints > MAX_ABS) | ((ints < -MAX_ABS) if pa.types.is_signed_integer(t) else False)
        vals = ints.astype(np.float64)
        vals[big] = np.inf  # beyond 2^53: flagged by the range check below, with its exact value
        return vals
    return pc.cast(col, pa.float64(), safe=False).to_numpy(zero_copy_only=False).astype(np.float64, copy=True)


def numeric_column(table: pa.Table, name: str) -> tuple[np.ndarray, dict[int, str]]:
    """float64 values of a column and {row: reason} for rows whose value is null, NaN, infinite,
    not a number, or beyond |v| <= 2^53 (:data:`MAX_ABS`). A missing column makes every row bad.
    Timestamps and dates are seconds since the epoch, durations seconds."""
    n = table.num_rows
    reasons: dict[int, str] = {}
    if name not in table.column_names:
        return np.full(n, np.nan), {i: f"missing column {name!r}" for i in range(n)}
    col = table.column(name).combine_chunks() if n else table.column(name)
    if isinstance(col, pa.ChunkedArray):
        col = pa.concat_arrays(col.chunks) if col.num_chunks else pa.array([], col.type)
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.dictionary_decode()
        t = col.type
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        vals = _as_float(col, t)
    elif pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_duration(t):
        if pa.types.is_date32(t):
            ticks, per_s = pc.cast(col, pa.int32()).to_numpy(zero_copy_only=False), 1 / 86400
        elif pa.types.is_date64(t):
            ticks, per_s = pc.cast(col, pa.int64()).to_numpy(zero_copy_only=False), 1000
        else:
            per_s = {"s": 1, "ms": 1000, "us": 10**6, "ns": 10**9}[t.unit]
            ticks = pc.cast(col, pa.int64()).to_numpy(zero_copy_only=False)
        vals = np.asarray(ticks, np.float64) / per_s
    elif pa.types.is_boolean(t) or pa.types.is_temporal(t) or pa.types.is_nested(t) or pa.types.is_binary(t):
        return np.full(n, np.nan), {i: f"column {name!r} has type {t}, not a number" for i in range(n)}
    else:  # strings (CSV text or mixed JSON): each value must parse as a JSON number
        return _parse_numbers(col, name)
    nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)
    if nulls.any():
        _bad(reasons, np.flatnonzero(nulls), f"column {name!r} is null")
        vals[nulls] = np.nan
    with np.errstate(invalid="ignore"):
        out = ~(np.abs(vals) <= MAX_ABS) & ~nulls
    if out.any():
        idx = np.flatnonzero(out)
        for i, v in zip(idx.tolist(), col.take(pa.array(idx)).to_pylist(), strict=True):
            if isinstance(v, float) and not math.isfinite(v):
                reasons.setdefault(i, f"column {name!r} is NaN or infinite")
            else:  # the value as written (an int stays exact in the reason)
                reasons.setdefault(i, _too_big(name, v))
        vals[idx] = np.nan
    return vals, reasons


def _parse_numbers(col: pa.Array, name: str) -> tuple[np.ndarray, dict[int, str]]:
    n = len(col)
    vals = np.full(n, np.nan)
    reasons: dict[int, str] = {}
    for i, v in enumerate(col.to_pylist()):
        if v is None:
            reasons[i] = f"column {name!r} is null"
            continue
        try:
            x = json.loads(v) if isinstance(v, str) else v
        except (ValueError, RecursionError):
            x = v
        if isinstance(x, bool) or not isinstance(x, int | float):
            reasons[i] = f"column {name!r} is not a number: {str(v)[:40]!r}"
        elif isinstance(x, float) and not math.isfinite(x):
            reasons[i] = f"column {name!r} is NaN or infinite"
        elif abs(x) > MAX_ABS:
            reasons[i] = _too_big(name, x)
        else:
            vals[i] = float(x)
    return vals, reasons


def weight_column(table: pa.Table, name: str) -> tuple[np.ndarray, dict[int, str]]:
    """int64 weights; a weight must be a positive integer <= 2^53 (an integral float such as
    2.0 is accepted)."""
    vals, reasons = numeric_column(table, name)
    ok = np.isfinite(vals)
    bad = ok & ((vals < 1) | (vals != np.floor(vals)))
    if bad.any():
        _bad(reasons, np.flatnonzero(bad), f"weight column {name!r} is not a positive integer")
    w = np.where(ok & ~bad, vals, 1).astype(np.int64)
    return w, reasons


def key_column(table: pa.Table, name: str) -> tuple[np.ndarray, dict[int, str]]:
    """Keys as an object array of str (numbers as their text); null or missing -> bad row."""
    n = table.num_rows
    if name not in table.column_names:
        return np.full(n, None, object), {i: f"missing column {name!r}" for i in range(n)}
    col = table.column(name)
    if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
        col = pc.cast(col, pa.string())
    arr = np.empty(n, object)  # str or None, without a Python object per row on the way
    arr[:] = col.to_numpy(zero_copy_only=False) if n else []
    nulls = np.flatnonzero(np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)) if n else []
    reasons = {int(i): f"key column {name!r} is null" for i in nulls}
    return arr, reasons


def pd_isnull(arr: np.ndarray) -> np.ndarray:
    return np.fromiter((x is None for x in arr), bool, len(arr))


def key_equals(table: pa.Table, name: str, value: Any) -> np.ndarray:
    """Rows whose key column equals a spec's scalar (compared as text; null never matches)."""
    n = table.num_rows
    if name not in table.column_names:
        return np.zeros(n, bool)
    col = table.column(name)
    if not pa.types.is_string(col.type) and not pa.types.is_large_string(col.type):
        try:
            col = pc.cast(col, pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return np.zeros(n, bool)
    text = value if isinstance(value, str) else json.dumps(value)
    eq = pc.equal(col, pa.scalar(text))
    return np.asarray(pc.fill_null(eq, False).to_numpy(zero_copy_only=False), bool)


def seq_column(table: pa.Table) -> tuple[np.ndarray, dict[int, str]]:
    """The optional ``seq`` column as int64 (-1 where unusable) with reasons. A seq is a positive
    integer read exactly: up to 2^63 - 1 from an integer column, up to 2^53 from a float or
    text column (an integral float such as 5.0 is accepted)."""
    n = table.num_rows
    col = table.column("seq") if "seq" in table.column_names else None
    if col is not None and pa.types.is_integer(col.type):
        col = col.combine_chunks() if n else col
        if isinstance(col, pa.ChunkedArray):
            col = pa.concat_arrays(col.chunks) if col.num_chunks else pa.array([], col.type)
        raw = pc.fill_null(col, 0).to_numpy(zero_copy_only=False)
        nulls = np.asarray(col.is_null().to_numpy(zero_copy_only=False), bool)
        reasons = {int(i): "column 'seq' is null" for i in np.flatnonzero(nulls)}
        big = raw > SEQ_MAX if raw.dtype == np.uint64 else np.zeros(n, bool)
        seq = np.where(big, -1, raw).astype(np.int64)
        bad = ~nulls & ((seq < 1) | big)
        _bad(reasons, np.flatnonzero(bad), "seq is not a positive integer (1 <= seq <= 2^63 - 1)")
        seq[nulls | bad] = -1
        return seq, reasons
    vals, reasons = numeric_column(table, "seq")
    ok = np.isfinite(vals)
    bad = ok & ((vals < 1) | (vals != np.floor(vals)))
    if bad.any():
        _bad(reasons, np.flatnonzero(bad), "seq is not a positive integer")
    seq = np.where(ok & ~bad, vals, -1).astype(np.int64)
    return seq, reasons
