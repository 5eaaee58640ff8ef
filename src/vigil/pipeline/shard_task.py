"""Sharded mode's pieces that run on either side: routing helpers (hash of key text per row,
join placements), Arrow IPC, and :func:`shard_task`, the function Spark runs on an executor for
one shard and one batch (see :mod:`.sharded`)."""

from __future__ import annotations

import json
import time
import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vigil.state import bytes_table as _unipc  # noqa: F401 - used by .sharded, .shard_merge
from vigil.state import table_bytes as _ipc

ALL = -1  # home of a query held by every shard


def _h(text: str, shards: int) -> int:
    return zlib.crc32(text.encode()) % shards


def _key_text(items: list[tuple[str, Any]]) -> str:
    return "\x1f".join(f"{c}={v if isinstance(v, str) else json.dumps(v)}" for c, v in items)


def _text(rows: pa.Table, col: str, prefix: str = "") -> pa.Array:
    """A column as text (as the engine compares keys: Arrow's cast to string), nulls marked."""
    n = rows.num_rows
    if col not in rows.column_names:
        return pa.array(["\x00null"] * n, pa.string())
    c = rows.column(col)
    c = c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
    txt = c if pa.types.is_string(c.type) else pc.cast(c, pa.string())
    txt = pc.fill_null(txt, "\x00null")
    return pc.binary_join_element_wise(pa.scalar(prefix), txt, "") if prefix else txt


def _shard_of(text: pa.Array, shards: int) -> np.ndarray:
    """hash(text) mod shards per row: one crc32 per distinct value."""
    enc = pc.dictionary_encode(text.combine_chunks() if isinstance(text, pa.ChunkedArray) else text)
    dest = np.array([_h(v, shards) for v in enc.dictionary.to_pylist()], np.int64)
    if not len(dest):
        return np.zeros(len(text), np.int64)
    return dest[np.asarray(enc.indices.to_numpy(zero_copy_only=False), np.int64)]


def _is(rows: pa.Table, col: str, value: str) -> np.ndarray:
    if col not in rows.column_names:
        return np.zeros(rows.num_rows, bool)
    c = rows.column(col)
    if not pa.types.is_string(c.type):
        c = pc.cast(c, pa.string())
    return np.asarray(pc.fill_null(pc.equal(c, pa.scalar(value)), False).to_numpy(zero_copy_only=False), bool)


def join_destinations(rows: pa.Table, places: list[list], shards: int,
                      dest_of=None) -> tuple[list[np.ndarray], np.ndarray]:
    """Per shard, the rows the join placements send there; and the rows some placement covers.
    A placement is ``[rel, "col", column]`` (rows of rel -> hash(column value)) or
    ``[rel, "shard", k]`` (every row of rel -> shard k). ``dest_of(column)``: hash shard per row."""
    n = rows.num_rows
    dest_of = dest_of or (lambda c: _shard_of(_text(rows, c), shards))
    masks = [np.zeros(n, bool) for _ in range(shards)]
    covered = np.zeros(n, bool)
    for rel in sorted({p[0] for p in places}):
        mine = _is(rows, "rel", rel)
        if not mine.any():
            continue
        covered |= mine
        for _, how, what in (p for p in places if p[0] == rel):
            if how == "shard":
                masks[int(what)] |= mine
            else:
                dest = dest_of(what)
                for k in range(shards):
                    masks[k] |= mine & (dest == k)
    return masks, covered


def _alive_split(eng) -> dict[str, int]:
    """Alive queries per family; families held by every shard are tagged ``shared:`` (counted once)."""
    per: dict[str, int] = {}
    for g in eng.groups.values():  # O(groups), not one JSON decode per alive query
        if not g.qids:
            continue
        fam = g.family
        if fam == "substream" or (fam == "joins" and g.params.get("kind") != "band"):
            fam = "shared:" + fam
        per[fam] = per.get(fam, 0) + len(g.qids)
    return per


def shard_task(item: tuple) -> tuple:
    """Runs on an executor: one shard's work for one batch (or its end of input), on the shard's
    live engine (:mod:`.shard_store`). ``item`` = (shard, rows IPC, operations, base version,
    settings, final, extra); ``extra`` carries ``root`` (the shards' directory), ``run`` (the
    run's id), ``batch`` (this batch's id), ``keep_from`` and the routing inputs of
    :func:`.shard_store.apply`. Returns (shard, outputs IPC, bytes written durably, alive per
    family, timing); timing = {"s": seconds, "replayed": batches of the log
    applied again to restore the engine (-1: the worker's live engine was used), "restore_s"}."""
    from . import shard_store

    shard, rows_b, ops, base, settings, final, extra = item
    t0 = time.perf_counter()
    eng = shard_store.engine_at(extra["root"], extra["run"], shard, base, settings)
    restore = dict(shard_store.LAST_RESTORE)
    written = 0
    if not final:  # the input is durable before the engine applies it (a retry rewrites the same)
        written += shard_store.log_input(extra["root"], shard, extra["batch"], rows_b, ops, extra)
    out = shard_store.apply(eng, rows_b, ops, extra, final)
    if not final and extra["batch"] >= 1:
        _fault_kill_once()
    alive = _alive_split(eng)
    if not final:  # the end of input is never kept (as in driver mode): the engine is dropped
        written += shard_store.commit(extra["root"], extra["run"], shard, extra["batch"], eng, extra["keep_from"])
    timing = {"s": time.perf_counter() - t0, "replayed": int(restore["replayed"]),
              "restore_s": float(restore["s"])}
    return shard, _ipc(out), written, alive, timing


def _fault_kill_once() -> None:
    """Test hook (tests/pipeline/test_local_cluster.py): with ``VIGIL_FAULT_KILL_ONCE=<marker
    path>`` in the executors' environment, the first shard task of a batch after the first that
    creates the marker kills its own Python worker after applying its rows and before committing
    them (Spark retries the task on a new worker, whose engine is restored from the durable log).
    Unset: nothing."""
    import os

    marker = os.environ.get("VIGIL_FAULT_KILL_ONCE")
    if not marker:
        return
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return
    os.kill(os.getpid(), 9)


def history_task(item: tuple) -> tuple[int, bytes]:
    """Runs on an executor: the join history rows (Arrow IPC) a shard's engine holds at version
    ``base``, for a new join placement (:meth:`.sharded.ShardedProcessor.reshuffle`); the engine
    stays live at that version."""
    from vigil.history import History

    from . import shard_store

    shard, base, settings, root, run = item
    eng = shard_store.engine_at(root, run, shard, base, settings)
    rows = History.state_rows(eng.history.state())
    shard_store.keep_live(run, shard, base, eng)
    return shard, rows.tobytes()


def _ev(event: str, ident: str | None, at: int | None, **kw) -> dict:
    return {"event": event, "id": ident, "at": at, "value": kw.get("value"), "keys": kw.get("keys"),
            "r": None, "s": None, "reason": kw.get("reason"), "asked_at": kw.get("asked_at")}

