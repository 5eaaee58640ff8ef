"""Sharded mode: per-shard engines give the events of driver mode (= replay), for every family,
with 2 and 4 shards, and the routing really partitions the keyed state.

Most tests drive ``ShardedProcessor.run_batch`` in-process (no Spark: the shard tasks run one
after another, the same code Spark runs on executors); the end-to-end tests run ``vigil run
--mode sharded`` on a local Spark session."""

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_helpers import assert_same_events, replay, run_outputs

from vigil.history import History
from vigil.pipeline import sinks
from vigil.pipeline.driver import RunConfig, run
from vigil.pipeline.sharded import ShardedProcessor
from vigil.workloads.trades import trade_queries, trades, write_files

pytestmark = pytest.mark.slow

N = 3000
NJ = 2000  # joins (the join oracle-style operators are slow in Python)
NB = 4  # batches


def _batches(t: pa.Table, ops: list, nb: int = NB) -> list[tuple[list, pa.Table]]:
    """Cut the stream into nb batches; each operation arrives with the batch holding element at+1
    (so none is late), except those flagged ``late`` (kept where they are given)."""
    cuts = [t.num_rows * i // nb for i in range(nb + 1)]
    per: list[list] = [[] for _ in range(nb)]
    for o in ops:
        at = o.get("at", 0) if isinstance(o, dict) else 0
        b = next((i for i in range(nb) if at < cuts[i + 1]), nb - 1)
        per[b].append(o)
    return [(per[b], t.slice(cuts[b], cuts[b + 1] - cuts[b])) for b in range(nb)]


def run_inprocess(tmp, batches, shards, **kw) -> tuple[list[dict], ShardedProcessor]:
    cfg = RunConfig(stream="", queries="", out=str(tmp / "out"), checkpoint=str(tmp / "ck"), mode="sharded",
                    shards=shards, quiet=True, **kw)
    cols = set().union(*(t.column_names for _, t in batches))
    p = ShardedProcessor(cfg, cols, None)
    for b, (ops, rows) in enumerate(batches):
        p.run_batch(b, ops, rows)
    p.finish()
    return run_outputs(tmp / "out"), p


def check_equal(tmp, batches, shards, **kw) -> list[dict]:
    got, p = run_inprocess(tmp, batches, shards, **kw)
    cols = set().union(*(t.column_names for _, t in batches))
    ref = replay(batches, columns=cols, **kw).to_pylist()
    assert_same_events(got, ref)
    m = sinks.read_metrics(tmp / "out")
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
    assert sum(x["ops_in"] for x in m) == sum(len(o) for o, _ in batches)
    assert sum(x["ops_rejected"] for x in m) == sum(1 for r in ref if r["event"] == "rejected" and r["id"])
    return got


def _state(p: ShardedProcessor) -> list[dict]:
    return p.shard_states(p.store.latest())


def _stored(shard: dict, family: str) -> int:
    """Elements stored by the shard's operators of one family (their ``seqs`` arrays)."""
    n = 0
    for g in shard["groups"]:
        fam = json.loads(g["key"])[0]
        if fam != family:
            continue
        op = g["state"]["op"]
        if family == "joins":
            n += len(op["left"]["seqs"]) + len(op["right"]["seqs"])
        elif "seqs" in op:  # the oracles keep every element
            n += len(op["seqs"])
        elif "npushed" in op:  # summaries (quantiles=casu, ...): the elements pushed to this shard
            n += int(op["npushed"])
        else:  # the rows-window summary (quantiles.sliding) keeps its counters in meta
            from vigil.quantiles import _sliding_kernels as K

            n += int(op["meta"][K.M_NPUSHED])
    return n


def _history(shard: dict) -> int:
    h = History.state_rows(shard["history"])
    if not len(h):
        return 0
    with pa.ipc.open_stream(pa.py_buffer(h.tobytes())) as r:
        return r.read_all().num_rows


# ----------------------------------------------------------------------------- threshold


@pytest.mark.parametrize("shards", [2, 4])
def test_threshold_keyed_and_keyless(tmp_path, shards):
    t = trades(N, n_symbols=12, with_rel=False, seed=2)
    ops = trade_queries(N, 120, n_symbols=12, families=("threshold",), seed=4)
    # a terminate arriving (in the same batch) before its register, and a duplicate id
    ops += [{"op": "terminate", "at": 600, "id": "k-late"},
            {"op": "register", "at": 10, "query": {"id": "k-late", "type": "threshold",
                                                  "where": {"symbol": "AAPL", "price": [0, None]}, "threshold": 10**9}},
            {"op": "register", "at": 20, "query": {"id": ops[0]["query"]["id"], "type": "threshold",
                                                  "where": {"price": [0, 1]}, "threshold": 1}}]
    got = check_equal(tmp_path, _batches(t, ops), shards, algos={"threshold": "scan"})
    assert sum(1 for r in got if r["event"] == "matured") >= 5


@pytest.mark.parametrize("shards", [2, 4])
def test_rearming_thresholds_stay_alive_after_a_maturity(tmp_path, shards):
    """A re-arming query matures again and again: the driver keeps routing rows to it."""
    t = trades(N, n_symbols=12, with_rel=False, seed=3)
    ops = [{"op": "register", "at": 5, "query": {"id": "every", "type": "threshold", "repeat": True,
                                                "where": {"symbol": "AAPL", "price": [0, None]}, "weight": "shares",
                                                "threshold": 20_000}},
           {"op": "register", "at": 9, "query": {"id": "keyless", "type": "threshold", "repeat": True,
                                                "where": {"price": [0, None]}, "weight": "shares", "threshold": 50_000}}]
    got = check_equal(tmp_path, _batches(t, ops), shards, algos={"threshold": "scan"})
    for ident in ("every", "keyless"):  # (the driver used to stop routing rows at the first maturity)
        assert sum(1 for r in got if r["event"] == "matured" and r["id"] == ident) >= 3, ident


# ----------------------------------------------------------------------------- windows


@pytest.mark.parametrize("shards", [2, 4])
def test_window_aggregates(tmp_path, shards):
    t = trades(N, n_symbols=12, with_rel=False, seed=5)
    ops = [o for o in trade_queries(N, 60, n_symbols=12, families=("window",), seed=6, lookups=15)
           if o["op"] != "register" or o["query"]["type"] == "window_aggregate"]
    got = check_equal(tmp_path, _batches(t, ops), shards)
    assert sum(1 for r in got if r["event"] == "answer" and r["value"] is not None) >= 50
    # the queries of one window group live on one shard (they share its operator there)
    homes: dict[str, set] = {}
    for k, shard in enumerate(_state_after(tmp_path, shards)):
        for g in shard["groups"]:
            if json.loads(g["key"])[0] == "windows":
                homes.setdefault(g["key"], set()).add(k)
    assert len(homes) >= 4 and all(len(h) == 1 for h in homes.values()), homes


# ----------------------------------------------------------------------------- substream filters


def _substream_ops(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    ops: list[dict] = []
    for i in range(16):
        q = {"id": f"sf-{i}", "type": "substream_filter", "key": ["symbol", "rel"][i % 5 == 4],
             "time": float(rng.choice([0.05, 0.2, 0.5])), "time_column": "ts"}
        if i % 3 == 0:
            q |= {"agg": "count", "range": [float(rng.integers(1, 20)), None]}
        elif i % 3 == 1:
            q |= {"agg": "sum", "column": "shares", "range": [float(rng.integers(100, 3000)), None]}
        else:
            q |= {"agg": "sum", "column": "shares", "range": [None, float(rng.integers(500, 5000))]}
        if i % 4 == 3:
            q["epsilon"] = 0.1
        at = int(rng.integers(0, n // 2))
        ops.append({"op": "register", "at": at, "query": q})
        if i % 5 == 2:
            ops.append({"op": "terminate", "at": int(rng.integers(at + 1, n)), "id": q["id"]})
        for j in range(1, 13):
            ops.append({"op": "lookup", "at": n * j // 12, "id": q["id"]})  # some before register / after terminate
    ops.append({"op": "lookup", "at": n + 50, "id": "sf-0"})  # beyond the end: answered by finish
    return sorted(ops, key=lambda o: o["at"])


@pytest.mark.parametrize("shards", [2, 4])
def test_substream_filters(tmp_path, shards):
    t = trades(N, n_symbols=12, seed=7)
    ops = _substream_ops(N, seed=8)
    got = check_equal(tmp_path, _batches(t, ops), shards)
    answers = [r for r in got if r["event"] == "answer"]
    assert sum(1 for r in answers if len(r["keys"]) >= 2) >= 20
    assert any(r["event"] == "rejected" and r["id"] for r in got)  # lookups of dead queries, kept once
    if shards == 4:  # every shard counts only its keys: the elements are split, not copied
        per = [_stored(s, "substream") for s in _state_after(tmp_path)]
        assert max(per) < 0.7 * sum(per)


def _proc(tmp_path, shards: int = 4) -> ShardedProcessor:
    cfg = RunConfig(stream="", queries="", out=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"),
                    mode="sharded", shards=shards, quiet=True)
    return ShardedProcessor(cfg, None, None)


def _state_after(tmp_path, shards: int = 4) -> list[dict]:
    return _state(_proc(tmp_path, shards))


# ----------------------------------------------------------------------------- joins


def _join_ops(n: int, seed: int, late_from: int = 0) -> list[dict]:
    """select/window joins on symbol, a select join on shares (a second equality column: rows are
    routed for two keys), band joins; registered over the whole stream (later ones join with old
    tuples: history re-shuffled), some terminated."""
    rng = np.random.default_rng(seed)
    ops: list[dict] = []
    for i in range(18):
        kind = ["select_join", "window_join", "band_join", "select_join"][i % 4]
        q = {"id": f"j-{i}", "type": kind, "left": "buy", "right": "sell"}
        if kind == "band_join":
            q |= {"left_on": "nasdaq", "right_on": "nasdaq", "band": [0.0, float(rng.choice([0.02, 0.05]))]}
        elif i % 4 == 3:
            q |= {"left_on": "shares", "right_on": "shares", "left_range": {"price": [0, float(rng.integers(100, 500))]}}
        else:
            q |= {"left_on": "symbol", "right_on": "symbol",
                  "left_range": {"price": [float(rng.integers(20, 200)), None]},
                  "right_range": {"shares": [float(rng.integers(10, 200)), None]}}
            if kind == "window_join":
                q |= {"window": float(rng.choice([0.05, 0.3])), "time_column": "ts"}
        at = int(rng.integers(late_from, n))
        ops.append({"op": "register", "at": at, "query": q})
        if i % 3 == 1:
            ops.append({"op": "terminate", "at": int(rng.integers(at + 1, n + 1)), "id": q["id"]})
    ops.append({"op": "lookup", "at": 5, "id": "j-0"})  # rejected (joins push events), once
    return sorted(ops, key=lambda o: o["at"])


@pytest.mark.parametrize("shards,mode", [(2, "pairs"), (4, "pairs"), (4, "affected")])
def test_joins(tmp_path, shards, mode):
    t = trades(NJ, n_symbols=12, seed=9)
    ops = _join_ops(NJ, seed=10)
    got = check_equal(tmp_path, _batches(t, ops), shards, join_output=mode)
    ev = "join" if mode == "pairs" else "affected"
    ids = {r["id"] for r in got if r["event"] == ev}
    assert len(ids) >= 10 and any(i in ids for i in ("j-2", "j-6")) and any(i in ids for i in ("j-3", "j-7"))


@pytest.mark.parametrize("band", [False, True])
def test_join_history_is_partitioned(tmp_path, band):
    """4 shards, equality joins on one column: every relation row is kept by exactly one shard
    (its key's), as history and in the join operators; a band join adds one full copy, at its home."""
    t = trades(N, n_symbols=40, zipf_a=0.5, seed=15)
    ops = [o for o in _join_ops(N, seed=16) if o["op"] != "register" or o["query"]["left_on"] == "symbol"
           or (band and o["query"]["type"] == "band_join")]
    check_equal(tmp_path, _batches(t, ops), 4)
    st = _state_after(tmp_path)
    hist = [_history(s) for s in st]
    if band:  # the band joins' homes hold both relations whole, the other shards their keys
        homes = {v for k, v in _proc(tmp_path).load(0 + NB - 1)["home"].items() if k in ("j-2", "j-6", "j-10", "j-14")}
        assert homes and all(hist[k] == N for k in homes), (homes, hist)
        assert all(hist[k] < 0.5 * N for k in range(4) if k not in homes), hist
    else:
        assert sum(hist) == N, hist
        assert max(hist) < 0.5 * N, hist
        per_group: dict[str, list[int]] = {}
        for k, shard in enumerate(st):
            for g in shard["groups"]:
                op = g["state"]["op"]
                per_group.setdefault(g["key"], [0] * 4)[k] = len(op["left"]["seqs"]) + len(op["right"]["seqs"])
        assert len(per_group) >= 2
        for counts in per_group.values():  # each join group: its partition on each shard
            assert sum(counts) == N and max(counts) < 0.5 * N, counts


@pytest.mark.parametrize("shards", [2, 4])
def test_joins_registered_late_join_with_old_tuples(tmp_path, shards):
    """Every join registered in the last batches: the earlier rows (routed by seq, no placement
    yet) are re-shuffled to the key shards as history."""
    t = trades(NJ, n_symbols=12, seed=11)
    ops = _join_ops(NJ, seed=12, late_from=NJ // 2)
    got = check_equal(tmp_path, _batches(t, ops), shards)
    assert any(r["event"] == "join" and min(r["r"], r["s"]) < NJ // 2 for r in got)


# ----------------------------------------------------------------------------- quantiles


@pytest.mark.parametrize("shards", [2, 4])
def test_quantiles(tmp_path, shards):
    t = trades(N, n_symbols=12, with_rel=False, seed=13)
    ops = trade_queries(N, 40, n_symbols=12, families=("quantile", "alert_quantile", "keyed_quantile",
                                                       "rank_quantile"), seed=14, lookups=12)
    # notify queries (each answer pushed as it changes): whole stream, rows window, clustered
    ops += [{"op": "register", "at": at, "query": {"id": f"qn-{i}", "type": "quantile", "column": col,
                                                   "phi": phi, "epsilon": 0.02, "notify": notify, **extra}}
            for i, (at, col, phi, notify, extra) in enumerate([
                (0, "price", 0.5, True, {}), (350, "shares", 0.9, True, {}), (700, "price", 0.25, "cluster", {}),
                (10, "price", 0.75, True, {"rows": 300})])]
    ops += [{"op": "register", "at": 100, "query": {"id": "qs", "type": "quantile", "column": "shares",
                                                    "phi": 0.25, "epsilon": 0.01, "rows": 37}},
            *({"op": "lookup", "at": a, "id": "qs"} for a in (100, 101, 102, 137, 999, 2999, N + 10))]
    # a join refused by the engines (no 'rel' column): its id is free for a later quantile query
    ops += [{"op": "register", "at": 5, "query": {"id": "x", "type": "band_join", "left": "R", "right": "S",
                                                 "left_on": "price", "right_on": "price", "band": [0, 1]}},
            {"op": "register", "at": 900, "query": {"id": "x", "type": "quantile", "column": "shares", "phi": 0.5,
                                                   "epsilon": 0.01, "rows": 200}},
            *({"op": "lookup", "at": a, "id": "x"} for a in (1000, 2000, 2999))]
    ops.sort(key=lambda o: o["at"])
    got = check_equal(tmp_path, _batches(t, ops), shards)
    ans = [r for r in got if r["event"] == "answer"]
    assert sum(1 for r in ans if r["value"] is not None) >= 100 and any(r["value"] is None for r in ans)
    assert any(o["query"].get("rows") for o in ops if o["op"] == "register")
    kinds = {r["event"] for r in got if (r["id"] or "").startswith(("qn-", "alert_", "keyed_", "rank_"))}
    assert {"update", "answer"} <= kinds, kinds
    # the queries of one quantile group live on one shard (they share its summaries there), and
    # the groups spread over the shards
    homes: dict[str, set] = {}
    for k, shard in enumerate(_state_after(tmp_path, shards)):
        for g in shard["groups"]:
            if json.loads(g["key"])[0] == "quantiles":
                homes.setdefault(g["key"], set()).add(k)
    assert len(homes) >= 4 and all(len(h) == 1 for h in homes.values()), homes
    assert len(set().union(*homes.values())) > 1, homes


# ----------------------------------------------------------------------------- Spark end to end


@pytest.mark.parametrize("shards", [2, 4])
def test_sharded_every_family_on_spark(spark, tmp_path, shards):
    """All families at once through Spark; with 4 shards in two runs: the second brings joins
    registered late (history re-shuffle across runs, restored from the checkpoint) and a late lookup."""
    n = 2000
    t = trades(n, n_symbols=10, seed=21)
    ops1 = trade_queries(n // 2, 60, n_symbols=10, seed=22, lookups=6,
                         families=("threshold", "window", "substream", "quantile"))
    ops1 += _substream_ops(n // 2, seed=23)[:30]
    ops1 += [{"op": "terminate", "at": 50, "id": "nobody"}, "{broken",  # rejected (by the driver / shard 0)
             {"op": "register", "at": 10, "query": {"id": ops1[0]["query"]["id"], "type": "quantile",
                                                    "column": "price", "phi": 0.5, "epsilon": 0.1}}]
    ops2 = _join_ops(n, seed=24, late_from=n // 2)[:12] + [{"op": "lookup", "at": 100, "id": "sf-0"}]
    c = RunConfig(stream=str(tmp_path / "s"), queries=str(tmp_path / "q"), out=str(tmp_path / "out"),
                  checkpoint=str(tmp_path / "ck"), mode="sharded", shards=shards, max_files_per_batch=1,
                  quiet=True, algos={"threshold": "scan"}, finish=False)
    if shards == 4:  # two runs (the second restores the shards from the checkpoint)
        write_files(t.slice(0, n // 2), ops1, tmp_path / "s", tmp_path / "q", n_files=2)
        run(c, spark)
        write_files(t.slice(n // 2), ops2, tmp_path / "s", tmp_path / "q", n_files=2, first=2)
        batches = [(ops1, t.slice(0, n // 2)), (ops2, t.slice(n // 2))]
    else:  # one run (Spark's per-run start-up is the cost of this test)
        write_files(t, ops1 + ops2, tmp_path / "s", tmp_path / "q", n_files=3)
        c.max_files_per_batch = 2
        batches = [(ops1 + ops2, t)]
    c.finish = True
    run(c, spark)
    ref = replay(batches, columns=set(t.column_names), algos={"threshold": "scan"})
    got = run_outputs(tmp_path / "out")
    assert_same_events(got, ref.to_pylist())
    kinds = {r["event"] for r in got}
    assert {"matured", "answer", "join"} <= kinds and ("late" in kinds) == (shards == 4)
    assert sum(1 for r in got if r["event"] == "rejected" and r["id"]) >= 3
    m = sinks.read_metrics(tmp_path / "out")
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
    assert sum(x["rows_in"] for x in m) == n and sum(x["ops_in"] for x in m) == len(ops1) + len(ops2)


# ----------------------------------------------------------------------------- all families, restarts


def test_every_family_with_restart_and_failed_attempt(tmp_path, monkeypatch):
    """4 shards, every family, late operations; batch 1 fails once mid-way (the retry must start
    from snapshot 0, not from the half-updated routing table); then a new processor (a restarted
    driver) replays batch 2 (skipped: its snapshot exists) and goes on."""
    n = 1600
    t = trades(n, n_symbols=12, seed=31)
    ops = trade_queries(n, 40, n_symbols=12, seed=32, lookups=6, families=("threshold", "window", "quantile"))
    joins = [o for o in _join_ops(n, seed=34) if o["op"] == "register" and o["query"]["id"] in ("j-0", "j-2", "j-3")]
    ops += _substream_ops(n, seed=33)[:60] + joins
    batches = _batches(t, sorted(ops, key=lambda o: o["at"]))
    batches[2][0].append({"op": "lookup", "at": 10, "id": "sf-1"})  # late
    cfg = RunConfig(stream="", queries="", out=str(tmp_path / "out"), checkpoint=str(tmp_path / "ck"), mode="sharded",
                    shards=4, quiet=True)
    cols = set(t.column_names)
    p = ShardedProcessor(cfg, cols, None)
    p.run_batch(0, *batches[0])
    real = p._run_shards
    monkeypatch.setattr(p, "_run_shards", lambda items, *a: (_ for _ in ()).throw(RuntimeError("executor lost")))
    with pytest.raises(RuntimeError):
        p.run_batch(1, *batches[1])
    monkeypatch.setattr(p, "_run_shards", real)
    p.run_batch(1, *batches[1])
    p.run_batch(2, *batches[2])
    q = ShardedProcessor(cfg, cols, None)  # restarted driver
    q.run_batch(2, *batches[2])  # Spark re-runs the uncommitted batch: skipped
    q.run_batch(3, *batches[3])
    q.finish()
    got = run_outputs(tmp_path / "out")
    ref = replay(batches, columns=cols).to_pylist()
    assert_same_events(got, ref)
    kinds = {r["event"] for r in got}
    assert {"matured", "answer", "join", "late", "rejected"} <= kinds


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.floats(-1e3, 1e3), st.just(float("nan"))), min_size=0, max_size=60), st.integers(1, 5),
       st.sampled_from([0.01, 0.25, 0.5, 0.9, 1.0]), st.one_of(st.none(), st.integers(1, 30)), st.integers(0, 10))
def test_quantile_summaries_merge_exactly(values, k, phi, rows, start):
    """Oracles fed the elements partitioned by seq mod k: merged summaries answer as one oracle."""
    from vigil.quantiles import answer_from_summary, merge_summaries
    from vigil.quantiles.oracle import QuantileOracle

    seqs = np.arange(1, len(values) + 1, dtype=np.int64)
    vals = np.array(values, np.float64)
    whole = QuantileOracle(0.01, rows)
    whole.register(0, phi, 0.01, start)
    whole.push(vals, seqs)
    parts = []
    for j in range(k):
        op = QuantileOracle(0.01, rows)
        op.register(0, phi, 0.01, start)
        m = seqs % k == j
        op.push(vals[m], seqs[m])
        parts.append(op)
    for n in range(0, len(values) + 2, 7):
        want = whole.lookup(np.array([0]), n)[0]
        got = answer_from_summary(merge_summaries([op.summary(0, n) for op in parts]), phi)
        assert (np.isnan(want) and np.isnan(got)) or want == got
