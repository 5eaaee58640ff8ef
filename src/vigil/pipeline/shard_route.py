"""Sharded mode's row path on the executors: rows never pass through the driver (:mod:`.sharded`).

A micro-batch's stream rows stay in Spark. Three Spark jobs move them:

1. **count** (:func:`meta_fn`, ``mapInArrow``): per stream file, its rows and, per time column of
   the substream filters in use, its largest finite time. O(files) to the driver, which orders the
   files as in driver mode (modification time, path; the manifest's order for a batch applied
   again) and gives each file its first ``seq`` and the running time maximum before it.
2. **route** (:func:`route_fn`, ``mapInArrow``): each file's rows get their global ``seq`` (the
   file's first seq + the row's position in the file) and are cut per shard by the routing rules
   (:func:`route_part`: the same rules as the driver's routing of collected rows), with the
   ownership masks and the global substream clock at the positions of the batch's operations;
   each part is written to the shard's directory on the checkpoint's storage (:func:`parts_dir`)
   and the driver receives one small record per part (shard, first seq).
3. **shard tasks** (:class:`.pinned.PinnedJobs`): one task per shard, kept on the
   executor that holds the shard's live engine (a cached one-element partition per shard and
   Spark's delay scheduling), reads its parts and :func:`shard_run` applies them on that engine
   (:mod:`.shard_store`).

The driver sends each task the routing plan (O(distinct routing signatures), not O(queries)) and
the operations, and receives the outputs. A batch whose rows carry a ``seq`` column stays in Spark
when it continues the stream exactly (seqs P+1..P+n, in any order); any other (the reorder
buffer's work, on the driver) or one that comes from Kafka is collected as before; its rows are
cut by the same :func:`route_part`.
"""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vigil.events import ERROR_COLUMN, numeric_column, seq_column
from vigil.state import bytes_table, pack, table_bytes, unpack

from .shard_task import _is, _shard_of, _text, join_destinations, shard_task

KEYED, SPREAD = "keyed", "spread"


def plan_of(st: dict, ids: list[str], shards: int, before: int, marks: list[int]) -> dict[str, Any]:
    """What a routing task needs from the driver's routing table: the rules of the queries in use
    (``ids``), as sets of signatures. ``marks``: positions of the batch's operations (the
    substream clock is taken there); ``before``: the position before the batch."""
    return {
        "S": shards,
        "spread": sorted({st["home"][i] for i in ids if st["kind"].get(i) == SPREAD}),
        "keysigs": sorted({tuple(c for c, _ in st["keysig"][i]) for i in ids if st["kind"].get(i) == KEYED}),
        "place": [list(p) for p in st["place"]],
        "jsigs": [list(s) for s in st["jsigs"]],
        "subcols": sorted({st["sub"][i][0] for i in ids if i in st["sub"]}),
        "tcols": sorted({st["sub"][i][1] for i in ids if i in st["sub"]}),
        "before": int(before),
        "carry": {t: float(st["clock"].get(t, -math.inf)) for t in {st["sub"][i][1] for i in ids if i in st["sub"]}},
        "marks": np.asarray(sorted(set(marks)), np.int64),
        "end": None,  # the batch's last position (set by the driver before routing)
    }


