"""Structured Streaming sources for vigil: stream rows and query operations in ONE micro-batch unit.

Both inputs are streaming file sources (``spark.readStream``) unioned into one DataFrame (an
operation file has a non-null ``_op``, a stream row a null one). Spark's offset log then fixes,
for every batch id, exactly which files of *both* directories belong to it, so a batch replayed
after a crash sees the same rows and the same operations.

Order inside a batch is made deterministic on the driver (:func:`split_batch`): files are ordered
by (modification time, path) — the order in which Spark's file source takes new files, ties
(files written within one millisecond) broken by path, never by listing order — and rows inside
a file by their position in the file; a batch applied again uses the order recorded in its
manifest. Operation lines are handed to the engine *before* the batch's rows, in (file, line)
order; the engine interleaves them at their exact ``at``. Across batches, rows that carry
``seq`` are put in seq order by :mod:`.reorder`.

How rows travel, cheaply:

* Parquet stream files travel whole: the stream source is Spark's ``binaryFile`` source (one
  row per file: ``_file`` = its path, ``_content`` = its bytes, 16 MB per million rows of two
  numbers) and :func:`split_batch` decodes each file with pyarrow, in file order. No per-row
  work happens in the JVM (converting a million decoded rows to Arrow there cost twice the JVM
  CPU time, ~1.3 s per million rows on this machine, competing with the engine for 2 cores), and
  the order of the rows inside a file is the file's own.
* Operation files travel whole the same way (``_file``, ``_op`` = the file's bytes) and are split
  into lines on the driver exactly as ``vigil replay`` reads them.
* JSON/CSV rows carry the path on every row (``input_file_name()``) and ``_row`` =
  ``monotonically_increasing_id()``, which is the position inside the file because each file is
  read whole by one task (see :mod:`.session`).

Malformed JSON/CSV rows (Spark's ``_corrupt_record``) become rows whose ``__error__`` column holds
a reason, which the engine reports as ``rejected`` events (the row still takes its place, and
its seq, in the order, as in ``vigil replay``).

Kafka (``--format kafka``) is a configuration path: options are passed through to Spark's Kafka
source; values are JSON objects, ordered by (topic, partition, offset).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from vigil.events import ERROR_COLUMN, parse_jsonl_lines

CORRUPT = "_corrupt_record"
HELPER_COLUMNS = ("_file", "_mtime", "_row", "_pos", "_op", "_line", "_content", CORRUPT)
BINARY_SCHEMA = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"

FORMATS = ("parquet", "json", "csv", "kafka")

KAFKA_HINT = (
    "The Kafka source is not on Spark's classpath: add the connector matching this PySpark, e.g. "
    "`spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:{version} ...` "
    "(or set spark.jars.packages / spark.jars) and run again."
)


class SourceError(RuntimeError):
    """A source that cannot be set up; ``str(err)`` says what to do."""


def kafka_hint() -> str:
    import pyspark

    return KAFKA_HINT.format(version=pyspark.__version__)


def _files(path: Path, fmt: str) -> list[Path]:
    suffixes = {"parquet": (".parquet",), "json": (".json", ".jsonl", ".ndjson"), "csv": (".csv",)}[fmt]
    return sorted(
        p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith((".", "_"))
    )


def infer_schema(spark, path: str | Path, fmt: str, options: dict[str, str] | None = None, sample_files: int = 8):
    """Schema of the stream from (at most ``sample_files``) files already present in ``path``
    (Parquet: their footers, read by pyarrow). JSON and CSV schemas get a ``_corrupt_record``
    column so that malformed rows are kept."""
    from pyspark.sql.types import StringType, StructField, StructType

    path = Path(path)
    files = _files(path, fmt) if path.is_dir() else []
    if not files:
        raise SourceError(
            f"no {fmt} files in {path} to infer the stream's schema from: add one, or pass "
            f"--schema 'price DOUBLE, shares BIGINT, symbol STRING, ...'"
        )
    names = [str(p) for p in files[:sample_files]]
    opts = dict(options or {})
    if fmt == "parquet":  # the footers, merged (files are decoded by pyarrow, see the module doc)
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(pa.unify_schemas([pq.read_schema(n) for n in names], promote_options="permissive"))
    if fmt == "json":
        schema = spark.read.options(**opts).json(names).schema
    else:
        schema = spark.read.options(**{"header": "true", "inferSchema": "true", **opts}).csv(names).schema
    if fmt in ("json", "csv") and CORRUPT not in schema.fieldNames():
        schema = StructType(list(schema.fields) + [StructField(CORRUPT, StringType(), True)])
    return schema


def parse_schema(ddl: str, fmt: str):
    from pyspark.sql.types import StringType, StructField, StructType, _parse_datatype_string

    schema = _parse_datatype_string(ddl)
    if not isinstance(schema, StructType):
        raise SourceError(f"--schema must be a list of columns, got {ddl!r}")
    if fmt in ("json", "csv") and CORRUPT not in schema.fieldNames():
        schema = StructType(list(schema.fields) + [StructField(CORRUPT, StringType(), True)])
    return schema


def stream_rows(
    spark,
    path: str | Path | None,
    fmt: str,
    schema=None,
    max_files: int | None = None,
    options: dict[str, str] | None = None,
    files: list[str] | None = None,
):
    """Streaming DataFrame of stream rows: whole Parquet files as ``_file``, ``_content``; JSON or
    CSV rows with ``_file`` (``_row`` is added per batch by :func:`with_row_index`); Kafka values
    as ``_file``, ``_pos`` and ``_line``. ``files``: a batch DataFrame of exactly those files."""
    from pyspark.sql import functions as F

    opts = dict(options or {})
    if fmt == "kafka":
        try:
            df = spark.readStream.format("kafka").options(**opts).load()
        except Exception as e:  # noqa: BLE001 - Spark raises several classes for a missing source
            if "kafka" in str(e).lower() and ("find data source" in str(e).lower() or "not found" in str(e).lower()):
                raise SourceError(kafka_hint()) from None
            raise
        return df.select(
            F.format_string("kafka:%s:%08d", F.col("topic"), F.col("partition")).alias("_file"),
            F.col("offset").alias("_pos"),
            F.col("value").cast("string").alias("_line"),
        )
    if fmt not in ("parquet", "json", "csv"):
        raise SourceError(f"unknown stream format {fmt!r}; expected one of {list(FORMATS)}")
    if fmt == "parquet":  # whole files, decoded on the driver (see the module doc)
        reader = (spark.read if files is not None else spark.readStream).format("binaryFile").schema(BINARY_SCHEMA)
        if max_files and files is None:
            reader = reader.option("maxFilesPerTrigger", int(max_files))
        df = reader.options(**opts).load(files if files is not None else str(path))
        return df.select(F.col("path").alias("_file"), F.col("modificationTime").alias("_mtime"),
                         F.col("content").alias("_content"))
    if schema is None:
        schema = infer_schema(spark, path, fmt, opts)
    reader = (spark.read if files is not None else spark.readStream).schema(schema)
    if max_files and files is None:
        reader = reader.option("maxFilesPerTrigger", int(max_files))
    if fmt == "csv":
        opts = {"header": "true", **opts}
    if fmt in ("json", "csv"):
        opts = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT, **opts}
    df = reader.options(**opts).format(fmt).load(files if files is not None else str(path))
    return df.withColumn("_file", F.input_file_name()).withColumn(
        "_mtime", F.col("_metadata.file_modification_time"))


def operations(spark, path: str | Path | None, max_files: int | None = None, files: list[str] | None = None):
    """Streaming DataFrame of operation files (JSON lines), whole: ``_file`` = path, ``_op`` = the
    file's bytes, split into lines on the driver as ``vigil replay`` reads them (``files``: a
    batch DataFrame of exactly those files instead)."""
    from pyspark.sql import functions as F

    reader = (spark.read if files is not None else spark.readStream).format("binaryFile").schema(BINARY_SCHEMA)
    if max_files and files is None:
        reader = reader.option("maxFilesPerTrigger", int(max_files))
    df = reader.load(files if files is not None else str(path))
    return df.select(F.col("path").alias("_file"), F.col("modificationTime").alias("_mtime"),
                     F.col("content").alias("_op"))


def combined(rows_df, ops_df):
    """One streaming DataFrame carrying both inputs (columns missing on a side are null)."""
    return rows_df.unionByName(ops_df, allowMissingColumns=True)


def _under(path: str, directory: str | Path) -> bool:
    u, d = urlparse(path), urlparse(str(directory))
    if u.scheme in ("", "file") and d.scheme in ("", "file"):
        return Path(unquote(u.path)).resolve().is_relative_to(Path(unquote(d.path)).resolve())
    return path.startswith(str(directory).rstrip("/") + "/")


def batch_of(spark, stream: str | Path, queries: str | Path, fmt: str, schema, files: list[str],
             options: dict[str, str] | None = None):
    """A micro-batch read again: the batch DataFrame of exactly ``files`` (stream files and
    operation files, as :func:`split_batch` names them) with the columns of :func:`combined`."""
    ops = [f for f in files if _under(f, queries)]
    rows = [f for f in files if f not in set(ops)]
    parts = []
    if rows:
        parts.append(stream_rows(spark, stream, fmt, schema, options=options, files=rows))
    if ops:
        parts.append(operations(spark, queries, files=ops))
    return parts[0] if len(parts) == 1 else combined(*parts)


def with_row_index(df):
    """Inside ``foreachBatch``: ``_row`` = the row's position inside its partition (= its file)
    for JSON/CSV rows; whole files (Parquet, operations) need none."""
    from pyspark.sql import functions as F

    if "_content" in df.columns or set(df.columns) <= {"_file", "_mtime", "_op"}:
        return df
    return df.withColumn("_row", F.monotonically_increasing_id())


# ----------------------------------------------------------------------------- driver side


class FileOrder:
    """The order of a batch's files: by (modification time, path) — the order in which Spark's
    file source takes new files, with ties (files written in the same millisecond) broken by
    path — or, for a batch applied again, the order recorded in its manifest (``recorded``)."""

    def __init__(self, tbl: pa.Table, recorded: list[str] | None = None) -> None:
        self.mtime: dict[str, int] = {}
        if "_mtime" in tbl.column_names and tbl.num_rows:
            f = tbl.column("_file").combine_chunks()
            m = tbl.column("_mtime")
            if not pa.types.is_integer(m.type):
                m = pc.cast(pc.cast(m, pa.timestamp("us")), pa.int64())
            m = m.combine_chunks()
            keep = pc.and_(f.is_valid(), m.is_valid())
            for name, t in zip(f.filter(keep).to_pylist(), m.filter(keep).to_pylist(), strict=True):
                self.mtime.setdefault(name, t)
        self.rank = {name: i for i, name in enumerate(recorded or [])}

    def key(self, name: str) -> tuple:
        if name in self.rank:
            return (0, self.rank[name], 0, "")
        return (1, 0, self.mtime.get(name, 0), name)

    def sort(self, names: list[str]) -> list[int]:
        """Indices of ``names`` in applied order."""
        return sorted(range(len(names)), key=lambda i: self.key(names[i]))


def _order(tbl: pa.Table, fo: FileOrder) -> np.ndarray:
    """Indices that put rows in (file order, position) order, the path being on every row. Rows
    of one file arrive as one run in position order, so ordering the runs is enough; anything
    else falls back to a full sort."""
    n = tbl.num_rows
    if n == 0:
        return np.zeros(0, np.int64)
    keys = []
    if "_pos" in tbl.column_names and tbl.column("_pos").null_count < n:
        keys.append("_pos")
    files = pc.dictionary_encode(tbl.column("_file").combine_chunks())
    codes = files.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = files.dictionary.to_pylist()
    row = tbl.column("_row").to_numpy() if "_row" in tbl.column_names else np.arange(n)
    pos = tbl.column("_pos").to_numpy(zero_copy_only=False) if keys else None
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], n]
    run_codes = codes[starts]
    within = pos if pos is not None else row
    monotone = bool(np.all(np.diff(within)[np.r_[codes[1:] == codes[:-1]]] > 0)) if n > 1 else True
    if len(set(run_codes.tolist())) != len(run_codes) or not monotone:
        rank = np.array(fo.sort(names), np.int64)
        file_rank = np.empty_like(rank)
        file_rank[rank] = np.arange(len(rank))
        return np.lexsort((within, file_rank[codes]))
    order_runs = sorted(range(len(starts)), key=lambda i: fo.key(names[run_codes[i]]))
    return np.concatenate([np.arange(starts[i], ends[i]) for i in order_runs])


def _split_kinds(tbl: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(operation files, stream rows): operation files are the rows with a non-null ``_op``.
    The union puts them in one block (zero-copy slices); otherwise they are filtered."""
    n = tbl.num_rows
    if "_op" not in tbl.column_names:
        return tbl.slice(0, 0), tbl
    valid = tbl.column("_op").is_valid()
    k = pc.sum(valid).as_py() or 0
    if k == 0:
        return tbl.slice(0, 0), tbl
    if k == n:
        return tbl, tbl.slice(0, 0)
    idx = np.flatnonzero(valid.to_numpy(zero_copy_only=False))
    a, b = int(idx[0]), int(idx[-1]) + 1
    if b - a == k:
        return tbl.slice(a, k), pa.concat_tables([tbl.slice(0, a), tbl.slice(b)])
    return tbl.filter(valid), tbl.filter(pc.invert(valid))


