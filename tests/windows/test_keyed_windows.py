"""Per-key window aggregates (``where`` / ``group_by``): exact against the keyed oracle on random
logs (thousands of keys, several batch sizes, late registrations, lookups between elements,
rejected rows, windows longer than the stream, snapshots), the contract's semantics on hand-made
streams, one shared structure per key (memory independent of the number of queries), and the
same answers through ``vigil replay`` and ``vigil.Monitor``."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from vigil.api import Monitor
from vigil.checks import Log, check_family, run_log
from vigil.engine import Engine


def _q(ident, agg="max", rows=(5, 0), time=None, **kw):
    q = {"id": ident, "type": "window_aggregate", "agg": agg, "column": "price", **kw}
    if time is not None:
        q["time"] = list(time)
    else:
        q["rows"] = list(rows)
    if agg == "count":
        q.pop("column")
    return q


def _reg(q, at=0):
    return {"op": "register", "at": at, "query": q}


def _look(ident, at):
    return {"op": "lookup", "at": at, "id": ident}


def _answers(rows, ident):
    return [(r["at"], r.get("keys"), r["value"]) for r in rows if r["event"] == "answer" and r["id"] == ident]


TRADES = pa.table({"symbol": ["AAPL", "MSFT", "AAPL", "AAPL", "MSFT", "AAPL", "GOOG", "AAPL", "AAPL", "AAPL"],
                   "price": [10.0, 50.0, 12.0, 9.0, 51.0, 15.0, 99.0, 11.0, 8.0, 7.0],
                   "ts": [1.0, 2.0, 3.0, 5.0, 8.0, 9.0, 9.0, 12.0, 13.0, 20.0]})


def test_last_5_aapl_trades_and_group_by():
    ops = [_reg(_q("a", rows=(5, 0), where={"symbol": "AAPL"})),
           _reg(_q("g", agg="sum", rows=(2, 0), group_by="symbol")),
           _reg(_q("h", agg="count", rows=(3, 1), where={"symbol": "AAPL"})),
           _reg(_q("t", agg="avg", time=(5, 0), where={"symbol": "AAPL", "price": [9, 20]})),
           _reg(_q("e", rows=(5, 0), where={"symbol": "IBM"})),
           _look("a", 4), _look("a", 10), _look("g", 0), _look("g", 7), _look("h", 10), _look("t", 10), _look("e", 10)]
    for batch in (1, 3, 10):
        rows = run_log(Log(TRADES, ops, batch=batch))
        # AAPL prices 10, 12, 9, 15, 11, 8, 7: the last 5 after element 10 are 9, 15, 11, 8, 7
        assert _answers(rows, "a") == [(4, None, 12), (10, None, 15)]
        assert _answers(rows, "g") == [(0, None, []),  # no key has an element: one answer, an empty key list
                                       (7, ["AAPL"], 24), (7, ["GOOG"], 99), (7, ["MSFT"], 101)]
        assert _answers(rows, "h") == [(10, None, 2)]  # [c-2, c-1]: the 2 AAPL rows before the newest
        # now = 20 (the stream's clock, the last row's time): AAPL rows with ts in (15, 20] and price in [9, 20]: none
        assert _answers(rows, "t") == [(10, None, None)]
        assert _answers(rows, "e") == [(10, None, None)]


def test_keyed_query_counts_only_rows_after_its_registration():
    """As every window (docs/contract.md): a query registered at 5 counts AAPL rows 6.. only."""
    ops = [_reg(_q("a", rows=(5, 0), where={"symbol": "AAPL"}), at=5), _reg(_q("g", rows=(5, 0), group_by="symbol"), at=5),
           _look("a", 5), _look("a", 6), _look("a", 10), _look("g", 7)]
    rows = run_log(Log(TRADES, ops, batch=4))
    assert _answers(rows, "a") == [(5, None, None), (6, None, 15), (10, None, 15)]
    assert _answers(rows, "g") == [(7, ["AAPL"], 15), (7, ["GOOG"], 99)]


def test_null_key_rows_rejected_for_group_by_only():
    t = pa.table({"symbol": ["a", None, "a", "b"], "price": [1.0, 2.0, None, 4.0]})
    where = run_log(Log(t, [_reg(_q("w", where={"symbol": "b"})), _look("w", 4)]))
    assert [r["at"] for r in where if r["event"] == "rejected"] == []  # row 3 (null price) is not a b row
    grouped = run_log(Log(t, [_reg(_q("g", group_by="symbol")), _look("g", 4)]))
    assert [r["at"] for r in grouped if r["event"] == "rejected"] == [2, 3]
    assert _answers(grouped, "g") == [(4, ["a"], 1), (4, ["b"], 4)]


def _random_log(seed: int, n: int, n_keys: int, n_queries: int, batch) -> Log:
    rng = np.random.default_rng(seed)
    keys = np.array([f"k{i}" for i in range(n_keys)])
    sym = pa.array(keys[rng.integers(0, n_keys, n)], mask=rng.random(n) < 0.01)
    price = rng.integers(-50, 51, n).astype(float)
    price[rng.random(n) < 0.01] = np.nan
    side = pa.array(np.where(rng.random(n) < 0.5, "buy", "sell"))
    ts = np.cumsum(rng.choice([0, 0, 1, 2, 5], n)).astype(float)
    t = pa.table({"symbol": sym, "price": price, "side": side, "ts": ts})
    ops, ids = [], []
    for i in range(n_queries):
        agg = str(rng.choice(["sum", "count", "avg", "min", "max", "quantile"]))
        q: dict = {"id": f"q{i}", "type": "window_aggregate", "agg": agg, "column": "price"}
        if agg == "quantile":
            q["phi"] = float(rng.choice([0.1, 0.5, 0.99, 1.0]))
        if rng.random() < 0.6:
            nr = int(rng.choice([0, 0, 1, 7]))
            q["rows"] = [nr + int(rng.choice([1, 3, 33, 64, 100, 1000, 2**40])), nr]
        else:
            tr = int(rng.choice([0, 0, 2]))
            q["time"] = [tr + int(rng.choice([1, 10, 100, 10**9])), tr]
        shape = rng.random()
        if shape < 0.5:
            q["where"] = {"symbol": str(keys[rng.integers(n_keys)])}
            if shape < 0.1:
                q["where"]["side"] = "buy"
        elif shape < 0.8:
            q["group_by"] = "symbol" if shape < 0.7 else ["symbol", "side"]
        else:
            q["group_by"] = "symbol"
            q["where"] = {"price": [-20, 30]} if shape < 0.9 else {"side": "sell"}
        at = 0 if rng.random() < 0.4 else int(rng.integers(0, n + 1))
        ops.append(_reg(q, at))
        ids.append((q["id"], at))
        if rng.random() < 0.2:
            ops.append({"op": "terminate", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
    for _ in range(3 * n_queries):
        ident, at = ids[int(rng.integers(len(ids)))]
        ops.append(_look(ident, int(rng.integers(at, n + 3))))
    ops.sort(key=lambda o: o["at"])
    return Log(t, ops, batch=batch)


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("seed", "n", "n_keys", "batch"),
                         [(0, 600, 3, 1), (1, 3000, 40, 7),  # the larger ones in make test-all
                          pytest.param(2, 3000, 2000, 500, marks=pytest.mark.slow),
                          pytest.param(3, 3000, 5000, (64, 1000, 4096), marks=pytest.mark.slow)])
def test_exact_against_the_oracle(seed, n, n_keys, batch):
    log = _random_log(seed, n, n_keys, 40, batch)
    check_family("windows", "auto", log, cut=n // 2)


@pytest.mark.slow  # ~11 s: make test-all
@pytest.mark.timeout(300)
def test_batch_size_does_not_change_outputs():
    log = _random_log(7, 1000, 300, 30, 1)
    want = run_log(log, {"windows": "auto"})
    for b in (3, 128, 2000):
        assert run_log(log, {"windows": "auto"}, batch=b) == want


def test_memory_follows_keys_times_window_not_queries():
    """10 queries per key (5 window sizes x 2 aggregates) keep what 1 query per aggregate keeps."""
    rng = np.random.default_rng(0)
    n_keys, n = 500, 100_000
    t = pa.table({"symbol": pa.array(np.array([f"s{i}" for i in range(n_keys)])[rng.integers(0, n_keys, n)]),
                  "price": rng.random(n)})

    def nbytes(windows):
        eng = Engine()
        eng.add_operations([_reg(_q(f"{agg}{w}-{k}", agg=agg, rows=(w, 0), where={"symbol": f"s{k}"}))
                            for k in range(n_keys) for agg in ("sum", "max") for w in windows])
        eng.process(t)
        return sum(g.op.nbytes() for g in eng.groups.values()), len(eng.where)

    one, q1 = nbytes([100])
    ten, q10 = nbytes([20, 40, 60, 80, 100])
    assert (q1, q10) == (1000, 5000)
    assert ten == one  # the structures are per key, sized by the largest window


def test_replay_and_monitor_agree(tmp_path):
    from typer.testing import CliRunner

    from vigil.cli import app

    ops = [_reg(_q("a", rows=(3, 0), where={"symbol": "AAPL"})), _reg(_q("g", agg="sum", rows=(2, 0), group_by="symbol")),
           _look("a", 6), _look("g", 6), _look("a", 10), _look("g", 10)]
    stream = tmp_path / "s.jsonl"
    stream.write_text("".join(json.dumps(r) + "\n" for r in TRADES.to_pylist()))
    qf = tmp_path / "q.jsonl"
    qf.write_text("".join(json.dumps(o) + "\n" for o in ops))
    out = tmp_path / "o.jsonl"
    r = CliRunner().invoke(app, ["replay", "--stream", str(stream), "--queries", str(qf), "--out", str(out)])
    assert r.exit_code == 0, r.output
    replayed = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert replayed == run_log(Log(TRADES, ops, batch=3))
    assert {"event": "answer", "id": "g", "at": 6, "keys": ["AAPL"], "value": 24} in replayed

    m = Monitor()
    m.register(ops[0]["query"])
    m.register("SELECT symbol, SUM(price) FROM trades [ROWS 2] GROUP BY symbol", id="g")
    m.push(TRADES.slice(0, 6))
    assert m.lookup("a") == 15
    snap = m.snapshot()
    m2 = Monitor.restore(snap)
    m2.push(TRADES.slice(6))
    assert m2.lookup("a") == 11  # the last 3 AAPL prices: 11, 8, 7
    assert m2.lookup("g") == {"AAPL": 15, "GOOG": 99, "MSFT": 101}


@pytest.mark.slow  # a benchmark preset end to end: make test-all
@pytest.mark.timeout(600)
def test_bench_keyed_preset_smoke(tmp_path):
    """vigil bench windows --preset keyed at its smallest size: every run, JSON and PNG written."""
    from vigil.bench.windows import run_preset

    doc = run_preset("keyed", scale=0.01, out=tmp_path / "k.json", batches=[50_000])
    assert [r["algo"] for r in doc["results"]] == ["engine_where", "engine_group_by", "op_shared", "op_per_query"]
    assert (tmp_path / "k.png").exists()
    by = {r["algo"]: r["extra"] for r in doc["results"]}
    assert by["engine_where"]["queries"] == 100_000 and by["engine_group_by"]["queries"] == 10
    assert by["op_shared"]["nbytes"] < by["op_per_query"]["nbytes"]


@pytest.mark.parametrize("batch", [1, 5, 40])
def test_window_grown_after_the_ring_wrapped(batch):
    """A key's ring wrapped (a rows [2, 0] group_by query keeps 4 slots), then a where query with
    a longer window registers and the ring grows: its window starts at the oldest element held,
    never at slots the ring did not hold."""
    t = pa.table({"k": ["a", "b"] * 20, "price": [float(i) for i in range(1, 41)]})
    ops = [_reg(_q("g", rows=(2, 0), group_by="k")), _reg(_q("w", agg="sum", rows=(50, 0), where={"k": "a"}), at=20),
           _reg(_q("c", agg="count", rows=(50, 0), where={"k": "a"}), at=20),
           _look("w", 24), _look("w", 40), _look("c", 40), _look("g", 40)]
    rows = run_log(Log(t, ops, batch=batch))
    assert _answers(rows, "w") == [(24, None, 21 + 23), (40, None, sum(range(21, 40, 2)))]
    assert _answers(rows, "c") == [(40, None, 10)]
    assert _answers(rows, "g") == [(40, ["a"], 39), (40, ["b"], 40)]
    assert rows == run_log(Log(t, ops, batch=batch), {"windows": "oracle"})


def test_termination_changes_the_rows_checked_at_its_position():
    """Which rows a keyed group checks depends on the keys its queries read: after w1 (key a)
    ends at 1, the a row with a null price at 3 is no row of any query and is not rejected, at
    any batch size (the engine may not defer the termination to the end of a segment)."""
    t = pa.table({"k": ["a", "a", "a", "b"], "price": [1.0, 2.0, None, 4.0]})
    ops = [_reg(_q("w1", where={"k": "a"})), _reg(_q("w2", where={"k": "b"})),
           {"op": "terminate", "at": 1, "id": "w1"}, _look("w2", 4)]
    for b in (1, 2, 4):
        assert run_log(Log(t, ops, batch=b)) == [{"event": "answer", "id": "w2", "at": 4, "value": 4}]
