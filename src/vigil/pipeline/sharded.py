"""``vigil run --mode sharded``: per-shard Engines on Spark executors, one coarse state blob each.

Each micro-batch is ordered on the driver exactly as in driver mode (global ``seq``), then cut
into per-shard work units that run as Spark tasks (one task per shard)::

    shard task: Engine.restore(blob) -> [add_history(rows of new join placements)]
                -> add_operations(ops of the shard) -> process(rows of the shard, with their
                global seq, + which of them the shard owns) -> advance(global position)
                -> (outputs, quantile summaries, new blob)

The shard blobs (each an ``Engine.snapshot()``) plus the driver's routing table form the batch's
snapshot, written atomically exactly as in driver mode, so the exactly-once protocol of
:mod:`.driver` holds unchanged. Spark never holds one state key per query.

Routing (``home`` = the shard that holds a query; "shared" = the query is on every shard):

* threshold with equality keys (``"symbol": "AAPL"``): home = hash(key values); a row goes to the
  shard of its own key values (for every key-column set in use);
* key-less threshold and window aggregates (no key in their spec): home = hash(id); the shards
  holding any of them receive every row;
* equality joins (select_join, window_join): shared; for every (relation, join column) in use,
  a row of that relation goes to shard hash(value of the join column), so each shard holds only
  its key partition of the join history; each join group is fed only its own key partition
  (``Partial.own["join:<left,left_on,right,right_on>"]``), so every result pair is found on the
  shard of its key (a pair that several shards report, e.g. a relation joined with itself on two
  columns, is kept once by the driver);
* band joins (no equality): home = hash(id); the rows of their two relations go to the home;
* rows of a relation no join uses yet: shard seq mod N (kept as history, once);
* a new (relation, column) or (relation, band home) placement re-shuffles the relation's earlier
  rows (read from the shard blobs on the driver) to the shards it sends that relation to, as
  join history (``Engine.add_history``): a new join query joins with old tuples as in driver mode;
* substream filters: shared; a row goes to shard hash(row[key]) for each key column in use and
  that shard owns its keys (``Partial.own["key:<col>"]``); a lookup is answered by every shard on
  its keys and the driver returns the sorted union; the time window uses the global time of
  element n (``Partial.clock``), not the shard's last element;
* quantiles: shared; rows are partitioned by seq mod N, each shard keeps the summary of its part
  (``Partial.own["seq"]``); a lookup collects every shard's summary (``QuantileOperator.summary``),
  the driver merges them (``vigil.quantiles.merge_summaries``) and answers;
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
import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vigil.events import ERROR_COLUMN, OUTPUT_SCHEMA, numeric_column, seq_column
from vigil.state import pack, unpack

from . import sinks
from .driver import CheckpointError, DriverProcessor, RunConfig

ALL = -1  # home of a query held by every shard
_REFUSED = ("unsupported by ", "join queries need ")  # engine reasons that refuse a valid register
KEYED, SPREAD, BAND, SHARED = "keyed", "spread", "band", "shared"
STATE_VERSION = 2


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
    for key in eng.where.values():
        fam, params = json.loads(key)
        if fam in ("substream", "quantiles") or (fam == "joins" and params.get("kind") != "band"):
            fam = "shared:" + fam
        per[fam] = per.get(fam, 0) + 1
    return per


def shard_task(item: tuple) -> tuple:
    """Runs on an executor: one shard's work for one batch (or its end of input)."""
    import os

    os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "vigil-numba"))
    from vigil.engine import Engine, Partial

    shard, rows_b, ops, blob, settings, final, extra = item
    eng = Engine.restore(blob) if blob else Engine(**settings)
    t0 = time.perf_counter()
    summaries: list = []
    eng.partial = Partial(own=extra.get("own"), clock=extra.get("clock"), summaries=summaries)
    if extra.get("hist"):
        eng.add_history(_unipc(extra["hist"]))
    if final:
        out = eng.finish()
    else:
        if ops:
            eng.add_operations(ops)
        out = eng.process(_unipc(rows_b))
        more = eng.advance(extra["position"])
        if more.num_rows:
            out = pa.concat_tables([out, more])
    eng.partial = None
    dt = time.perf_counter() - t0
    return shard, _ipc(out), eng.snapshot(), _alive_split(eng), dt, summaries