def route_masks(rt: dict, rows: pa.Table) -> tuple[list[np.ndarray], list[dict[str, np.ndarray]]]:
    """Per shard: which rows (with their ``seq``) it receives, and the ownership masks over those
    rows (see :class:`vigil.partial.Partial`)."""
    n = rows.num_rows
    S = rt["S"]
    masks = [np.zeros(n, bool) for _ in range(S)]
    seqs = np.asarray(rows.column("seq").to_numpy(zero_copy_only=False), np.int64)
    own: list[dict[str, np.ndarray]] = [{} for _ in range(S)]
    memo: dict[str, np.ndarray] = {}

    def dest_of(col: str) -> np.ndarray:  # shard of hash(text of column) per row, once per column
        if col not in memo:
            memo[col] = _shard_of(_text(rows, col), S)
        return memo[col]

    for home in rt["spread"]:  # key-less threshold, window and quantile queries: every row
        masks[home][:] = True
    if ERROR_COLUMN in rows.column_names:  # malformed rows: rejected once, by shard 0
        masks[0] |= np.asarray(rows.column(ERROR_COLUMN).is_valid().to_numpy(zero_copy_only=False), bool)
    for sig in rt["keysigs"]:  # keyed threshold: by the key values, per key-column set in use
        if any(c not in rows.column_names for c in sig):
            continue
        parts = [_text(rows, c, f"{c}=") for c in sig]
        joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "\x1f")
        dest = _shard_of(joined, S)
        for k in range(S):
            masks[k] |= dest == k
    if "rel" in rows.column_names:  # joins: placements; uncovered relation rows: seq mod S (history)
        jm, covered = join_destinations(rows, rt["place"], S, dest_of)
        rest = np.asarray(rows.column("rel").is_valid().to_numpy(zero_copy_only=False), bool) & ~covered
        for k in range(S):
            jm[k] |= rest & (seqs % S == k)
            masks[k] |= jm[k]
            own[k]["rel"] = jm[k]
        for sig in rt["jsigs"]:  # an equality join group owns its key partition, nothing more
            left, lcol, right, rcol = sig
            is_l, is_r = _is(rows, "rel", left), _is(rows, "rel", right)
            dl = dest_of(lcol) if is_l.any() else None
            dr = dest_of(rcol) if is_r.any() else None
            tag = "join:" + "\x1f".join(sig)
            for k in range(S):
                m = np.zeros(n, bool)
                if dl is not None:
                    m |= is_l & (dl == k)
                if dr is not None:
                    m |= is_r & (dr == k)
                own[k][tag] = m
    for col in rt["subcols"]:  # substream filters: by key, per key column in use
        dest = dest_of(col)
        for k in range(S):
            own[k]["key:" + col] = dest == k
            masks[k] |= dest == k
    return masks, [{t: m[masks[k]] for t, m in own[k].items()} for k in range(S)]


def running_time(rows: pa.Table, tcol: str, carry: float) -> np.ndarray:
    """The global time after each row: max(carry, finite times so far)."""
    t = numeric_column(rows, tcol)[0] if tcol in rows.column_names else np.full(rows.num_rows, np.nan)
    t = np.where(np.isfinite(t), t, -math.inf)
    return np.maximum.accumulate(np.r_[carry, t])[1:]


def route_part(rt: dict, rows: pa.Table, carry: dict[str, float]) -> dict[int, bytes]:
    """Rows with their ``seq`` (ascending; one file, or a whole collected batch) -> per shard, the
    payload it receives: its rows, their ownership masks, and, at each operation position p of
    the batch from these rows' first seq on, the largest time of these rows up to p (with
    ``carry``); every shard gets those, and takes the largest over the parts (:func:`gather`)."""
    masks, own = route_masks(rt, rows)
    marks: dict[str, list[np.ndarray]] = {}
    if rt["tcols"] and rows.num_rows:  # the rows' part of the global time at each operation position
        seqs = np.asarray(rows.column("seq").to_numpy(zero_copy_only=False), np.int64)
        end = rt["end"] if rt["end"] is not None else seqs[-1]
        m = rt["marks"][(rt["marks"] >= seqs[0]) & (rt["marks"] <= end)]
        if len(m):
            at = np.searchsorted(seqs, m, side="right") - 1
            for tcol in rt["tcols"]:
                run = running_time(rows, tcol, carry.get(tcol, -math.inf))
                marks[tcol] = [m, run[at]]
    out = {}
    for k in range(rt["S"]):
        if masks[k].any() or marks:
            part = rows.filter(pa.array(masks[k]))
            out[k] = pack({"rows": np.frombuffer(table_bytes(part), np.uint8), "own": own[k], "marks": marks})
    return out


