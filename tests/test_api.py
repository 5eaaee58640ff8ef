"""vigil.Monitor, the Python API: the same engine as `vigil replay` (same log, same events), every
input kind, operations that fail loudly, lookups, snapshot/restore, terminate."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import vigil
from vigil import Monitor
from vigil.cli import app
from vigil.events import read_outputs

N = 300


def stream() -> pa.Table:
    rng = np.random.default_rng(7)
    price = np.round(rng.uniform(95, 110, N), 2)
    price[[40, 170]] = np.nan  # rejected rows (referenced column NaN)
    return pa.table({
        "price": price,
        "shares": rng.integers(1, 500, N),
        "symbol": rng.choice(["AAPL", "MSFT", "IBM"], N),
        "ts": np.arange(N, dtype=np.float64),
    })


Q = {
    "t1": {"id": "t1", "type": "threshold", "where": {"price": [100, 105], "symbol": "AAPL"},
           "weight": "shares", "threshold": 5000},
    "t2": {"id": "t2", "type": "threshold", "where": {"price": [96, 108]}, "weight": "shares", "threshold": 20000},
    "w1": {"id": "w1", "type": "window_aggregate", "agg": "sum", "column": "shares", "rows": [50, 0]},
    "w2": {"id": "w2", "type": "window_aggregate", "agg": "avg", "column": "price", "time": [30, 0]},
    "f1": {"id": "f1", "type": "substream_filter", "agg": "sum", "column": "shares", "key": "symbol",
           "time": 20, "range": [1500, None]},
    "p1": {"id": "p1", "type": "quantile", "column": "price", "phi": 0.5, "epsilon": 0.05},
    "t3": {"id": "t3", "type": "threshold", "where": {"price": [90, 120]}, "weight": "shares", "threshold": 10**9},
}
# (position, operations): registrations at 0 and 100, a termination at 150, lookups at 200 and 260
PLAN = [
    (0, [("register", "t1"), ("register", "w1"), ("register", "w2"), ("register", "f1"), ("register", "p1"),
         ("register", "t3")]),
    (100, [("register", "t2")]),
    (150, [("terminate", "t3")]),
    (200, [("lookup", "w1"), ("lookup", "w2"), ("lookup", "f1"), ("lookup", "p1")]),
    (260, [("lookup", "w1"), ("lookup", "p1")]),
]


def replay_events(tmp_path, table: pa.Table) -> list[dict]:
    import pyarrow.parquet as pq

    pq.write_table(table, tmp_path / "s.parquet")
    with open(tmp_path / "q.jsonl", "w") as f:
        for at, ops in PLAN:
            for kind, ident in ops:
                op = {"op": kind, "at": at, **({"query": Q[ident]} if kind == "register" else {"id": ident})}
                f.write(json.dumps(op) + "\n")
    r = CliRunner().invoke(app, ["replay", "--stream", str(tmp_path / "s.parquet"), "--queries",
                                 str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o.jsonl"),
                                 "--quiet", "--no-precompile", "--batch", "64"])
    assert r.exit_code == 0, r.output
    return read_outputs(tmp_path / "o.jsonl")


def monitor_events(table: pa.Table, convert=lambda t: t, cut: int | None = None):
    """Run PLAN through a Monitor; returns (events, lookup answers as (at, id, value))."""
    m = Monitor()
    events, answers, pos = [], [], 0
    for at, ops in [*PLAN, (N, [])]:
        if at > pos:
            if cut is not None and pos < cut < at:
                events += m.push(convert(table.slice(pos, cut - pos)), output="rows")
                m = Monitor.restore(m.snapshot())
                pos = cut
            events += Monitor.rows(m.push(convert(table.slice(pos, at - pos))))
            pos = at
        assert m.position == pos
        for kind, ident in ops:
            if kind == "register":
                assert m.register(Q[ident]) == ident
            elif kind == "terminate":
                m.terminate(ident)
            else:
                answers.append((at, ident, m.lookup(ident)))
    c = m.counts
    assert c["rows_in"] == N == c["rows_applied"] + c["rows_rejected"] and c["rows_rejected"] == 2
    return events, answers


def split(replayed: list[dict]):
    return ([e for e in replayed if e["event"] != "answer"],
            [(e["at"], e["id"], e["value"]) for e in replayed if e["event"] == "answer"])


@pytest.mark.timeout(600)
def test_same_events_as_vigil_replay(tmp_path):
    table = stream()
    want_events, want_answers = split(replay_events(tmp_path, table))
    assert {e["event"] for e in want_events} >= {"matured", "rejected"} and len(want_answers) == 6
    assert want_answers[2][2]  # the substream filter finds keys
    events, answers = monitor_events(table)
    assert events == want_events
    assert answers == want_answers
    assert {e["id"] for e in events if e["event"] == "matured"} >= {"t1", "t2"}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["record_batch", "pandas", "numpy_dict", "list_dict"])
def test_every_input_kind_gives_the_same_events(kind):
    convert = {
        "record_batch": lambda t: t.combine_chunks().to_batches()[0] if t.num_rows else t,
        "pandas": lambda t: t.to_pandas(),
        "numpy_dict": lambda t: {c: t.column(c).to_numpy() for c in t.column_names},
        "list_dict": lambda t: t.to_pydict(),
    }[kind]
    table = stream()
    events, answers = monitor_events(table, convert)
    if kind == "pandas":  # pandas' NaN means missing: Arrow reads it as null (the same rows rejected)
        events = [{**e, "reason": "column 'price' is NaN or infinite"} if e.get("reason") == "column 'price' is null"
                  else e for e in events]
    assert (events, answers) == monitor_events(table)


@pytest.mark.timeout(600)
def test_snapshot_restore_continues_identically():
    table = stream()
    want = monitor_events(table)
    for cut in (30, 120, 255):
        assert monitor_events(table, cut=cut) == want


def test_register_errors_raise_with_the_reason():
    m = Monitor()
    m.register(json.dumps(Q["w1"]))  # JSON text is a spec too
    with pytest.raises(ValueError, match="duplicate id 'w1'"):
        m.register(Q["w1"])
    with pytest.raises(ValueError, match="an SQL query needs an id"):
        m.register("SELECT SUM(shares) FROM s")
    with pytest.raises(ValueError, match="SUM needs a window"):
        m.register("SELECT SUM(shares) FROM s", id="s1")
    with pytest.raises(ValueError, match="rows"):
        m.register({**Q["w1"], "id": "bad", "rows": [0, 5]})
    with pytest.raises(ValueError, match="unknown query id 'nope'"):
        m.terminate("nope")
    with pytest.raises(ValueError, match="unknown query id 'nope'"):
        m.lookup("nope")
    m.register(Q["t1"])
    with pytest.raises(ValueError, match="lookup is not defined for threshold"):
        m.lookup("t1")
    rejected = m.register_many([{**Q["w2"], "id": "ok"}, {**Q["w2"], "id": "ok"}, {**Q["w2"], "id": "w3"}])
    assert [e["id"] for e in rejected] == ["ok"] and "duplicate id" in rejected[0]["reason"]
    assert m.alive == ["w1", "t1", "ok", "w3"]
    c = m.counts
    assert c["ops_in"] == c["ops_applied"] + c["ops_rejected"]


def test_columns_known_ahead_are_checked_at_registration():
    m = Monitor(columns=["price"])
    with pytest.raises(ValueError, match="shares"):
        m.register(Q["w1"])


def test_lookup_values_terminate_and_seq_column():
    m = Monitor()
    m.register(Q["w1"])
    assert m.lookup("w1") is None  # no element in its window yet
    out = m.push(pd.DataFrame({"shares": [1, 2, 3], "seq": [5, 9, 10]}), output="pandas")
    assert isinstance(out, pd.DataFrame) and len(out) == 0 and m.position == 10
    m.register({**Q["f1"], "range": [16, None]})  # keys whose sum of shares over the last 20 s exceeds 16
    assert m.lookup_many(["w1", "f1"]) == [6, []]
    m.push({"shares": np.array([10, 20, 5]), "symbol": np.array(["A", "B", "A"]), "ts": np.array([1.0, 2.0, 3.0])})
    assert m.position == 13
    assert m.lookup_many(["w1", "f1"]) == [41, ["B"]]
    m.terminate("w1")
    m.terminate("w1")  # terminating an ended query is a no-op
    with pytest.raises(ValueError, match="not alive"):
        m.lookup("w1")
    assert m.alive == ["f1"]
    with pytest.raises(TypeError, match="DataFrame"):
        m.push(42)


def test_exported_from_the_package():
    assert vigil.Monitor is Monitor and "Monitor" in vigil.__all__


def test_the_module_example_runs():
    import doctest

    import vigil.api

    assert doctest.testmod(vigil.api).failed == 0


def test_the_readme_example_runs(capsys):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = readme.split("## Python API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})
    assert capsys.readouterr().out == "[{'event': 'matured', 'id': 'q1', 'at': 4}]\n102\n"


def test_a_polars_like_frame_is_read_through_to_arrow():
    class Frame:  # polars is not a dependency: push duck-types to_arrow() (polars gives large strings)
        def to_arrow(self):
            return pa.table({"price": [101.5, 104.0], "symbol": pa.array(["AAPL", "AAPL"], pa.large_string()),
                             "shares": [3000, 2000]})

    m = Monitor()
    m.register(Q["t1"])
    assert m.push(Frame(), output="rows") == [{"event": "matured", "id": "t1", "at": 2}]