class ShardedProcessor(DriverProcessor):
    def __init__(self, cfg: RunConfig, columns: set[str] | None, spark) -> None:
        super().__init__(cfg, columns)
        self.spark = spark
        self.S = max(1, int(cfg.shards))
        self.state: dict[str, Any] | None = None
        self.alive: dict[str, int] = {}

    # ---------------------------------------------------------------- state
    def fresh(self) -> dict[str, Any]:
        # home: id -> shard or ALL; kind: id -> KEYED/SPREAD/BAND/SHARED; fam: id -> family;
        # alive: id -> position of its terminate (-1: none yet), while it may see rows;
        # keysig: keyed threshold id -> key items; sub: substream id -> [key column, time column];
        # place: join placements (see join_destinations), never removed (they are history);
        # jsigs: equality join signatures [left, left_on, right, right_on] (ownership tags);
        # clock: time column -> time of the last element (running max) for substream lookups
        return {"version": STATE_VERSION, "position": 0, "maxseq": 0, "home": {}, "kind": {}, "fam": {},
                "alive": {}, "keysig": {}, "sub": {}, "place": [], "jsigs": [], "clock": {}, "blobs": [b""] * self.S}

    def load(self, k: int | None) -> dict[str, Any]:
        if k is None or k < 0:
            return self.fresh()
        data = self.store.load(k)
        if data is None:
            raise CheckpointError(f"no shard snapshot for batch {k} in {self.store.dir}")
        s = unpack(data)
        if s.get("version") != STATE_VERSION:
            raise CheckpointError(f"shard snapshot {k} has version {s.get('version')!r}, expected {STATE_VERSION}")
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
    def _home_of(self, st: dict, ident: str, spec) -> int:
        """Decide (and record) where a newly registered query lives; adds join placements."""
        from vigil.specs import BandJoinSpec, QuantileSpec, SubstreamFilterSpec, ThresholdSpec

        fam = spec.family
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
        elif isinstance(spec, QuantileSpec):
            home, kind = ALL, SHARED
        else:  # key-less threshold, window aggregates
            home, kind = _h(ident, self.S), SPREAD
        st["home"][ident], st["kind"][ident], st["fam"][ident] = home, kind, fam
        st["alive"][ident] = -1
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

    def route_rows(self, st: dict, rows: pa.Table, ids: list[str]) -> tuple[list[np.ndarray], list[dict]]:
        """Per shard: which rows it receives, and the ownership masks (over those rows)."""
        n = rows.num_rows
        S = self.S
        masks = [np.zeros(n, bool) for _ in range(S)]
        seqs = np.asarray(rows.column("seq").to_numpy(zero_copy_only=False), np.int64)
        own: list[dict[str, np.ndarray]] = [{} for _ in range(S)]
        memo: dict[str, np.ndarray] = {}

        def dest_of(col: str) -> np.ndarray:  # shard of hash(text of column) per row, once per column
            if col not in memo:
                memo[col] = _shard_of(_text(rows, col), S)
            return memo[col]

        for i in ids:
            if st["kind"].get(i) == SPREAD:
                masks[st["home"][i]][:] = True
        if ERROR_COLUMN in rows.column_names:  # malformed rows: rejected once, by shard 0
            masks[0] |= np.asarray(rows.column(ERROR_COLUMN).is_valid().to_numpy(zero_copy_only=False), bool)
        # keyed threshold: by the key values, per key-column set in use
        sigs = {tuple(c for c, _ in st["keysig"][i]) for i in ids if st["kind"].get(i) == KEYED}
        for sig in sigs:
            if any(c not in rows.column_names for c in sig):
                continue
            parts = [_text(rows, c, f"{c}=") for c in sig]
            joined = parts[0] if len(parts) == 1 else pc.binary_join_element_wise(*parts, "\x1f")
            dest = _shard_of(joined, S)
            for k in range(S):
                masks[k] |= dest == k
        # joins: placements; relation rows no placement covers go to seq mod S (history, once)
        if "rel" in rows.column_names:
            jm, covered = join_destinations(rows, st["place"], S, dest_of)
            rest = np.asarray(rows.column("rel").is_valid().to_numpy(zero_copy_only=False), bool) & ~covered
            for k in range(S):
                jm[k] |= rest & (seqs % S == k)
                masks[k] |= jm[k]
                own[k]["rel"] = jm[k]
            for sig in st["jsigs"]:  # an equality join group owns its key partition, nothing more
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
        # substream filters: by key, per key column in use
        for col in sorted({st["sub"][i][0] for i in ids if i in st["sub"]}):
            dest = dest_of(col)
            for k in range(S):
                own[k]["key:" + col] = dest == k
                masks[k] |= dest == k
        # quantiles: by seq
        part = seqs % S
        for k in range(S):
            own[k]["seq"] = part == k
        if any(st["fam"].get(i) == "quantiles" for i in ids):
            for k in range(S):
                masks[k] |= part == k
        own = [{t: m[masks[k]] for t, m in own[k].items()} for k in range(S)]
        return masks, own

    def clock(self, st: dict, rows: pa.Table, ids: list[str], before: int) -> dict[str, tuple]:
        """Global time per time column of the substream filters in use (running max; see Partial)."""
        out = {}
        seqs = np.asarray(rows.column("seq").to_numpy(zero_copy_only=False), np.int64)
        for tcol in sorted({st["sub"][i][1] for i in ids if i in st["sub"]}):
            carry = float(st["clock"].get(tcol, -math.inf))
            t = numeric_column(rows, tcol)[0] if tcol in rows.column_names else np.full(len(seqs), np.nan)
            t = np.where(np.isfinite(t), t, -math.inf)
            run = np.maximum.accumulate(np.r_[carry, t])
            out[tcol] = (np.r_[before, seqs].astype(np.int64), run)
            st["clock"][tcol] = float(run[-1])
        return out

    def reshuffle(self, st: dict, places: list[list]) -> list[bytes]:
        """Earlier rows of the relations of new placements, read from the shard blobs, cut per
        shard by those placements (IPC bytes, b"" for none)."""
        rels = {p[0] for p in places}
        parts = []
        for blob in st["blobs"]:
            if not blob:
                continue
            h = unpack(blob)["history"]
            if len(h):
                t = _unipc(h.tobytes())
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
        if self.S == 1 or self.spark is None:  # no Spark: in-process (tests, one shard)
            return [shard_task(it) for it in items]
        rdd = self.spark.sparkContext.parallelize(items, len(items))
        return sorted(rdd.map(shard_task).collect(), key=lambda r: r[0])

    def __call__(self, df, batch_id: int) -> None:
        t0 = time.perf_counter()
        if self.store.load(batch_id) is not None:
            self.state, self.batch = self.load(batch_id), batch_id
            self._report(batch_id, {}, {}, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0, skipped=True)
            return
        ops, rows, files = self.collect_split(df)
        self.run_batch(batch_id, ops, rows, len(files), t0, time.perf_counter() - t0)

    def run_batch(self, batch_id: int, ops: list, rows: pa.Table, n_files: int = 0, t0: float | None = None,
                  t_collect: float = 0.0) -> pa.Table:
        """One batch from its collected operations and rows (ordered); returns its output."""
        t0 = time.perf_counter() if t0 is None else t0
        if self.state is None or self.batch != batch_id - 1:
            self.state = self.load(batch_id - 1)
        st = self.state
        self.batch = None  # st is mutated below: a failed attempt must reload it
        before = st["position"]
        self._new_places: list[list] = []
        was_alive = set(self.in_use(st, before))
        per_ops, events, ops_rej = self.route_ops(st, ops)
        ids = sorted(was_alive | set(self.in_use(st, before)))
        hist = self.reshuffle(st, self._new_places) if self._new_places else [b""] * self.S
        rows, seq_events = self.global_seq(st, rows)
        masks, own = self.route_rows(st, rows, ids)
        clock = self.clock(st, rows, ids, before)
        items = []
        for s in range(self.S):
            part = rows.filter(pa.array(masks[s])) if rows.num_rows else rows
            extra = {"own": own[s], "clock": clock, "hist": hist[s], "position": st["position"]}
            items.append((s, _ipc(part), per_ops[s], st["blobs"][s], self.settings(), False, extra))
        t1 = time.perf_counter()
        results = self._run_shards(items)
        t_engine = time.perf_counter() - t1
        out, c = self.merge(results, events + seq_events, st)
        for i in [i for i, end in st["alive"].items() if end != -1 and end <= st["position"]]:
            del st["alive"][i]  # terminated: sees no later element
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
        self._report(batch_id, c, {}, n_files, len(snap), time.perf_counter() - t0, t_collect, t_engine,
                     t_snap, alive=self.alive, position=st["position"])
        return out

    def merge(self, results: list[tuple], driver_events: list[dict], st: dict) -> tuple[pa.Table, dict]:
        """Shard outputs + driver events -> one batch output (columnar: a batch may carry millions
        of join pairs). Shard 'late' events are dropped (the driver reports lateness globally); a
        row rejected by several shards is kept once; for shared queries, rejections are taken
        from shard 0, lookup answers are merged (substream: union of keys; quantiles: merged
        summaries) and join pairs / affected events found on several shards are kept once."""
        from vigil.quantiles import answer_from_summary, merge_summaries

        alive: dict[str, int] = {}
        tabs: list[pa.Table] = []
        summ: dict[tuple, tuple[float, list]] = {}
        for shard, out_b, blob, al, _dt, sums in results:
            st["blobs"][shard] = blob
            for k, v in al.items():
                alive[k] = max(alive.get(k, 0), v) if k.startswith("shared:") else alive.get(k, 0) + v
            t = _unipc(out_b)
            if t.num_rows:
                tabs.append(t.append_column("_shard", pa.array(np.full(t.num_rows, shard, np.int64))))
            nth: dict[tuple, int] = {}
            for at, ident, phi, summary in sums:
                k = (at, ident)
                nth[k] = nth.get(k, -1) + 1
                summ.setdefault((*k, nth[k]), (phi, []))[1].append(summary)
        self.alive = {}
        for k, v in alive.items():
            fam = k.removeprefix("shared:")
            self.alive[fam] = self.alive.get(fam, 0) + v
        extra: list[dict] = list(driver_events)
        rows_rej = ops_rej = 0
        if tabs:
            t = pa.concat_tables(tabs)
            n = t.num_rows
            ev = np.asarray(t.column("event").to_numpy(zero_copy_only=False), object)
            has_id = np.asarray(t.column("id").is_valid().to_numpy(zero_copy_only=False), bool)
            shared_ids = [i for i, h in st["home"].items() if h == ALL]
            shared = (np.asarray(pc.fill_null(pc.is_in(t.column("id"), value_set=pa.array(shared_ids, pa.string())),
                                              False).to_numpy(zero_copy_only=False), bool)
                      if shared_ids else np.zeros(n, bool))
            shard = np.asarray(t.column("_shard").to_numpy(), np.int64)
            at = np.asarray(pc.fill_null(t.column("at"), -1).to_numpy(zero_copy_only=False), np.int64)
            keep = ev != "late"
            rej = ev == "rejected"
            row_rej = rej & ~has_id  # shards only see operations with an id: these are rows
            if row_rej.any():
                idx = np.flatnonzero(row_rej)
                _, first = np.unique(at[idx], return_index=True)
                keep[idx] = False
                keep[idx[first]] = True
            keep &= ~(rej & has_id & shared & (shard != 0))
            answers = (ev == "answer") & shared
            if answers.any():  # substream filters: union of the shards' keys, per lookup
                keys: dict[tuple, set] = {}
                nth = {}
                sub = t.filter(pa.array(answers)).select(["id", "at", "keys", "_shard"]).to_pylist()
                for r in sub:
                    k = (r["_shard"], r["at"], r["id"])
                    nth[k] = nth.get(k, -1) + 1
                    keys.setdefault((r["at"], r["id"], nth[k]), set()).update(r["keys"] or [])
                extra.extend(_ev("answer", i, a, keys=sorted(ks)) for (a, i, _), ks in keys.items())
                keep &= ~answers
            pairs = np.flatnonzero(keep & ((ev == "join") | (ev == "affected")))
            if len(pairs):
                sub = t.take(pa.array(pairs))
                code = np.asarray(pc.dictionary_encode(sub.column("id")).combine_chunks().indices.to_numpy(
                    zero_copy_only=False), np.int64)
                key = np.stack([(ev[pairs] == "join").astype(np.int64), code, at[pairs],
                                np.asarray(pc.fill_null(sub.column("r"), 0).to_numpy(zero_copy_only=False), np.int64),
                                np.asarray(pc.fill_null(sub.column("s"), 0).to_numpy(zero_copy_only=False), np.int64)],
                               axis=1)
                _, first = np.unique(key, axis=0, return_index=True)
                keep[pairs] = False
                keep[pairs[first]] = True
            matured = keep & (ev == "matured")
            for ident in t.column("id").filter(pa.array(matured)).to_pylist():
                st["alive"].pop(ident, None)
            op_rej = keep & rej & has_id
            if op_rej.any():  # a register the engines refused (after a valid spec): the id is free again
                for r in t.filter(pa.array(op_rej)).select(["id", "reason"]).to_pylist():
                    if (r["reason"] or "").startswith(_REFUSED):
                        for k in ("home", "kind", "fam", "alive", "keysig", "sub"):
                            st[k].pop(r["id"], None)
            rows_rej = int((keep & row_rej).sum())
            ops_rej = int((keep & rej & has_id).sum())
            kept = t.filter(pa.array(keep)).drop_columns(["_shard"])
        else:
            kept = OUTPUT_SCHEMA.empty_table()
        for (a, ident, _), (phi, parts) in summ.items():
            v = answer_from_summary(merge_summaries(parts), phi)
            extra.append(_ev("answer", ident, a, value=None if math.isnan(v) else v))
        out = pa.concat_tables([kept.cast(OUTPUT_SCHEMA), pa.Table.from_pylist(extra, schema=OUTPUT_SCHEMA)])
        order = pc.sort_indices(out, sort_keys=[(c, "ascending", "at_start")
                                                for c in ("at", "event", "id", "r", "s", "reason")])
        out = out.take(order)
        c = {"rows_rejected": rows_rej, "ops_rejected": ops_rej,
             "outputs": out.num_rows - int(pc.sum(pc.equal(out.column("event"), "rejected")).as_py() or 0)}
        return out, c

    def finish(self) -> dict[str, Any]:
        t0 = time.perf_counter()
        last = self.store.latest()
        st = self.load(last)
        P = st["position"]
        clock = {t: (np.array([P], np.int64), np.array([v], np.float64)) for t, v in st["clock"].items()}
        items = [(s, b"", [], st["blobs"][s], self.settings(), True, {"clock": clock}) for s in range(self.S)]
        results = self._run_shards(items)
        out, c = self.merge(results, [], st)
        k = (last if last is not None else -1) + 1
        sinks.write_batch(self.cfg.out, k, out)
        c.update(rows_in=0, ops_in=0, rows_applied=0, ops_applied=0, late=0)
        return self._report(k, c, {}, 0, 0, time.perf_counter() - t0, 0.0, 0.0, 0.0, alive=self.alive,
                            final=True, position=P)


def _ev(event: str, ident: str | None, at: int | None, **kw) -> dict:
    return {"event": event, "id": ident, "at": at, "value": kw.get("value"), "keys": kw.get("keys"),
            "r": None, "s": None, "reason": kw.get("reason")}