def gather(rt: dict, payloads: list[bytes]) -> tuple[bytes, dict[str, Any]]:
    """A shard's payloads (any order) -> (its rows as IPC bytes in seq order, ``own``, ``clock``)."""
    parts, marks = [], {}
    for p in payloads:
        d = unpack(p)
        t = bytes_table(d["rows"].tobytes())
        first = int(t.column("seq")[0].as_py()) if t.num_rows else math.inf
        parts.append((first, t, d["own"]))
        for tcol, (s, v) in d["marks"].items():
            marks.setdefault(tcol, []).append((np.asarray(s, np.int64), np.asarray(v, np.float64)))
    parts.sort(key=lambda x: x[0])
    tables = [t for _, t, _ in parts if t.num_rows]
    rows = _concat([t for _, t, _ in parts]) if tables else pa.table({"seq": pa.array([], pa.int64())})
    tags = sorted({tag for _, _, o in parts for tag in o})
    own = {tag: np.concatenate([o[tag] if tag in o else np.zeros(t.num_rows, bool) for _, t, o in parts])
           if parts else np.zeros(0, bool) for tag in tags}
    seqs = np.asarray(rows.column("seq").to_numpy(zero_copy_only=False), np.int64)
    if len(seqs) > 1 and np.any(np.diff(seqs) < 0):  # parts whose seqs interleave (a stream's own seq)
        o = np.argsort(seqs, kind="stable")
        rows = rows.take(pa.array(o))
        own = {tag: m[o] for tag, m in own.items()}
    clock = {}
    for tcol in rt["tcols"]:
        got = marks.get(tcol, [])
        s = np.concatenate([np.array([rt["before"]], np.int64)] + [a for a, _ in got])
        v = np.concatenate([np.array([rt["carry"].get(tcol, -math.inf)])] + [b for _, b in got])
        o = np.lexsort((v, s))
        s, v = s[o], np.maximum.accumulate(v[o])
        last = np.r_[s[1:] != s[:-1], True]  # per position, the largest over the parts
        clock[tcol] = (s[last], v[last])
    return table_bytes(rows), {"own": own, "clock": clock or None}


