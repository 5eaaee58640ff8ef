"""Structured Streaming sources for vigil: stream rows and query operations in ONE micro-batch unit.

Both inputs are streaming file sources (``spark.readStream``) unioned into one DataFrame (an
operation line has a non-null ``_op``, a stream row a null one). Spark's offset log then fixes,
for every batch id, exactly which files of *both* directories belong to it, so a batch replayed
after a crash sees the same rows and the same operations.

Order inside a batch is made deterministic on the driver (:func:`split_batch`): files are ordered
by path (Spark picks the files of a batch by modification time, then we order them by name) and
rows inside a file by their position in the file; operation lines are handed to the engine
*before* the batch's rows, in (file, line) order; the engine interleaves them at their exact ``at``.

How a row's (file, position) travels, cheaply:

* Parquet stream rows carry ``_row`` = Spark's hidden ``_metadata.row_index`` (the row's position
  in its file, exact whatever the partitioning) and ``_file`` = ``_metadata.file_path`` **on the
  first row of each file only** (null elsewhere: a per-row path string would be ~60 bytes a row
  through ``toArrow()``, 4x the size of a row of two numbers). Rows of one file arrive as one run
  0, 1, 2, ... (the session reads each file whole in one task, see :mod:`.session`);
  :func:`split_batch` checks exactly that and orders the runs by name without copying (slices).
  If the check fails (a file split over several tasks, say by other session settings), it raises
  :class:`NeedsFileNames` and the caller collects the batch again with the path on every row
  (:func:`with_row_index` ``full=True``), which orders correctly in every case.
* JSON/CSV rows and operation lines carry the path on every row (``input_file_name()``) and
  ``_row`` = ``monotonically_increasing_id()``, which is the position inside the file because each
  file is read whole by one task.

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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vigil.events import ERROR_COLUMN, parse_jsonl_lines

CORRUPT = "_corrupt_record"
HELPER_COLUMNS = ("_kind", "_file", "_row", "_pos", "_op", "_line", CORRUPT)

FORMATS = ("parquet", "json", "csv", "kafka")

KAFKA_HINT = (
    "The Kafka source is not on Spark's classpath: add the connector matching this PySpark, e.g. "
    "`spark-submit --packages org.apache.spark:spark-sql-kafka-0-10_2.13:{version} ...` "
    "(or set spark.jars.packages / spark.jars) and run again."
)


class SourceError(RuntimeError):
    """A source that cannot be set up; ``str(err)`` says what to do."""


class NeedsFileNames(ValueError):
    """The batch's rows are not whole-file runs in position order: collect it again with
    ``with_row_index(df, full=True)`` (the file path on every row)."""


def kafka_hint() -> str:
    import pyspark

    return KAFKA_HINT.format(version=pyspark.__version__)


def _files(path: Path, fmt: str) -> list[Path]:
    suffixes = {"parquet": (".parquet",), "json": (".json", ".jsonl", ".ndjson"), "csv": (".csv",)}[fmt]
    return sorted(
        p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith((".", "_"))
    )


def infer_schema(spark, path: str | Path, fmt: str, options: dict[str, str] | None = None, sample_files: int = 8):
    """Schema of the stream from (at most ``sample_files``) files already present in ``path``.
    JSON and CSV schemas get a ``_corrupt_record`` column so that malformed rows are kept."""
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
    if fmt == "parquet":
        schema = spark.read.options(**opts).option("mergeSchema", "true").parquet(*names).schema
    elif fmt == "json":
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
):
    """Streaming DataFrame of stream rows with ``_file`` and ``_row`` (Parquet), ``_file`` (JSON,
    CSV; ``_row`` is added per batch by :func:`with_row_index`), or ``_file``, ``_pos`` and
    ``_line`` (Kafka)."""
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
    if schema is None:
        schema = infer_schema(spark, path, fmt, opts)
    reader = spark.readStream.schema(schema)
    if max_files:
        reader = reader.option("maxFilesPerTrigger", int(max_files))
    if fmt == "csv":
        opts = {"header": "true", **opts}
    if fmt in ("json", "csv"):
        opts = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT, **opts}
    df = reader.options(**opts).format(fmt).load(str(path))
    if fmt == "parquet":
        # the position in the file; the path on the file's first row only (see the module doc)
        idx = F.col("_metadata.row_index")
        return df.select("*", idx.alias("_row"), F.when(idx == 0, F.col("_metadata.file_path")).alias("_file"))
    return df.withColumn("_file", F.input_file_name())


def operations(spark, path: str | Path, max_files: int | None = None):
    """Streaming DataFrame of raw operation lines (JSONL) ``_op`` with ``_file``."""
    from pyspark.sql import functions as F

    reader = spark.readStream
    if max_files:
        reader = reader.option("maxFilesPerTrigger", int(max_files))
    df = reader.text(str(path))
    return df.select(
        F.col("value").alias("_op"), F.input_file_name().alias("_file"), F.lit(None).cast("long").alias("_row")
    )


def combined(rows_df, ops_df):
    """One streaming DataFrame carrying both inputs (columns missing on a side are null)."""
    return rows_df.unionByName(ops_df, allowMissingColumns=True)


def with_row_index(df, full: bool = False):
    """Inside ``foreachBatch``: complete ``_row`` with the row's position inside its partition
    (= its file) where the source gave none; ``full``: the file path on every row."""
    from pyspark.sql import functions as F

    row = F.monotonically_increasing_id()
    if "_row" in df.columns:  # coalesce evaluates the id only where _row is null (whole partitions)
        row = F.coalesce(F.col("_row"), row)
    df = df.withColumn("_row", row)
    if full and "_pos" not in df.columns:
        df = df.withColumn("_file", F.input_file_name())
    return df


# ----------------------------------------------------------------------------- driver side


def _order(tbl: pa.Table) -> np.ndarray:
    """Indices that put rows in (file, position) order, the path being on every row. Rows of one
    file arrive as one run in position order, so ordering the runs is enough; anything else falls
    back to a full sort."""
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
        rank = np.argsort(np.array(names, dtype=object))
        file_rank = np.empty_like(rank)
        file_rank[rank] = np.arange(len(rank))
        return np.lexsort((within, file_rank[codes]))
    order_runs = sorted(range(len(starts)), key=lambda i: names[run_codes[i]])
    return np.concatenate([np.arange(starts[i], ends[i]) for i in order_runs])


def _order_file_runs(tbl: pa.Table) -> tuple[pa.Table, list[str]]:
    """(rows in (file, position) order, their files) when ``_row`` is the position in the file and
    ``_file`` the path on each file's first row only (Parquet rows, see the module doc).

    Accepted only if the rows are runs ``0, 1, ..., len-1`` whose first row, and only it, carries a
    path, all paths distinct: then every run is a whole file in order, and ordering the runs by
    path (zero-copy slices) gives the arrival order. Otherwise :class:`NeedsFileNames`."""
    n = tbl.num_rows
    row = tbl.column("_row")
    if row.null_count:
        raise NeedsFileNames("rows without a position")
    row = row.to_numpy()
    first = row == 0
    starts = np.flatnonzero(first)
    if not len(starts) or starts[0] != 0:
        raise NeedsFileNames("a batch does not start with the first row of a file")
    run = np.cumsum(first) - 1
    if not np.array_equal(row, np.arange(n) - starts[run]):
        raise NeedsFileNames("rows of a file are not one run in position order")
    fcol = tbl.column("_file")
    if fcol.null_count != n - len(starts):
        raise NeedsFileNames("file paths are not on the first rows exactly")
    names = fcol.take(pa.array(starts)).to_pylist()
    if None in names or len(set(names)) != len(names):
        raise NeedsFileNames("a file appears in several runs")
    order = sorted(range(len(starts)), key=names.__getitem__)
    if order != list(range(len(starts))):
        ends = np.r_[starts[1:], n]
        tbl = pa.concat_tables([tbl.slice(int(starts[i]), int(ends[i] - starts[i])) for i in order])
    return tbl, sorted(names)


def _split_kinds(tbl: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(operation lines, stream rows): operation lines are the rows with a non-null ``_op``.
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


def _names(col) -> list[str]:
    return [x for x in pc.unique(col).to_pylist() if x is not None]


def split_batch(tbl: pa.Table, fmt: str = "parquet") -> tuple[list[str], pa.Table, list[str]]:
    """Split a collected micro-batch into (operation lines, stream rows, files) in arrival order.

    Stream rows keep only user columns (plus ``__error__`` for malformed rows); no row data is
    copied when the batch arrives as whole-file runs (the usual case), except to reorder runs.
    Raises :class:`NeedsFileNames` when Parquet rows carry their path on first rows only and do
    not form whole-file runs (collect again with ``with_row_index(df, full=True)``)."""
    if tbl.num_rows == 0:
        return [], _user_columns(tbl.slice(0, 0), fmt), []
    ops_t, rows_t = _split_kinds(tbl)
    ops: list[str] = []
    files: set[str] = set()
    if ops_t.num_rows:
        ops_t = ops_t.take(pa.array(_order(ops_t)))
        ops = [x for x in ops_t.column("_op").to_pylist() if x is not None and x.strip()]
        files.update(_names(ops_t.column("_file")))
    if "_line" in rows_t.column_names:  # Kafka: values are JSON objects
        rows_t = rows_t.take(pa.array(_order(rows_t)))
        files.update(_names(rows_t.column("_file")))
        lines = ["" if x is None else x for x in rows_t.column("_line").to_pylist()]
        return ops, parse_jsonl_lines(lines), sorted(files)
    if rows_t.num_rows:
        if rows_t.column("_file").null_count:
            rows_t, names = _order_file_runs(rows_t)
            files.update(names)
        else:
            rows_t = rows_t.take(pa.array(_order(rows_t)))
            files.update(_names(rows_t.column("_file")))
    return ops, _user_columns(rows_t, fmt), sorted(files)


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
