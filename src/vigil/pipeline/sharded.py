"""``vigil run --mode sharded``: per-shard Engines on Spark executors, one coarse state blob each.

Each micro-batch is ordered on the driver exactly as in driver mode (global ``seq``), then cut
into per-shard work units that run as Spark tasks (one task per shard)::

    shard task: Engine.restore(blob) -> add_operations(ops of the shard) -> process(rows of the
                shard, with their global seq) -> (outputs, new blob)

The shard blobs (each an ``Engine.snapshot()``) plus the driver's routing table form the batch's
snapshot, written atomically exactly as in driver mode, so the exactly-once protocol of
:mod:`.driver` holds unchanged. Spark never holds one state key per query.

Routing (``home`` = the shard that holds a query):

* threshold queries with equality keys (``"symbol": "AAPL"``): home = hash(key values); a row
  goes to the shard of its own key values (for every key-column set in use), so each keyed
  query sees all and only the rows that can match it;
* key-less threshold queries, window aggregates, quantiles (held whole: the oracle and the GK
  based operators are per query), substream filters and joins: home = hash(id), spread over
  the shards; a shard holding any of them receives every row (elements are broadcast);
* rows that carry a relation (``rel``) go to every shard: the engine keeps them as join history;
* terminate / lookup go to the query's home; a register whose id was seen before goes to the
  old home (so the duplicate is rejected exactly as by one engine).

Order rules are decided globally on the driver: an operation whose ``at`` is behind the global
position is reported ``late`` once by the driver (shards apply it before their next element,
which is equivalent because they saw no element in between); malformed operations are rejected
by the driver. Outputs of all shards are merged and sorted by (at, event, id, r, s).

Known difference from driver mode: a row is validated against the queries of each shard that
receives it, so a row bad for a query of shard A is still applied by shard B whose queries do
not reference the bad column (driver mode rejects it for all). Rejections are reported once.
"""

from __future__ import annotations

import json
import time
import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vigil.events import ERROR_COLUMN, OUTPUT_SCHEMA, seq_column
from vigil.state import pack, unpack

from . import sinks, sources
from .driver import CheckpointError, DriverProcessor, RunConfig

KEYED, SPREAD = "keyed", "spread"


def _h(text: str, shards: int) -> int:
    return zlib.crc32(text.encode()) % shards


def _key_text(items: list[tuple[str, Any]]) -> str:
    return "\x1f".join(f"{c}={v if isinstance(v, str) else json.dumps(v)}" for c, v in items)


def _ipc(t: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    return sink.getvalue().to_pybytes()


def _unipc(b: bytes) -> pa.Table:
    with pa.ipc.open_stream(pa.py_buffer(b)) as r:
        return r.read_all()


def shard_task(item: tuple) -> tuple:
    """Runs on an executor: one shard's work for one batch (or its end of input)."""
    import os

    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "vigil-numba"))
    from vigil.engine import Engine

    shard, rows_b, ops, blob, settings, final = item
    eng = Engine.restore(blob) if blob else Engine(**settings)
    t0 = time.perf_counter()
    if final:
        out = eng.finish()
    else:
        if ops:
            eng.add_operations(ops)
        out = eng.process(_unipc(rows_b))
    dt = time.perf_counter() - t0
    return shard, _ipc(out), eng.snapshot(), eng.alive(), dt