def _concat(tables: list[pa.Table]) -> pa.Table:
    """Parts of several files: columns unified (a column missing in a file is null there); a part
    whose columns clash with the others becomes error rows at its seqs (rejected, the run goes on)."""
    try:
        return pa.concat_tables(tables, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        pass
    good = [tables[0]]
    for t in tables[1:]:
        try:
            pa.concat_tables([good[0], t], promote_options="permissive")
            good.append(t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            reason = f"columns clash with earlier files of the batch: {str(e)[:120]}"
            good.append(pa.table({"seq": t.column("seq"), ERROR_COLUMN: pa.array([reason] * t.num_rows)}))
    return pa.concat_tables(good, promote_options="permissive")


def shard_run(shard: int, payloads: list[bytes], rt: dict, ops: list[str], base: int, settings: dict,
              extra: dict, parts_dir: str | None = None) -> tuple:
    """One shard's batch from its routed payloads: :func:`.shard_task.shard_task` on the gathered
    rows (same result tuple). ``parts_dir``: where the route job wrote them, removed once the
    shard has committed the batch (its input is then in the shard's log), with any older one a
    failed attempt left."""
    rows_b, got = gather(rt, payloads)
    res = shard_task((shard, rows_b, ops, base, settings, False, {**extra, **got}))
    if parts_dir is not None:
        d = Path(parts_dir)
        for old in d.parent.glob("parts-*"):
            if old.name <= d.name:
                shutil.rmtree(old, ignore_errors=True)
    return res


def parts_dir(root: str, shard: int, batch: int) -> Path:
    """Where the route job of ``batch`` leaves the shard's parts (on the checkpoint's storage,
    which every executor reaches): one file per (stream file chunk, shard), named by its first seq."""
    from .shard_store import shard_dir

    return shard_dir(root, shard) / f"parts-{batch:012d}"


def _write_part(path: Path, data: bytes) -> None:
    """A part, whole or not at all (renamed into place; a retried task writes the same bytes
    again). Not fsync'd: a part lives until its shard commits the batch, and a batch lost
    before that is routed again."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)


def read_parts(d: str, firsts: list[int]) -> list[bytes]:
    return [(Path(d) / f"{f:020d}.bin").read_bytes() for f in firsts]


# ----------------------------------------------------------------------------- driver side


def time_columns(ops: list[str], columns: set[str] | None) -> set[str]:
    """Time columns of the substream filters registered by ``ops``."""
    from vigil.engine import Engine
    from vigil.specs import SpecError, SubstreamFilterSpec, parse_query

    out = set()
    for raw in ops:
        op, err = Engine._parse_op(raw)
        if err or op.get("op") != "register":
            continue
        try:
            spec = parse_query(op["query"], columns)
        except SpecError:
            continue
        if isinstance(spec, SubstreamFilterSpec):
            out.add(spec.time_column)
    return out


def file_table(meta: pa.Table, tcols: list[str], order: list[str] | None) -> list[tuple[str, int, int, dict]]:
    """The count job's records -> per stream file in applied order: (path, first _row, rows,
    largest time per column)."""
    from .sources import FileOrder

    per: dict[str, list] = {}
    for f, mt, lo, n, tm in zip(*(meta.column(c).to_pylist() for c in ("file", "mtime", "lo", "n", "tmax")),
                                strict=True):
        cur = per.setdefault(f, [mt, lo, 0, [-math.inf] * len(tcols)])
        cur[1], cur[2] = min(cur[1], lo), cur[2] + n
        cur[3] = [max(a, b) for a, b in zip(cur[3], tm or [], strict=False)] if tm else cur[3]
    fo = FileOrder(pa.table({"_file": pa.array(list(per), pa.string()),
                             "_mtime": pa.array([v[0] for v in per.values()], pa.int64())}), order)
    names = list(per)
    return [(names[i], per[names[i]][1], per[names[i]][2], dict(zip(tcols, per[names[i]][3], strict=True)))
            for i in fo.sort(names)]


# ----------------------------------------------------------------------------- executor side


def file_rows(batch: pa.RecordBatch | pa.Table, fmt: str) -> list[tuple[str, int, pa.Table]]:
    """The stream rows of a record batch, per file in the batch: (path, mtime, user rows in file
    order, ``_row`` of the first for JSON/CSV). Parquet files arrive whole (``_content``) and are
    decoded here; a file that cannot be read is one error row."""
    import pyarrow.parquet as pq

    from . import sources

    t = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    out = []
    if "_content" in t.column_names:
        names, mt, content = t.column("_file").to_pylist(), t.column("_mtime"), t.column("_content")
        for i, name in enumerate(names):
            try:
                rows = pq.read_table(pa.BufferReader(content[i].as_buffer()))
            except (pa.ArrowInvalid, OSError) as e:
                rows = pa.table({ERROR_COLUMN: [f"{name} is not a readable Parquet file: {str(e)[:120]}"]})
            out.append((name, _ms(mt[i]), rows, 0))
        return out
    if not t.num_rows:
        return out
    files = pc.dictionary_encode(t.column("_file").combine_chunks())
    codes = files.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], len(codes)]
    row = t.column("_row").to_numpy()
    mt = t.column("_mtime")
    for a, b in zip(starts, ends, strict=True):
        part = t.slice(int(a), int(b - a))
        out.append((files.dictionary[codes[a]].as_py(), _ms(mt[int(a)]), sources._user_columns(part, fmt), int(row[a])))
    return out


def _ms(v) -> int:
    x = v.as_py() if hasattr(v, "as_py") else v
    if x is None:
        return 0
    if isinstance(x, int):
        return x
    return int(x.timestamp() * 1000)


META_SCHEMA = ("file string, mtime long, lo long, n long, seqcol boolean, tmax array<double>, "
               "sbad long, smin long, smax long")
ROUTE_SCHEMA = "shard int, first long, payload binary"


def meta_fn(fmt: str, tcols: list[str]):
    """``mapInArrow`` function of the count job: per file (piece), its rows, first ``_row``, whether
    it carries a ``seq`` column, and its largest finite time per column of ``tcols``."""

    def run(batches):
        for b in batches:
            recs = []
            for name, mtime, rows, lo in file_rows(b, fmt):
                tmax = [float(np.max(running_time(rows, c, -math.inf), initial=-math.inf)) for c in tcols]
                has = "seq" in rows.column_names
                sq, bad = seq_column(rows) if has else (np.zeros(0, np.int64), {})
                ok = sq[sq > 0]
                recs.append((name, mtime, lo, rows.num_rows, has, tmax, len(bad) if has else rows.num_rows,
                             int(ok.min()) if len(ok) else 0, int(ok.max()) if len(ok) else 0))
            if recs:
                cols = list(zip(*recs, strict=True))
                yield pa.RecordBatch.from_arrays(
                    [pa.array(cols[0], pa.string()), pa.array(cols[1], pa.int64()), pa.array(cols[2], pa.int64()),
                     pa.array(cols[3], pa.int64()), pa.array(cols[4], pa.bool_()),
                     pa.array(cols[5], pa.list_(pa.float64())), pa.array(cols[6], pa.int64()),
                     pa.array(cols[7], pa.int64()), pa.array(cols[8], pa.int64())],
                    names=["file", "mtime", "lo", "n", "seqcol", "tmax", "sbad", "smin", "smax"])

    return run


def route_fn(fmt: str, rt: dict, starts: dict[str, tuple[int, int, dict[str, float]]], dirs: list[str] | None = None):
    """``mapInArrow`` function of the route job. ``starts``: file -> (seq of its first row, its
    first ``_row``, running time before it per time column). ``dirs``: per shard, the directory
    its parts are written to (:func:`parts_dir`; the records then carry an empty payload), else the
    parts travel in the records."""

    def run(batches):
        done: dict[str, tuple[int, dict[str, float]]] = {}  # a file read in several record batches
        for b in batches:
            recs = []
            for name, _mtime, rows, lo in file_rows(b, fmt):
                first, lo0, carry = starts[name]
                seq0, carry = done.get(name, (first + (lo - lo0), carry))
                if "seq" in rows.column_names:  # the stream's own seq (checked by the count job)
                    sq = seq_column(rows)[0]
                    o = np.argsort(sq, kind="stable")
                    rows = rows.drop_columns(["seq"]).take(pa.array(o)).append_column("seq", pa.array(sq[o]))
                    seq0 = int(sq[o[0]]) if len(o) else seq0
                    carry = dict(rt["carry"])  # interleaving parts: each reports its own maxima
                else:
                    rows = rows.append_column("seq", pa.array(np.arange(seq0, seq0 + rows.num_rows, dtype=np.int64)))
                for k, payload in route_part(rt, rows, carry).items():
                    if dirs is not None:
                        _write_part(Path(dirs[k]) / f"{seq0:020d}.bin", payload)
                        payload = b""
                    recs.append((k, seq0, payload))
                carry = {c: float(max(v, running_time(rows, c, v)[-1] if rows.num_rows else v)) for c, v in carry.items()}
                done[name] = (seq0 + rows.num_rows, carry)
            if recs:
                cols = list(zip(*recs, strict=True))
                yield pa.RecordBatch.from_arrays(
                    [pa.array(cols[0], pa.int32()), pa.array(cols[1], pa.int64()), pa.array(cols[2], pa.binary())],
                    names=["shard", "first", "payload"])

    return run
