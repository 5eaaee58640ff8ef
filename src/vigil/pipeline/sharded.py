"""``vigil run --mode sharded``: per-shard Engines living on the Spark executors.

Each micro-batch is ordered on the driver exactly as in driver mode (global ``seq``: files by
(modification time, path), recorded in the batch's manifest; rows with ``seq`` through the
reorder buffer of :mod:`.reorder`, whose state is part of the snapshot), then cut
into per-shard work units that run as Spark tasks (one task per shard)::

    shard task: the shard's live engine at the previous batch's version (cached in the worker,
                else restored from the shard's durable log: :mod:`.shard_store`)
                -> log this batch's input of the shard (durable, O(its rows))
                -> [add_history(rows of new join placements)]
                -> add_operations(ops of the shard) -> process(rows of the shard, with their
                global seq, + which of them the shard owns) -> advance(global position)
                -> outputs; the engine stays live at this batch's version,
                a snapshot of it is written now and then (compaction)

The driver's snapshot is its routing table, positions and reorder buffer (no shard state), written
atomically after the batch's outputs exactly as in driver mode, so the exactly-once protocol of
:mod:`.driver` holds unchanged: a batch attempt that fails restarts from the previous driver
snapshot, and every shard rebuilds that version from its log (a live engine at another version is
never used). Spark never holds one state key per query.

Routing (``home`` = the shard that holds a query; "shared" = the query is on every shard):

* threshold with equality keys (``"symbol": "AAPL"``): home = hash(key values); a row goes to the
  shard of its own key values (for every key-column set in use);
* key-less threshold (no key in its spec): home = hash(id); the shards holding any of them, or
  any window aggregate or quantile query (below), receive every row;
* equality joins (select_join, window_join): shared; for every (relation, join column) in use,
  a row of that relation goes to shard hash(value of the join column), so each shard holds only
  its key partition of the join history; each join group is fed only its own key partition
  (``Partial.own["join:<left,left_on,right,right_on>"]``), so every result pair is found on the
  shard of its key (a pair that several shards report, e.g. a relation joined with itself on two
  columns, is kept once by the driver);
* band joins (no equality): home = hash(id); the rows of their two relations go to the home;
* rows of a relation no join uses yet: shard seq mod N (kept as history, once);
* a new (relation, column) or (relation, band home) placement re-shuffles the relation's earlier
  rows (read from every shard's live engine by a Spark job) to the shards it sends that relation to, as
  join history (``Engine.add_history``): a new join query joins with old tuples as in driver mode;
* substream filters: shared; a row goes to shard hash(row[key]) for each key column in use and
  that shard owns its keys (``Partial.own["key:<col>"]``); a lookup is answered by every shard on
  its keys and the driver returns the sorted union; the time window uses the global time of
  element n (``Partial.clock``), not the shard's last element;
* quantiles and window aggregates: home = hash(the query's group: the family adapter's
  ``params_of``), so the queries of one group live on one shard and share its structures there
  (the n-of-N structure, the suffix structure, the trigger clusters, a window operator) exactly
  as in one engine, and different groups (column, window, notify mode, where / group_by) spread
  over the shards; a home receives every row, answers lookups and pushes updates and alerts
  itself: every quantile shape is served, and only answers travel to the driver. The price: one
  group's work is not split across shards;
* terminate / lookup go to the query's home (all shards for shared queries); operations of an id
  nobody holds go to shard 0; a register whose id was seen before goes where the id lives (so the
  duplicate is rejected exactly as by one engine). Rejections and answers that every shard
  repeats for a shared query are kept once (from shard 0) or merged.
* after its rows every shard ``advance``s to the global position, so lookups and registrations
  happen in the same batch as in driver mode.

Order rules are decided globally on the driver: an operation whose ``at`` is behind the global
position is reported ``late`` once by the driver (shards, being at the global position, apply it
at the same point); malformed operations are rejected by the driver. Outputs of all shards are
merged and sorted by (at, event, id, r, s).

Known differences from driver mode, for bad input only: a row is validated against the queries
of each shard that receives it, so a row bad for a query of shard A is still applied by shard B
whose queries do not reference the bad column (driver mode rejects it for all; rejections are
reported once); a time column going backwards is detected per shard (on the rows each shard
owns), and the substream clock counts rows that driver mode would reject.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vigil.state import pack, unpack

from . import shard_route, shard_store, sinks
from .config import CheckpointError, RunConfig
from .pinned import PinnedJobs
from .processor import BaseProcessor
from .reorder import ReorderBuffer
from .routing_log import RoutingLog
from .shard_merge import merge_outputs, touch
from .shard_task import (
    ALL,
    _ev,
    _h,
    _ipc,
    _is,
    _key_text,
    _unipc,
    history_task,
    join_destinations,
    shard_task,
)

KEYED, SPREAD, BAND, SHARED = "keyed", "spread", "band", "shared"
_PER_QUERY = ("home", "kind", "fam", "alive", "keysig", "sub", "rep")  # id -> ... tables of the driver state
STATE_VERSION = 4  # 4: shard state on the executors (shard_store), no blobs in the driver's snapshot


def _nbytes(x) -> int:
    """Bytes of the byte strings, texts and Arrow/numpy buffers inside a task item or result (what
    travels between the driver and the tasks; Python containers and scalars counted as 8 bytes)."""
    if isinstance(x, bytes | bytearray | memoryview):
        return len(x)
    if isinstance(x, str):
        return len(x.encode())
    if isinstance(x, dict):
        return sum(_nbytes(k) + _nbytes(v) for k, v in x.items())
    if isinstance(x, list | tuple | set):
        return sum(_nbytes(v) for v in x)
    if hasattr(x, "nbytes"):
        return int(x.nbytes)
    return 8


def _run_routed(item: tuple) -> tuple:
    return shard_route.shard_run(*item)


class ShardedProcessor(BaseProcessor):
    """The ``foreachBatch`` function of sharded mode."""

    def __init__(self, cfg: RunConfig, columns: set[str] | None, spark) -> None:
        super().__init__(cfg, columns)
        self.spark = spark
        self.S = max(1, int(cfg.shards))
        self.state: dict[str, Any] | None = None
        self.alive: dict[str, int] = {}
        self._cur = -1  # the batch being processed (driver bytes are counted for it)
        self.rlog = RoutingLog(self.store.dir, _PER_QUERY)
        self.spark_batches = 0  # batches whose rows stayed in Spark (the others were collected)
        self._gens: dict[int, int] = {}  # kept snapshot -> the routing generation it refers to
        self._pinned = PinnedJobs(spark, self.S)  # shard tasks kept where their live engine is

    # ---------------------------------------------------------------- state
    def fresh(self) -> dict[str, Any]:
        # home: id -> shard or ALL; kind: id -> KEYED/SPREAD/BAND/SHARED; fam: id -> family;
        # alive: id -> position of its terminate (-1: none yet), while it may see rows;
        # keysig: keyed threshold id -> key items; sub: substream id -> [key column, time column];
        # place: join placements (see join_destinations), never removed (they are history);
        # jsigs: equality join signatures [left, left_on, right, right_on] (ownership tags);
        # clock: time column -> time of the last element (running max) for substream lookups
        return {"version": STATE_VERSION, "position": 0, "maxseq": 0, "home": {}, "kind": {}, "fam": {},
                "alive": {}, "keysig": {}, "sub": {}, "place": [], "jsigs": [], "clock": {}, "shards": self.S,
                "run": uuid.uuid4().hex}

    def load(self, k: int | None) -> dict[str, Any]:
        """The driver state of snapshot ``k`` (fresh for None); sets ``self.reorder`` with it."""
        self.reorder = ReorderBuffer(self.cfg.max_reorder_rows)
        self.rlog.gen = None  # the next write starts a generation, unless a snapshot's log is read
        if k is None or k < 0:
            return self.fresh()
        data = self.store.load(k)
        if data is None:
            raise CheckpointError(f"no shard snapshot for batch {k} in {self.store.dir}")
        s = unpack(data)
        if s.get("version") not in (2, 3, STATE_VERSION):  # 2: before the reorder buffer
            raise CheckpointError(f"shard snapshot {k} has version {s.get('version')!r}, expected {STATE_VERSION}")
        if "blobs" in s:  # an older checkpoint: its shard blobs become the shards' snapshots at k
            s["shards"] = len(s["blobs"])
            if s["shards"] == self.S:
                for i, b in enumerate(s.pop("blobs")):
                    shard_store.seed(self.shard_root, i, k, b.tobytes())
        if s.get("shards") != self.S:
            raise CheckpointError(f"checkpoint has {s.get('shards')} shards, --shards says {self.S}")
        s.setdefault("run", uuid.uuid4().hex)
        if "routing_ref" in s:  # the per-query tables: the routing log (see dump)
            self._gens[k] = int(s["routing_ref"][0])
            s.update(self.rlog.read(s.pop("routing_ref")))
        elif "routing" in s:  # older checkpoints: the tables as one JSON text
            s.update(json.loads(s.pop("routing")))
        if "reorder" in s:
            self.reorder = ReorderBuffer.from_state(s.pop("reorder"), self.cfg.max_reorder_rows)
        s["version"] = STATE_VERSION
        return s

    def dump(self, s: dict[str, Any], batch: int) -> bytes:
        """The driver's snapshot after ``batch``. The per-query routing tables go to the routing
        log (:mod:`.routing_log`: the changes of the batch, O(the queries it touched)); the
        snapshot keeps where they end."""
        ref = self.rlog.write(batch, s, s.pop("_dirty", set()))
        self._gens[batch] = ref[0]
        rest = {k: v for k, v in s.items() if k not in _PER_QUERY}
        return pack({**rest, "routing_ref": ref, "reorder": self.reorder.state()})

    def _prune_routing(self) -> None:
        kept = self.store.ids()
        for k in kept:
            if k not in self._gens:
                ref = unpack(self.store.load(k) or pack({})).get("routing_ref")
                self._gens[k] = int(ref[0]) if ref else -1
        self.rlog.prune({self._gens[k] for k in kept})
        for k in [k for k in self._gens if k not in kept]:
            del self._gens[k]

    @property
    def shard_root(self) -> str:
        """Where the shards keep their durable logs (:mod:`.shard_store`; shared storage)."""
        return str(self.store.dir / "shards")

    def shard_states(self, k: int) -> list[dict[str, Any]]:
        """Every shard's engine state at version ``k`` (restored from the shard logs; tests and
        inspection)."""
        return [unpack(shard_store.engine_at(self.shard_root, "inspect", i, k, self.settings()).snapshot())
                for i in range(self.S)]

    def _extra(self, st: dict, **kw: Any) -> dict[str, Any]:
        """What every shard task needs besides its rows and operations."""
        ids = self.store.ids()
        return {"root": self.shard_root, "run": st["run"], "batch": self._cur,
                "keep_from": min(ids) if ids else -1, **kw}

    def settings(self) -> dict[str, Any]:
        return {"algos": self.cfg.algos, "quantile_epsilon": self.cfg.quantile_epsilon,
                "join_output": self.cfg.join_output, "columns": self.columns,
                "join_history": self.cfg.join_history}

    # ---------------------------------------------------------------- routing of operations
    def _home_of(self, st: dict, ident: str, spec) -> int:
        """Decide (and record) where a newly registered query lives; adds join placements."""
        from vigil.specs import BandJoinSpec, SubstreamFilterSpec, ThresholdSpec

        fam = spec.family
        if isinstance(spec, ThresholdSpec) and spec.repeat:  # alive after its maturities (shard_merge)
            st.setdefault("rep", {})[ident] = 1
        if isinstance(spec, ThresholdSpec) and spec.key_items():
            items = [list(kv) for kv in spec.key_items()]
            home, kind = _h(_key_text(items), self.S), KEYED
            st["keysig"][ident] = items
        elif isinstance(spec, BandJoinSpec):
            home, kind = _h(ident, self.S), BAND
            for rel in (spec.left, spec.right):
                self._place(st, [rel, "shard", home])
        elif fam == "joins":  # equality joins: by the join key
            home, kind = ALL, SHARED
            self._place(st, [spec.left, "col", spec.left_on])
            self._place(st, [spec.right, "col", spec.right_on])
            sig = [spec.left, spec.left_on, spec.right, spec.right_on]
            if sig not in st["jsigs"]:
                st["jsigs"].append(sig)
        elif isinstance(spec, SubstreamFilterSpec):
            home, kind = ALL, SHARED
            st["sub"][ident] = [spec.key, spec.time_column]
        elif fam in ("windows", "quantiles"):  # one home per group: its queries share its operator there
            from vigil import registry

            params = json.dumps(registry.adapter(fam).params_of(spec), sort_keys=True)
            home, kind = _h(fam + "\x1f" + params, self.S), SPREAD
        else:  # key-less threshold
            home, kind = _h(ident, self.S), SPREAD
        st["home"][ident], st["kind"][ident], st["fam"][ident] = home, kind, fam
        st["alive"][ident] = -1
        touch(st, ident)
        return home

    def _place(self, st: dict, p: list) -> None:
        if p not in st["place"]:
            st["place"].append(p)
            self._new_places.append(p)

    def route_ops(self, st: dict, ops: list[str]) -> tuple[list[list[str]], list[dict], int]:
        """Per-shard operation lines, driver-made events (late, malformed), #ops rejected here.

        Homes are decided in the order the engines apply the operations, (max(at, position),
        arrival), so that a terminate arriving before its register still finds the query; each
        shard receives its lines in arrival order (its engine orders them the same way)."""
        from vigil.engine import Engine
        from vigil.specs import SpecError, parse_query

        per: list[list[str]] = [[] for _ in range(self.S)]
        events: list[dict] = []
        rejected = 0
        P = st["position"]
        todo: list[tuple[int, int, dict, Any]] = []
        for j, raw in enumerate(ops):
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
            todo.append((max(at, P), j, op, raw))
            st.setdefault("waiting", []).append(at)  # until the stream passes at (see _step)
        dest: dict[int, int] = {}
        for at, j, op, _ in sorted(todo, key=lambda x: (x[0], x[1])):
            ident = op.get("id") if op["op"] != "register" else op["query"]["id"]
            if ident in st["home"]:
                home = st["home"][ident]
            elif op["op"] == "register":
                try:
                    spec = parse_query(op["query"], self.columns)
                except SpecError:
                    spec = None
                home = 0 if spec is None else self._home_of(st, ident, spec)
            else:
                home = 0  # unknown id: rejected by shard 0
            if op["op"] == "terminate" and st["alive"].get(ident) == -1:
                st["alive"][ident] = at  # sees no element after this position
                touch(st, ident)
            dest[j] = home
        for _, j, _, raw in todo:
            line = raw if isinstance(raw, str) else json.dumps(raw)
            for k in range(self.S) if dest[j] == ALL else (dest[j],):
                per[k].append(line)
        return per, events, rejected

    # ---------------------------------------------------------------- routing of rows
    def in_use(self, st: dict, before: int) -> list[str]:
        """Queries that may see an element after position ``before``."""
        return [i for i, end in st["alive"].items() if end == -1 or end > before]

    def reshuffle(self, st: dict, places: list[list]) -> list[bytes]:
        """Earlier rows of the relations of new placements, read from the shards' engines, cut per
        shard by those placements (IPC bytes, b"" for none)."""
        rels = {p[0] for p in places}
        parts = []
        items = [(s, self._cur - 1, self.settings(), self.shard_root, st["run"]) for s in range(self.S)]
        if self.S == 1 or self.spark is None:
            got = [history_task(it) for it in items]
        else:
            got = self._pinned.run_items(items, history_task)
        self.io(self._cur)["in"] += _nbytes(got)
        for _, h in got:
            if len(h):
                t = _unipc(h)
                keep = np.zeros(t.num_rows, bool)
                for rel in rels:
                    keep |= _is(t, "rel", rel)
                if keep.any():
                    parts.append(t.filter(pa.array(keep)))
        out = [b""] * self.S
        if not parts:
            return out
        t = pa.concat_tables(parts, promote_options="permissive")
        _, first = np.unique(np.asarray(t.column("seq").to_numpy(zero_copy_only=False), np.int64), return_index=True)
        t = t.take(pa.array(first))  # one copy per seq, ascending
        masks, _ = join_destinations(t, places, self.S)
        for k in range(self.S):
            if masks[k].any():
                out[k] = _ipc(t.filter(pa.array(masks[k])))
        return out

    def global_seq(self, st: dict, rows: pa.Table, released: bool = False) -> tuple[pa.Table, list[dict]]:
        """Rows with their global seq: stream-given seqs through the reorder buffer (late,
        duplicate and unusable seqs rejected there, with reasons), else assigned in arrival
        order. ``released``: rows the buffer already released (the end-of-input flush)."""
        events: list[dict] = []
        if "seq" in rows.column_names:
            if not released:
                rows, rej = self.reorder.push(rows)
                events = [_ev("rejected", None, a, reason=r) for a, r in rej]
            seqs = np.asarray(rows.column("seq").to_numpy(zero_copy_only=False), np.int64)
            rows = rows.drop_columns(["seq"])
        else:
            seqs = st["position"] + 1 + np.arange(rows.num_rows, dtype=np.int64)
        if len(seqs):
            st["maxseq"] = max(st["maxseq"], int(seqs.max()))
            st["position"] = int(seqs[-1])
        return rows.append_column("seq", pa.array(seqs, pa.int64())), events

    # ---------------------------------------------------------------- one batch
    def _run_shards(self, items: list[tuple], fn=shard_task) -> list[tuple]:
        io = self.io(self._cur)
        io["out"] += _nbytes(items)
        if self.S == 1 or self.spark is None:  # no Spark: in-process (tests, one shard)
            results = [fn(it) for it in items]
        else:
            results = self._pinned.run_items(items, fn, _nbytes(items) > 1 << 20)
        return self._got(results)

    def _got(self, results: list[tuple]) -> list[tuple]:
        io = self.io(self._cur)
        io["in"] += _nbytes(results)
        io["durable"] += sum(r[2] for r in results)
        task_s = io.setdefault("task_s", {})  # each shard task's own seconds in its worker
        for r in results:  # ... and shard engines restored from the durable log, not the live one
            if isinstance(r[4], dict):
                task_s[r[0]] = task_s.get(r[0], 0.0) + r[4]["s"]
            if isinstance(r[4], dict) and r[4]["replayed"] >= 0:
                io["restores"] = io.get("restores", 0) + 1
                io["replayed"] = io.get("replayed", 0) + r[4]["replayed"]
                io["restore_s"] = io.get("restore_s", 0.0) + r[4]["restore_s"]
        return results

    def __call__(self, df, batch_id: int) -> None:
        t0 = time.perf_counter()
        if self.store.load(batch_id) is not None:
            self.state, self.batch = self.load(batch_id), batch_id
            self._report(batch_id, {}, {}, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0, skipped=True)
            return
        order = self.manifests.read(batch_id)  # Spark runs K again after a crash: the first attempt's order
        if self.spark is not None and self.cfg.fmt != "kafka" and self._rows_in_spark(df, batch_id, order, t0):
            return
        ops, rows, files = self.collect_split(df, order, batch_id)
        if self.cfg.fmt != "kafka":
            self.write_manifest(batch_id, files)
        self.run_batch(batch_id, ops, rows, len(files), t0, time.perf_counter() - t0, files=files)

    def _rows_in_spark(self, df, batch_id: int, order: list[str] | None, t0: float) -> bool:
        """The batch with its rows left in Spark (:mod:`.shard_route`): the driver collects the
        operations and one record per stream file. False (nothing done) for a batch whose rows
        carry ``seq``: those go through the reorder buffer on the driver."""
        from pyspark.sql import functions as F

        from . import sources

        self._cur = batch_id
        if "_op" in df.columns:
            ops_t = df.filter(F.col("_op").isNotNull()).select("_file", "_mtime", "_op").toArrow()
            rows_df = df.filter(F.col("_op").isNull()).drop("_op")
        else:
            ops_t, rows_df = None, df
        ops, _, op_files = sources.split_batch(ops_t, self.cfg.fmt, order) if ops_t is not None else ([], None, [])
        self.io(batch_id)["in"] += ops_t.nbytes if ops_t is not None else 0
        if self.state is None or self.batch != batch_id - 1:
            self.state = self.load(batch_id - 1)
        tcols = sorted({v[1] for v in self.state["sub"].values()} | shard_route.time_columns(ops, self.columns))
        rows_df = sources.with_row_index(rows_df).persist()
        try:
            meta = rows_df.mapInArrow(shard_route.meta_fn(self.cfg.fmt, tcols), shard_route.META_SCHEMA).toArrow()
            self.io(batch_id)["in"] += meta.nbytes
            files = shard_route.file_table(meta, tcols, order)
            own_seq = bool(pc.any(meta.column("seqcol")).as_py())
            if own_seq and not self._seq_in_order(rows_df, meta):
                return False  # the reorder buffer's work: collected
            t_collect = time.perf_counter() - t0
            self.write_manifest(batch_id, op_files + [f[0] for f in files])
            self.spark_batches += 1
            self.run_batch(batch_id, ops, None, len(op_files) + len(files), t0, t_collect,
                           files=op_files + [f[0] for f in files], spark_rows=(rows_df, files, own_seq))
        finally:
            rows_df.unpersist()
        return True

    def _seq_in_order(self, rows_df, meta: pa.Table) -> bool:
        """Rows that carry ``seq`` can stay in Spark when the batch is exactly the next positions
        P+1..P+n (in any order within the batch) and the reorder buffer holds nothing: every
        row has a usable seq, the smallest is P+1, the largest P+n and no seq repeats (a
        distinct count on the executors). Anything else is the reorder buffer's work."""
        from pyspark.sql import functions as F

        n = pc.sum(meta.column("n")).as_py() or 0
        P = self.state["position"]
        if len(self.reorder) or not n or (pc.sum(meta.column("sbad")).as_py() or 0):
            return False
        if pc.min(meta.column("smin")).as_py() != P + 1 or pc.max(meta.column("smax")).as_py() != P + n:
            return False
        return rows_df.select(F.count_distinct("seq")).first()[0] == n

    def run_batch(self, batch_id: int, ops: list, rows: pa.Table | None, n_files: int = 0, t0: float | None = None,
                  t_collect: float = 0.0, files: list[str] | None = None, spark_rows=None) -> pa.Table:
        """One batch from its collected operations and rows (ordered), or with its rows in Spark
        (``spark_rows``: the DataFrame and its files, see :meth:`_rows_in_spark`); returns its output."""
        t0 = time.perf_counter() if t0 is None else t0
        self._cur = batch_id  # the batch whose driver bytes _run_shards counts
        if self.state is None or self.batch != batch_id - 1:
            self.state = self.load(batch_id - 1)
        st = self.state
        self.batch = None  # st is mutated below: a failed attempt must reload it
        late0 = self.reorder.counts["late"]
        out, c, t_engine = self._step(st, ops, rows, spark_rows=spark_rows)
        c["rows_late"] = self.reorder.counts["late"] - late0
        c["rows_arrived"] = c["rows_in"] if spark_rows is not None else rows.num_rows
        sinks.write_batch(self.cfg.out, batch_id, out)
        t2 = time.perf_counter()
        snap = self.dump(st, batch_id)
        self.store.save(batch_id, snap)
        self.manifests.prune(min(self.store.ids()))
        self._prune_routing()
        t_snap = time.perf_counter() - t2
        self.batch = batch_id
        self._report(batch_id, c, {}, n_files, len(snap), time.perf_counter() - t0, t_collect, t_engine,
                     t_snap, alive=self.alive, position=st["position"], files=files)
        return out

    def _step(self, st: dict, ops: list, rows: pa.Table | None, released: bool = False,
              spark_rows=None) -> tuple[pa.Table, dict, float]:
        """Operations and rows through the shards (``st`` updated): (output, counts, seconds in the shards)."""
        before = st["position"]
        waiting0 = len(st.get("waiting", []))
        self._new_places: list[list] = []
        was_alive = set(self.in_use(st, before))
        per_ops, events, ops_rej = self.route_ops(st, ops)
        ids = sorted(was_alive | set(self.in_use(st, before)))
        hist = self.reshuffle(st, self._new_places) if self._new_places else [b""] * self.S
        marks = st.get("waiting", [])  # positions of the operations not applied yet (clock points)
        t1 = time.perf_counter()
        if spark_rows is None:
            rows, seq_events = self.global_seq(st, rows, released)
            rt = shard_route.plan_of(st, ids, self.S, before, marks)
            routed = shard_route.route_part(rt, rows, rt["carry"]) if rows.num_rows else {}
            for tcol in rt["tcols"]:
                if rows.num_rows:
                    st["clock"][tcol] = float(shard_route.running_time(rows, tcol, rt["carry"][tcol])[-1])
            items = [(s, [routed[s]] if s in routed else [], rt, per_ops[s], self._cur - 1, self.settings(),
                      self._extra(st, hist=hist[s], position=st["position"])) for s in range(self.S)]
            results = self._run_shards(items, _run_routed)
            n_rows = len(seq_events) + rows.num_rows
        else:
            seq_events = []
            results, n_rows = self._route_in_spark(st, spark_rows, ids, before, marks, per_ops, hist)
        t_engine = time.perf_counter() - t1
        out, c = self.merge(results, events + seq_events, st)
        for i in [i for i, end in st["alive"].items() if end != -1 and end <= st["position"]]:
            del st["alive"][i]  # terminated: sees no later element
            st.get("rep", {}).pop(i, None)
            touch(st, i)
        c.update(rows_in=n_rows, ops_in=len(ops))
        c["ops_rejected"] += ops_rej
        c["rows_rejected"] += len(seq_events)
        c["rows_applied"] = n_rows - c["rows_rejected"]
        # operations whose at the stream has not reached wait in the shards' engines
        st["waiting"] = [a for a in st.get("waiting", []) if a > st["position"]]
        c["ops_waiting_before"], c["ops_waiting"] = waiting0, len(st["waiting"])
        c["ops_applied"] = waiting0 + len(ops) - c["ops_rejected"] - len(st["waiting"])
        c["late"] = sum(1 for e in events if e["event"] == "late")
        return out, c, t_engine

    def _route_in_spark(self, st: dict, spark_rows, ids: list[str], before: int, marks: list[int],
                        per_ops: list[list[str]], hist: list[bytes]) -> tuple[list[tuple], int]:
        """The route job: every file's rows get their seq and go to their shards through Spark's
        shuffle; each shard's task applies them. Returns (shard results, rows in the batch)."""
        rows_df, files, own_seq = spark_rows
        rt = shard_route.plan_of(st, ids, self.S, before, marks)
        starts, pos = {}, before
        carry = dict(rt["carry"])
        for name, lo, n, tmax in files:
            starts[name] = (pos + 1, lo, {t: carry[t] for t in rt["tcols"]})
            pos += n
            for t in rt["tcols"]:
                carry[t] = max(carry[t], tmax.get(t, -math.inf))
        n_rows = pos - before
        rt["end"] = pos
        if own_seq:  # the stream's own seq (the next positions, see _seq_in_order)
            self.reorder.position = pos
            self.reorder.counts["released"] += n_rows
            starts = {name: (v[0], v[1], dict(rt["carry"])) for name, v in starts.items()}
        if n_rows:
            st["maxseq"] = max(st["maxseq"], pos)
            st["position"] = pos
        st["clock"].update({t: carry[t] for t in rt["tcols"] if math.isfinite(carry[t]) or t in st["clock"]})
        S, base, settings = self.S, self._cur - 1, self.settings()
        extras = [self._extra(st, hist=hist[s], position=st["position"]) for s in range(S)]
        closure = (rt, per_ops, extras, starts)
        self.io(self._cur)["out"] += _nbytes(closure)

        parts_dir = [str(shard_route.parts_dir(self.shard_root, s, self._cur)) for s in range(S)]
        routed = rows_df.mapInArrow(shard_route.route_fn(self.cfg.fmt, rt, starts, parts_dir),
                                    shard_route.ROUTE_SCHEMA).toArrow()
        self.io(self._cur)["in"] += routed.nbytes
        firsts: list[list[int]] = [[] for _ in range(S)]
        for k, first in zip(routed.column("shard").to_pylist(), routed.column("first").to_pylist(), strict=True):
            firsts[k].append(first)

        def shard_part(i):
            return shard_route.shard_run(i, shard_route.read_parts(parts_dir[i], firsts[i]), rt, per_ops[i], base,
                                         settings, extras[i], parts_dir=parts_dir[i])

        return self._got(self._pinned.run(shard_part)), n_rows

    def merge(self, results: list[tuple], driver_events: list[dict], st: dict) -> tuple[pa.Table, dict]:
        """Shard outputs + driver events -> one batch output (:func:`.shard_merge.merge_outputs`)."""
        t0, io = time.perf_counter(), self.io(self._cur)
        out, c, self.alive = merge_outputs(results, driver_events, st, self.S)
        io["merge_s"] = io.get("merge_s", 0.0) + time.perf_counter() - t0
        return out, c

    def finish(self) -> dict[str, Any]:
        """The rows the reorder buffer still holds (gaps accepted), then every shard's
        ``finish()``; written as batch last+1, nothing snapshotted (as in driver mode)."""
        t0 = time.perf_counter()
        last = self.store.latest()
        self._cur = (last if last is not None else -1) + 1
        st = self.load(last)
        waiting0 = len(st.get("waiting", []))
        held = self.reorder.flush()
        outs, c0 = [], {}
        if held is not None:
            out, c0, _ = self._step(st, [], held, released=True)
            outs.append(out)
        P = st["position"]
        clock = {t: (np.array([P], np.int64), np.array([v], np.float64)) for t, v in st["clock"].items()}
        base = self._cur if held is not None else self._cur - 1  # the held rows were batch _cur
        items = [(s, b"", [], base, self.settings(), True, self._extra(st, clock=clock)) for s in range(self.S)]
        results = self._run_shards(items)
        out, c = self.merge(results, [], st)
        outs.append(out)
        k = (last if last is not None else -1) + 1
        sinks.write_batch(self.cfg.out, k, pa.concat_tables(outs))
        c.update(rows_in=0, ops_in=0, rows_applied=0, ops_applied=0, late=0)
        for key in ("rows_in", "rows_applied", "rows_rejected", "outputs", "ops_rejected"):
            c[key] = c.get(key, 0) + c0.get(key, 0)
        c.update(ops_waiting_before=waiting0, ops_waiting=0, ops_applied=waiting0 - c["ops_rejected"])
        return self._report(k, c, {}, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0.0, alive=self.alive,
                            final=True, position=P)
