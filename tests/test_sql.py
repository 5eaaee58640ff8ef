"""Standing queries in SQL (vigil.sql): every statement maps onto one query spec, or is refused with
the reason; a register operation carrying "sql" behaves as the register of its compiled spec."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from vigil import querydoc
from vigil.api import Monitor
from vigil.cli import app
from vigil.engine import Engine
from vigil.events import output_rows
from vigil.specs import parse_query
from vigil.sql import SqlError, compile_sql

COMPILES = [
    ("SELECT SUM(shares) FROM trades WHERE symbol = 'AAPL' AND price BETWEEN 100 AND 105 "
     "HAVING SUM(shares) >= 100000",
     {"type": "threshold", "where": {"symbol": "AAPL", "price": [100, 105]}, "weight": "shares",
      "threshold": 100000}),
    ("SELECT COUNT(*) FROM trades WHERE price >= 100 AND price <= 105.5 AND volume >= 10 HAVING COUNT(*) > 9",
     {"type": "threshold", "where": {"price": [100, 105.5], "volume": [10, None]}, "threshold": 10}),
    ("SELECT MAX(price) FROM trades [ROWS 5]",
     {"type": "window_aggregate", "agg": "max", "column": "price", "rows": [5, 0]}),
    ("SELECT COUNT(*) FROM trades [RANGE 300]", {"type": "window_aggregate", "agg": "count", "time": [300, 0]}),
    ("select avg(price) from trades [range 300 offset 60 on t2]",
     {"type": "window_aggregate", "agg": "avg", "column": "price", "time": [300, 60], "time_column": "t2"}),
    ("SELECT QUANTILE(latency, 0.99) FROM requests [ROWS 1000]",
     {"type": "window_aggregate", "agg": "quantile", "column": "latency", "phi": 0.99, "rows": [1000, 0]}),
    ("SELECT MAX(price) FROM trades [ROWS 5] WHERE symbol = 'AAPL'",
     {"type": "window_aggregate", "agg": "max", "column": "price", "rows": [5, 0], "where": {"symbol": "AAPL"}}),
    ("SELECT symbol, MAX(price) FROM trades [ROWS 5] GROUP BY symbol",
     {"type": "window_aggregate", "agg": "max", "column": "price", "rows": [5, 0], "group_by": "symbol"}),
    ("SELECT QUANTILE(latency, 0.99) FROM requests [ROWS 1000] WHERE latency >= 0 GROUP BY endpoint, region",
     {"type": "window_aggregate", "agg": "quantile", "column": "latency", "phi": 0.99, "rows": [1000, 0],
      "where": {"latency": [0, None]}, "group_by": ["endpoint", "region"]}),
    ("SELECT symbol FROM trades [RANGE 300] GROUP BY symbol HAVING COUNT(*) > 500",
     {"type": "substream_filter", "agg": "count", "key": "symbol", "time": 300, "range": [500, None]}),
    ("SELECT symbol FROM trades [RANGE 60 ON ts] GROUP BY symbol HAVING SUM(shares) > 10 AND SUM(shares) < 20",
     {"type": "substream_filter", "agg": "sum", "column": "shares", "key": "symbol", "time": 60,
      "time_column": "ts", "range": [10, 20]}),
    ("SELECT /*+ EPSILON(0.1) */ symbol FROM trades [RANGE 60] GROUP BY symbol HAVING COUNT(price) < 7",
     {"type": "substream_filter", "agg": "count", "column": "price", "key": "symbol", "time": 60,
      "range": [None, 7], "epsilon": 0.1}),
    ("SELECT APPROX_QUANTILE(latency, 0.99, 0.01) FROM requests",
     {"type": "quantile", "column": "latency", "phi": 0.99, "epsilon": 0.01}),
    ("SELECT /*+ NOTIFY(cluster) */ APPROX_QUANTILE(latency, 0.5, 0.02) FROM requests [ROWS 1000]",
     {"type": "quantile", "column": "latency", "phi": 0.5, "epsilon": 0.02, "rows": 1000, "notify": "cluster"}),
    ("SELECT endpoint, APPROX_QUANTILE(latency, 0.99, 0.01) FROM requests [ROWS 1000] WHERE region = 'eu' "
     "GROUP BY endpoint",
     {"type": "quantile", "column": "latency", "phi": 0.99, "epsilon": 0.01, "rows": 1000, "where": {"region": "eu"},
      "group_by": "endpoint"}),
    ("SELECT /*+ REARM(180) */ APPROX_QUANTILE(latency, 0.99, 0.01) FROM requests "
     "HAVING APPROX_QUANTILE(latency, 0.99, 0.01) > 200",
     {"type": "quantile", "column": "latency", "phi": 0.99, "epsilon": 0.01, "above": 200, "rearm": 180}),
    ("SELECT APPROX_QUANTILE(latency, 0.5, 0.01) FROM requests [ROWS 100] HAVING APPROX_QUANTILE(latency, 0.5, 0.01) < 20",
     {"type": "quantile", "column": "latency", "phi": 0.5, "epsilon": 0.01, "rows": 100, "below": 20}),
    ("SELECT APPROX_CDF(latency, 300, 0.01) FROM requests [ROWS 1000] WHERE latency BETWEEN 0 AND 1000",
     {"type": "quantile", "column": "latency", "rank_of": 300, "epsilon": 0.01, "rows": 1000,
      "where": {"latency": [0, 1000]}}),
    ("SELECT * FROM buy r JOIN sell s ON s.price - r.price BETWEEN -0.5 AND 0.5",
     {"type": "band_join", "left": "buy", "right": "sell", "left_on": "price", "right_on": "price",
      "band": [-0.5, 0.5]}),
    ("SELECT * FROM buy r JOIN sell s ON s.price BETWEEN r.price - 0.5 AND r.price + 0.5",
     {"type": "band_join", "left": "buy", "right": "sell", "left_on": "price", "right_on": "price",
      "band": [-0.5, 0.5]}),
    ("SELECT * FROM buy r JOIN sell s ON r.bid BETWEEN s.ask AND s.ask + 3",
     {"type": "band_join", "left": "buy", "right": "sell", "left_on": "bid", "right_on": "ask", "band": [-3, 0]}),
    ("SELECT * FROM buy JOIN sell ON buy.bid - sell.ask BETWEEN 1 AND 2",
     {"type": "band_join", "left": "buy", "right": "sell", "left_on": "bid", "right_on": "ask", "band": [-2, -1]}),
    ("SELECT * FROM buy r JOIN sell s ON r.symbol = s.symbol AND s.shares >= 1000 WHERE r.price BETWEEN 100 AND 105",
     {"type": "select_join", "left": "buy", "right": "sell", "left_on": "symbol", "right_on": "symbol",
      "left_range": {"price": [100, 105]}, "right_range": {"shares": [1000, None]}}),
    ("SELECT /*+ MAX_WINDOW(60) */ * FROM buy r JOIN sell s ON r.symbol = s.symbol AND ABS(r.ts - s.ts) < 10",
     {"type": "window_join", "left": "buy", "right": "sell", "left_on": "symbol", "right_on": "symbol",
      "window": 10, "time_column": "ts", "max_window": 60}),
    ("SELECT * FROM buy r JOIN sell s ON r.symbol = s.symbol AND s.price - r.price BETWEEN -1 AND 1",
     {"type": "band_join", "left": "buy", "right": "sell", "left_on": "price", "right_on": "price",
      "left_key": "symbol", "right_key": "symbol", "band": [-1, 1]}),
    ("SELECT r.symbol, r.price, s.price FROM buy r JOIN sell s ON r.symbol = s.symbol "
     "AND s.ts BETWEEN r.ts - 5 AND r.ts + 10 WHERE r.price BETWEEN 100 AND 105",
     {"type": "window_join", "left": "buy", "right": "sell", "left_on": "symbol", "right_on": "symbol",
      "select": {"left": ["symbol", "price"], "right": ["price"]}, "left_range": {"price": [100, 105]},
      "window": [-5, 10], "time_column": "ts"}),
    ("SELECT s.price FROM buy r JOIN sell s ON r.symbol = s.symbol AND ABS(r.ts - s.ts) < 3",
     {"type": "window_join", "left": "buy", "right": "sell", "left_on": "symbol", "right_on": "symbol",
      "select": {"right": ["price"]}, "window": 3, "time_column": "ts"}),
]


@pytest.mark.parametrize(("text", "want"), COMPILES)
def test_statement_compiles_to_its_spec(text, want):
    assert compile_sql(text) == want
    got = compile_sql(text, "x1")
    assert got == {"id": "x1", **want}
    assert parse_query(got).dump() == parse_query({"id": "x1", **want}).dump()


REFUSED = [
    ("SELECT MAX(price) FROM trades [PARTITION BY symbol ROWS 5]", "per-key window is WHERE key = value or GROUP BY"),
    ("SELECT symbol, MAX(price), MIN(price) FROM trades [ROWS 5] GROUP BY symbol", "selects one aggregate"),
    ("SELECT MAX(price) FROM trades [ROWS 5] GROUP BY price + 1", "GROUP BY: name key columns"),
    ("SELECT APPROX_QUANTILE(x, 0.5, 0.01) FROM t HAVING APPROX_QUANTILE(x, 0.5, 0.01) >= 3", "is HAVING"),
    ("SELECT APPROX_QUANTILE(x, 0.5, 0.01), MAX(x) FROM t", "selects one APPROX_QUANTILE or APPROX_CDF"),
    ("SELECT APPROX_CDF(x, 3) FROM t", "APPROX_CDF(col, x, epsilon)"),
    ("UPDATE trades SET price = 1", "only SELECT is supported"),
    ("SELECT 1", "SELECT without FROM"),
    ("SELECT SUM(a), MAX(b) FROM t [ROWS 5]", "expected one aggregate"),
    ("SELECT MAX(a) FROM t [ROWS 5] ORDER BY a", "ORDER BY is not supported"),
    ("SELECT MAX(a) FROM t [ROWS 5] LIMIT 3", "LIMIT is not supported"),
    ("SELECT DISTINCT a FROM t [RANGE 5] GROUP BY a HAVING COUNT(*) > 1", "DISTINCT is not supported"),
    ("SELECT a FROM t; SELECT b FROM t", "expected one statement"),
    ("SELECT MAX(a) FROM t", "MAX needs a window"),
    ("SELECT QUANTILE(a, 0.5) FROM t", "APPROX_QUANTILE(col, phi, epsilon)"),
    ("SELECT APPROX_QUANTILE(a, 0.5) FROM t", "the epsilon is required"),
    ("SELECT APPROX_QUANTILE(a, 0.5, 0.01) FROM t [RANGE 5]", "only a [ROWS n] window"),
    ("SELECT MAX(a) FROM t [ROWS 0]", "rows: window [0, 0] needs left > right >= 0"),
    ("SELECT MAX(a) FROM t [NOW]", "window [NOW] is not supported"),
    ("SELECT MAX(a) FROM t [ROWS 5 ON ts]", "only a RANGE window has a time column"),
    ("SELECT MEDIAN(a) FROM t [ROWS 5]", "not a supported aggregate"),
    ("SELECT a FROM t [ROWS 5]", "not a supported aggregate"),
    ("SELECT COUNT(*) FROM t WHERE a > 5 HAVING COUNT(*) >= 3", "ranges are closed here"),
    ("SELECT COUNT(*) FROM t WHERE a >= 5 OR b = 1 HAVING COUNT(*) >= 3", "OR is not supported"),
    ("SELECT COUNT(*) FROM t WHERE k = 'a' HAVING COUNT(*) >= 3", "needs at least one range column"),
    ("SELECT COUNT(*) FROM t HAVING COUNT(*) >= 3", "needs a WHERE"),
    ("SELECT MAX(a) FROM t WHERE a >= 1 HAVING MAX(a) >= 3", "HAVING MAX"),
    ("SELECT SUM(w) FROM t WHERE a >= 1 HAVING SUM(w) <= 3", "HAVING SUM(w) >= tau"),
    ("SELECT SUM(w) FROM t [ROWS 5] WHERE a >= 1 HAVING SUM(w) >= 3", "has no window"),
    ("SELECT SUM(w) FROM t WHERE a >= 1 HAVING SUM(w) >= 2.5", "must be an integer"),
    ("SELECT k FROM t [ROWS 5] GROUP BY k HAVING COUNT(*) > 1", "needs a time window"),
    ("SELECT k FROM t [RANGE 5] GROUP BY k HAVING COUNT(*) >= 1", "the range is open here"),
    ("SELECT k FROM t [RANGE 5] GROUP BY k", "selects one aggregate"),
    ("SELECT COUNT(*) FROM t [RANGE 5] GROUP BY k HAVING COUNT(*) > 1", "selects its key"),
    ("SELECT k FROM t [RANGE 5] GROUP BY k, j HAVING COUNT(*) > 1", "exactly one key column"),
    ("SELECT /*+ EPSILON(0.1) */ MAX(a) FROM t [ROWS 5]", "do not apply to window_aggregate"),
    ("SELECT * FROM buy r LEFT JOIN sell s ON r.a = s.a", "only an inner JOIN"),
    ("SELECT * FROM buy r JOIN buy s ON r.a = s.a", "must name a relation other than left"),
    ("SELECT * FROM buy r JOIN sell s ON r.a = s.a JOIN x ON x.a = r.a", "exactly two relations"),
    ("SELECT * FROM buy r JOIN sell s ON r.a < s.a", "is not supported"),
    ("SELECT * FROM buy r JOIN sell s ON s.a BETWEEN r.a AND r.b + 1", "a band is s.col BETWEEN r.col + lo"),
    ("SELECT * FROM buy r JOIN sell s ON s.a BETWEEN s.b AND s.b + 1", "a band is s.col BETWEEN r.col + lo"),
    ("SELECT * FROM buy r JOIN sell s ON r.a >= 1", "needs a join condition"),
    ("SELECT r.a + 1 FROM buy r JOIN sell s ON r.a = s.a", "SELECT *"),
    ("SELECT * FROM buy [ROWS 5] r JOIN sell s ON r.a = s.a", "no window brackets"),
    ("SELECT * FROM buy r [ROWS 5] JOIN sell s ON r.a = s.a", "must follow a table name"),
    ("SELECT * FROM buy r JOIN sell s ON r.a = s.a WHERE a >= 1", "qualify it"),
    ("SELECT * FROM buy r JOIN sell s ON r.a = s.a WHERE r.k = 'x'", "not equalities"),
    ("SELECT * FROM buy r JOIN sell s ON r.a = s.a AND ABS(r.ts - s.t2) < 5", "one time column"),
    ("SELECT MAX(a) FROM (SELECT a FROM t)", "subqueries"),
    ("SELEC x FROM t", "SQL syntax error"),
    ("", "empty SQL statement"),
]


@pytest.mark.parametrize(("text", "reason"), REFUSED)
def test_statement_refused_with_its_reason(text, reason):
    with pytest.raises(SqlError) as e:
        compile_sql(text, "q1")
    assert reason in str(e.value), str(e.value)


def test_every_documented_sql_example_compiles_to_the_json_example():
    for qtype, text in querydoc.SQL_EXAMPLES.items():
        want = querydoc.EXAMPLES[qtype]
        assert compile_sql(text, want["id"]) == want, qtype
        assert f"```sql\n{text}\n```" in querydoc.markdown()


def test_vigil_sql_command():
    runner = CliRunner()
    r = runner.invoke(app, ["sql", "--id", "m1", "SELECT MAX(price) FROM trades [ROWS 5]"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output) == {"id": "m1", "type": "window_aggregate", "agg": "max", "column": "price",
                                    "rows": [5, 0]}
    r = runner.invoke(app, ["sql", "--op", "SELECT COUNT(*) FROM t [RANGE 5]"])
    assert json.loads(r.output)["query"]["id"] == "q1"
    r = runner.invoke(app, ["sql", "SELECT MAX(price) FROM trades [PARTITION BY symbol ROWS 5]"])
    assert r.exit_code == 2 and "per-key window is WHERE key = value or GROUP BY key" in r.output


# ----------------------------------------------------------------------------- through the engine

SQL_OPS = [
    ("t1", "SELECT SUM(shares) FROM trades WHERE symbol = 'AAPL' AND price BETWEEN 100 AND 105 "
           "HAVING SUM(shares) >= 300"),
    ("w1", "SELECT MAX(price) FROM trades [ROWS 5]"),
    ("w2", "SELECT AVG(price) FROM trades [RANGE 30]"),
    ("f1", "SELECT symbol FROM trades [RANGE 20] GROUP BY symbol HAVING COUNT(*) > 3"),
    ("p1", "SELECT APPROX_QUANTILE(price, 0.5, 0.01) FROM trades [ROWS 50]"),
]


def _stream(n: int = 120) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "seq": np.arange(1, n + 1, dtype=np.int64),
        "ts": np.arange(n, dtype=np.float64) * 2.0,
        "symbol": rng.choice(["AAPL", "MSFT", "IBM"], n),
        "price": np.round(rng.uniform(95, 110, n), 2),
        "shares": rng.integers(1, 100, n),
    })


def _run(first: list, later: list) -> list[dict]:
    stream = _stream()
    eng = Engine(columns=set(stream.column_names))
    out = []
    eng.add_operations(first)
    for k in range(0, stream.num_rows, 25):
        if k == 50:  # pending operations: applied after elements 55 and 60
            eng.add_operations(later)
            for ident in ("w1", "w2", "f1", "p1"):
                eng.add_operations([{"op": "lookup", "at": 60, "id": ident}])
        out.append(eng.process(stream.slice(k, 25)))
    for ident in ("w1", "w2", "f1", "p1"):
        eng.add_operations([{"op": "lookup", "at": stream.num_rows, "id": ident}])
    out.append(eng.finish())
    return [r for t in out for r in output_rows(t)]


def test_sql_register_gives_the_events_of_its_json_register():
    sql_ops = [json.dumps({"op": "register", "at": 0 if i < 3 else 55, "id": ident, "sql": text})
               for i, (ident, text) in enumerate(SQL_OPS)]
    json_ops = [json.dumps({"op": "register", "at": 0 if i < 3 else 55, "query": compile_sql(text, ident)})
                for i, (ident, text) in enumerate(SQL_OPS)]
    bad = [json.dumps({"op": "register", "at": 0, "id": "bad", "sql": "SELECT MAX(price) FROM trades "
                       "[PARTITION BY symbol ROWS 5]"}),
           json.dumps({"op": "register", "at": 0, "sql": "SELECT MAX(price) FROM trades [ROWS 5]"}),
           json.dumps({"op": "register", "at": 0, "id": "b2", "sql": "SELECT MAX(x) FROM trades [ROWS 5]"})]
    got, want = _run(bad + sql_ops[:3], sql_ops[3:]), _run(json_ops[:3], json_ops[3:])
    events = [e for e in got if e["event"] != "rejected"]
    assert events == [e for e in want if e["event"] != "rejected"]
    assert {e["event"] for e in events} >= {"matured", "answer"}
    rejected = [e for e in got if e["event"] == "rejected"]
    assert rejected[0]["id"] == "bad" and "sql: per-key window [PARTITION BY symbol ROWS 5] is not supported: " \
        "a per-key window is WHERE key = value or GROUP BY key" in rejected[0]["reason"]
    assert "needs a non-empty string 'id'" in rejected[1]["reason"]
    assert rejected[2]["id"] == "b2" and "references column(s) ['x']" in rejected[2]["reason"]


def test_register_op_fields():
    from vigil.oprun import check_op

    op, err = check_op({"op": "register", "id": "a", "sql": "SELECT MAX(p) FROM t [ROWS 2]"})
    assert err is None and op == {"op": "register", "at": 0, "query": compile_sql("SELECT MAX(p) FROM t [ROWS 2]", "a")}
    _, err = check_op({"op": "register", "id": "a", "sql": "SELECT MAX(p) FROM t [ROWS 2]", "query": {}})
    assert "unknown field(s) ['query']" in err
    _, err = check_op({"op": "register", "id": "a", "sql": 3})
    assert "sql: must be a string" in err


def test_monitor_registers_sql():
    m = Monitor()
    assert m.register("SELECT MAX(price) FROM trades [ROWS 2]", id="m1") == "m1"
    m.push({"price": [3.0, 7.0, 5.0]})
    assert m.lookup("m1") == 7.0
    with pytest.raises(ValueError, match="an SQL query needs an id"):
        m.register("SELECT MAX(price) FROM trades [ROWS 2]")
    with pytest.raises(ValueError, match="selects one aggregate"):
        m.register("SELECT MAX(price), MIN(price) FROM trades [ROWS 2] GROUP BY k", id="m2")
    assert m.register("SELECT MAX(price) FROM trades [ROWS 2] WHERE k = 'a'", id="m3") == "m3"
    assert m.register("SELECT k, SUM(price) FROM trades [ROWS 2] GROUP BY k", id="m4") == "m4"
    m.push({"price": [1.0, 2.0, 4.0, 8.0], "k": ["a", "b", "a", "b"]})
    assert m.lookup("m3") == 4.0


def test_warm_precompiles_sql_registers():
    from vigil import warm

    line = json.dumps({"op": "register", "at": 0, "id": "w1", "sql": "SELECT MAX(price) FROM trades [ROWS 5]"})
    (share,) = warm.shares([line, {"op": "register", "id": "bad", "sql": "UPDATE t SET a = 1"}], 2)
    assert [o["query"]["type"] for o in share if o["op"] == "register"] == ["window_aggregate"]