class ShardedProcessor(DriverProcessor):
    def __init__(self, cfg: RunConfig, columns: set[str] | None, spark) -> None:
        super().__init__(cfg, columns)
        self.spark = spark
        self.S = max(1, int(cfg.shards))
        self.state: dict[str, Any] | None = None

    # ---------------------------------------------------------------- state
    def fresh(self) -> dict[str, Any]:
        return {"position": 0, "maxseq": 0, "home": {}, "kind": {}, "keysig": {}, "alive": {},
                "blobs": [b""] * self.S, "counts": {}}

    def load(self, k: int | None) -> dict[str, Any]:
        if k is None or k < 0:
            return self.fresh()
        data = self.store.load(k)
        if data is None:
            raise CheckpointError(f"no shard snapshot for batch {k} in {self.store.dir}")
        s = unpack(data)
        s["blobs"] = [b.tobytes() for b in s["blobs"]]
        if len(s["blobs"]) != self.S:
            raise CheckpointError(f"checkpoint has {len(s['blobs'])} shards, --shards says {self.S}")
        return s

    def dump(self, s: dict[str, Any]) -> bytes:
        return pack({**s, "blobs": [np.frombuffer(b, np.uint8) for b in s["blobs"]]})

    def settings(self) -> dict[str, Any]:
        return {"algos": self.cfg.algos, "quantile_epsilon": self.cfg.quantile_epsilon,
                "join_output": self.cfg.join_output, "columns": self.columns}

    # ---------------------------------------------------------------- routing of operations
    def route_ops(self, st: dict, ops: list[str]) -> tuple[list[list[str]], list[dict], int]:
        """Per-shard operation lines, driver-made events (late, malformed), #ops rejected here."""
        from vigil.engine import Engine
        from vigil.specs import SpecError, ThresholdSpec, parse_query

        per: list[list[str]] = [[] for _ in range(self.S)]
        events: list[dict] = []
        rejected = 0
        P = st["position"]
        for raw in ops:
            op, err = Engine._parse_op(raw)
            if err:
                at = op.get("at") if isinstance(op.get("at"), int) else P
                ident = op.get("id")
                events.append(_ev("rejected", ident if isinstance(ident, str) else None, at, reason=err))
                rejected += 1
                continue
            at = op["at"]
            ident = op.get("id") if op["op"] != "register" else op["query"].get("id")
            if at < P:
                events.append(_ev("late", ident if isinstance(ident, str) else None, at,
                                  reason=f"operation at {at} arrived after element {P}; applied after element {P}"))
            if not isinstance(ident, str) or not ident:
                try:  # the same reason one engine would give
                    parse_query(op["query"], self.columns)
                    reason = "id: must be a non-empty string"
                except SpecError as e:
                    reason = str(e)
                events.append(_ev("rejected", None, at, reason=reason))
                rejected += 1
                continue
            if ident in st["home"]:
                home = st["home"][ident]
            elif op["op"] == "register":
                try:
                    spec = parse_query(op["query"], self.columns)
                except SpecError:
                    spec = None
                if isinstance(spec, ThresholdSpec) and spec.key_items():
                    items = [list(kv) for kv in spec.key_items()]
                    home = _h(_key_text(items), self.S)
                    st["kind"][ident] = KEYED
                    st["keysig"][ident] = items
                else:
                    home = _h(ident, self.S)
                    st["kind"][ident] = SPREAD
                if spec is not None:
                    st["home"][ident] = home
                    st["alive"][ident] = True
            else:
                home = _h(ident, self.S)
            if op["op"] == "terminate":
                st["alive"].pop(ident, None)
            per[home].append(raw if isinstance(raw, str) else json.dumps(raw))
        return per, events, rejected

    # ---------------------------------------------------------------- routing of rows
    def route_rows(self, st: dict, rows: pa.Table, registered_now: set[str]) -> list[np.ndarray]:
        n = rows.num_rows
        ids = [i for i in st["home"] if st["alive"].get(i) or i in registered_now]
        spread_shards = {st["home"][i] for i in ids if st["kind"].get(i) == SPREAD}
        masks = [np.zeros(n, bool) for _ in range(self.S)]
        if "rel" in rows.column_names:
            has_rel = np.asarray(rows.column("rel").is_valid().to_numpy(zero_copy_only=False), bool)
            for m in masks:
                m |= has_rel
        for s in spread_shards:
            masks[s][:] = True
        if ERROR_COLUMN in rows.column_names:  # malformed rows: rejected once, by shard 0
            masks[0] |= np.asarray(rows.column(ERROR_COLUMN).is_valid().to_numpy(zero_copy_only=False), bool)
        sigs = {tuple(c for c, _ in st["keysig"][i]) for i in ids if st["kind"].get(i) == KEYED}
        for sig in sigs:
            parts = []
            for c in sig:
                if c not in rows.column_names:
                    parts = None
                    break
                col = rows.column(c)
                txt = col if pa.types.is_string(col.type) else pc.cast(col, pa.string())
                parts.append(pc.binary_join_element_wise(pa.scalar(f"{c}="), pc.fill_null(txt, "\x00null"), ""))
            if parts is None:
                continue
            joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "\x1f")
            enc = pc.dictionary_encode(joined.combine_chunks() if hasattr(joined, "combine_chunks") else joined)
            dest = np.array([_h(v, self.S) for v in enc.dictionary.to_pylist()], np.int64)
            shard_of = dest[enc.indices.to_numpy(zero_copy_only=False)] if len(dest) else np.zeros(n, np.int64)
            for s in range(self.S):
                masks[s] |= shard_of == s
        return masks

    def global_seq(self, st: dict, rows: pa.Table) -> tuple[pa.Table, list[dict]]:
        """Rows with their global seq (invalid stream-given seqs rejected here, as one engine does)."""
        n = rows.num_rows
        events: list[dict] = []
        if "seq" in rows.column_names:
            seqs, bad = seq_column(rows)
            prev = np.maximum.accumulate(np.r_[st["maxseq"], seqs[:-1]]) if n else seqs
            for i in np.flatnonzero((seqs >= 0) & (seqs <= prev)).tolist():
                bad.setdefault(i, f"seq {seqs[i]} is not increasing (after {prev[i]})")
            ok = np.ones(n, bool)
            for i in sorted(bad):
                ok[i] = False
                events.append(_ev("rejected", None, None, reason=bad[i]))
            rows = rows.filter(pa.array(ok)).drop_columns(["seq"])
            seqs = seqs[ok]
        else:
            seqs = st["position"] + 1 + np.arange(n, dtype=np.int64)
        if len(seqs):
            st["maxseq"] = max(st["maxseq"], int(seqs.max()))
            st["position"] = int(seqs[-1])
        return rows.append_column("seq", pa.array(seqs, pa.int64())), events

    # ---------------------------------------------------------------- one batch
    def _run_shards(self, items: list[tuple]) -> list[tuple]:
        if self.S == 1:
            return [shard_task(it) for it in items]
        rdd = self.spark.sparkContext.parallelize(items, len(items))
        return sorted(rdd.map(shard_task).collect(), key=lambda r: r[0])

    def __call__(self, df, batch_id: int) -> None:
        t0 = time.perf_counter()
        if self.store.load(batch_id) is not None:
            self.state, self.batch = self.load(batch_id), batch_id
            self._report(batch_id, {}, {}, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0, skipped=True)
            return
        tbl = self.collect(df)
        t_collect = time.perf_counter() - t0
        ops, rows, files = sources.split_batch(tbl, self.cfg.fmt)
        if self.state is None or self.batch != batch_id - 1:
            self.state = self.load(batch_id - 1)
        st = self.state
        known = set(st["home"])
        per_ops, events, ops_rej = self.route_ops(st, ops)
        registered_now = set(st["home"]) - known
        rows, seq_events = self.global_seq(st, rows)
        masks = self.route_rows(st, rows, registered_now)
        items = []
        for s in range(self.S):
            part = rows.filter(pa.array(masks[s])) if rows.num_rows else rows
            items.append((s, _ipc(part), per_ops[s], st["blobs"][s], self.settings(), False))
        t1 = time.perf_counter()
        results = self._run_shards(items)
        t_engine = time.perf_counter() - t1
        out, c = self.merge(results, events + seq_events, st)
        n_rows = len(seq_events) + rows.num_rows
        c.update(rows_in=n_rows, ops_in=len(ops))
        c["ops_rejected"] += ops_rej
        c["rows_rejected"] += len(seq_events)
        c["rows_applied"] = n_rows - c["rows_rejected"]
        c["ops_applied"] = len(ops) - c["ops_rejected"]
        c["late"] = sum(1 for e in events if e["event"] == "late")
        sinks.write_batch(self.cfg.out, batch_id, out)
        t2 = time.perf_counter()
        snap = self.dump(st)
        self.store.save(batch_id, snap)
        t_snap = time.perf_counter() - t2
        self.batch = batch_id
        self._report(batch_id, c, {}, len(files), len(snap), time.perf_counter() - t0, t_collect, t_engine,
                     t_snap, alive=self.alive, position=st["position"])

    def merge(self, results: list[tuple], driver_events: list[dict], st: dict) -> tuple[pa.Table, dict]:
        """Shard outputs + driver events -> one batch output; shard 'late' events are dropped (the
        driver reports lateness globally) and a row rejected by several shards is kept once."""
        alive: dict[str, int] = {}
        kept: list[dict] = []
        seen_rows: set[int] = set()
        rows_rej = ops_rej = 0
        for shard, out_b, blob, al, _dt in results:
            st["blobs"][shard] = blob
            for k, v in al.items():
                alive[k] = alive.get(k, 0) + v
            for r in _unipc(out_b).to_pylist():
                ev = r["event"]
                if ev == "late":
                    continue
                if ev == "rejected":
                    if r["id"] is None:  # shards only see operations with an id: this is a row
                        if r["at"] in seen_rows:
                            continue
                        seen_rows.add(r["at"])
                        rows_rej += 1
                    else:
                        ops_rej += 1
                elif ev == "matured":
                    st["alive"].pop(r["id"], None)
                kept.append(r)
        self.alive = alive
        kept.extend(driver_events)
        kept.sort(key=_order_key)
        c = {"rows_rejected": rows_rej, "ops_rejected": ops_rej,
             "outputs": sum(1 for r in kept if r["event"] != "rejected")}
        return pa.Table.from_pylist(kept, schema=OUTPUT_SCHEMA), c

    def finish(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        last = self.store.latest()
        st = self.load(last)
        items = [(s, b"", [], st["blobs"][s], self.settings(), True) for s in range(self.S)]
        results = self._run_shards(items)
        out, c = self.merge(results, [], st)
        k = (last if last is not None else -1) + 1
        sinks.write_batch(self.cfg.out, k, out)
        c.update(rows_in=0, ops_in=0, rows_applied=0, ops_applied=0, late=0)
        return self._report(k, c, {}, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0.0, alive=self.alive,
                            final=True, position=st["position"])


def _ev(event: str, ident: str | None, at: int | None, **kw) -> dict:
    return {"event": event, "id": ident, "at": at, "value": kw.get("value"), "keys": kw.get("keys"),
            "r": None, "s": None, "reason": kw.get("reason")}


def _order_key(r: dict) -> tuple:
    return (r["at"] if r["at"] is not None else -1, r["event"], r["id"] or "", r["r"] or 0, r["s"] or 0,
            r["reason"] or "")