def _names(col, fo: FileOrder) -> list[str]:
    names = [x for x in pc.unique(col).to_pylist() if x is not None]
    return [names[i] for i in fo.sort(names)]


def split_batch(tbl: pa.Table, fmt: str = "parquet",
                order: list[str] | None = None) -> tuple[list[str], pa.Table, list[str]]:
    """Split a collected micro-batch into (operation lines, stream rows, files) in arrival order:
    files by (modification time, path) (``order``: the files in the order recorded for this
    batch, which wins), rows inside a file by position. ``files``: operation files, then stream
    files, in that order (what the manifest records).

    Stream rows keep only user columns (plus ``__error__`` for malformed rows)."""
    if tbl.num_rows == 0:
        return [], _user_columns(tbl.slice(0, 0), fmt), []
    fo = FileOrder(tbl, order)
    ops_t, rows_t = _split_kinds(tbl)
    ops: list[str] = []
    files: list[str] = []
    if ops_t.num_rows:  # whole files, in file order, split into lines as vigil replay does
        names = ops_t.column("_file").to_pylist()
        data = ops_t.column("_op")
        for i in fo.sort(names):
            ops.extend(ln for ln in data[i].as_py().decode("utf-8", "replace").splitlines() if ln.strip())
            files.append(names[i])
    if "_line" in rows_t.column_names:  # Kafka: values are JSON objects
        rows_t = rows_t.take(pa.array(_order(rows_t, fo)))
        files += _names(rows_t.column("_file"), fo)
        lines = ["" if x is None else x for x in rows_t.column("_line").to_pylist()]
        return ops, parse_jsonl_lines(lines), files
    if "_content" in rows_t.column_names:  # whole Parquet files
        rows_t, names = _decode_files(rows_t, fo)
        files += names
    elif rows_t.num_rows:
        rows_t = rows_t.take(pa.array(_order(rows_t, fo)))
        files += _names(rows_t.column("_file"), fo)
    return ops, _user_columns(rows_t, fmt), files


def _decode_files(tbl: pa.Table, fo: FileOrder | None = None) -> tuple[pa.Table, list[str]]:
    """(the rows of the Parquet files in ``tbl``'s ``_content``, in file order; the paths). A file
    that cannot be read, or whose columns clash with the batch's earlier files (a column of
    another type), becomes one row whose ``__error__`` says why: rejected by the engine, the run
    goes on."""
    names = tbl.column("_file").to_pylist()
    content = tbl.column("_content")
    order = (fo or FileOrder(tbl)).sort(names)
    rows = None
    for i in order:
        try:
            part = pq.read_table(pa.BufferReader(content[i].as_buffer()))
        except (pa.ArrowInvalid, OSError) as e:
            part = pa.table({ERROR_COLUMN: [f"{names[i]} is not a readable Parquet file: {str(e)[:120]}"]})
        if rows is not None:
            try:
                part = pa.concat_tables([rows, part], promote_options="permissive")
            except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
                bad = pa.table({ERROR_COLUMN: [f"{names[i]}: columns clash with earlier files: {str(e)[:120]}"]})
                part = pa.concat_tables([rows, bad], promote_options="permissive")
        rows = part
    return (pa.table({}) if rows is None else rows), [names[i] for i in order]


def _user_columns(tbl: pa.Table, fmt: str = "parquet") -> pa.Table:
    keep = [c for c in tbl.column_names if c not in HELPER_COLUMNS]
    out = tbl.select(keep)
    if CORRUPT in tbl.column_names:
        bad = tbl.column(CORRUPT)
        if bad.null_count < len(bad):
            reasons = [None if x is None else _corrupt_reason(x, fmt) for x in bad.to_pylist()]
            out = out.append_column(ERROR_COLUMN, pa.array(reasons, pa.string()))
    return out


def _corrupt_reason(raw: str, fmt: str) -> str:
    if fmt == "csv":
        return f"malformed CSV row (wrong number of fields or a value of the wrong type): {raw[:80]!r}"
    try:
        obj = json.loads(raw)
    except ValueError as e:
        return f"malformed JSON: {str(e)[:80]}: {raw[:60]!r}"
    if isinstance(obj, dict):
        return f"row does not match the stream's schema (a value of the wrong type): {raw[:80]!r}"
    return f"malformed row: {raw[:80]!r}"


def kafka_options(pairs: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in pairs or []:
        if "=" not in p:
            raise SourceError(f"--option takes KEY=VALUE, got {p!r}")
        k, v = p.split("=", 1)
        out[k.strip()] = v
    return out
