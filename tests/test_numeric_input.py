"""Huge integers and bad numerics never crash a run (issue 9, deliverable 6): every numeric column
a query references accepts finite numbers with |v| <= 2^53 (events.MAX_ABS) and rejects anything
else row by row with a reason; the other rows give exactly the outputs of the stream without the
bad rows. ``vigil replay`` on JSONL, CSV and Parquet, queries of every family referencing the
columns (threshold where + weight, window aggregates over rows and time, substream filters,
band / select / window joins, quantiles)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from vigil.cli import app
from vigil.events import MAX_ABS, numeric_column, read_outputs, seq_column, weight_column

BIG = 2**60  # the issue's example: 1152921504606846976
N = 120

QUERIES = [
    {"id": "t", "type": "threshold", "where": {"x": [0, None]}, "weight": "w", "threshold": 150},
    {"id": "wr", "type": "window_aggregate", "agg": "sum", "column": "x", "rows": [10, 0]},
    {"id": "wt", "type": "window_aggregate", "agg": "max", "column": "x", "time": [5, 0]},
    {"id": "sf", "type": "substream_filter", "key": "k", "agg": "sum", "column": "x", "range": [10, None],
     "time": 8.0, "time_column": "ts"},
    {"id": "bj", "type": "band_join", "left": "R", "right": "S", "left_on": "x", "right_on": "x", "band": [0, 0.5]},
    {"id": "sj", "type": "select_join", "left": "R", "right": "S", "left_on": "k", "right_on": "k",
     "left_range": {"x": [0, 30]}},
    {"id": "wj", "type": "window_join", "left": "R", "right": "S", "left_on": "k", "right_on": "k", "window": 3.0,
     "time_column": "ts"},
    {"id": "q", "type": "quantile", "column": "x", "phi": 0.5, "epsilon": 0.01},
]


def _ops() -> list[dict]:
    ops = [{"op": "register", "at": 0, "query": q} for q in QUERIES]
    ops += [{"op": "lookup", "at": a, "id": i} for a in (30, 60, 90, N) for i in ("wr", "wt", "sf", "q")]
    return ops


def _good(i: int) -> dict:
    # mixed int/float: x is an int on even rows, a float on odd ones; w an integral float sometimes
    x = i % 17 if i % 2 == 0 else (i % 13) + 0.5
    return {"seq": i + 1, "ts": float(i) / 2, "k": f"k{i % 5}", "rel": "RS"[i % 2], "x": x,
            "w": 2.0 if i % 7 == 0 else 1 + i % 3}


# (row index, column, bad value, words its reason must contain)
BAD = [
    (10, "w", BIG, ["2^53"]),
    (20, "x", BIG, ["2^53", str(BIG)]),
    (30, "x", BIG + 1, ["2^53", str(BIG + 1)]),
    (40, "x", -(2**63), ["2^53"]),
    (50, "ts", BIG, ["2^53"]),
    (60, "w", 2.5, ["positive integer"]),
    (70, "x", 1e300, ["2^53"]),
    (80, "x", "abc", ["not a number"]),
    (15, "w", "1152921504606846977", ["2^53"]),  # (w is checked while the threshold query lives)
]


def _rows(bad: bool) -> list[dict]:
    rows = [_good(i) for i in range(N)]
    if bad:
        for i, col, v, _ in BAD:
            rows[i][col] = v
    else:
        rows = [r for i, r in enumerate(rows) if i not in {b[0] for b in BAD}]
    return rows


def _write(rows: list[dict], path, fmt: str) -> None:
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "csv":
        cols = list(rows[0])
        lines = [",".join(cols)] + [",".join(str(r[c]) if not isinstance(r[c], float) else repr(r[c])
                                             for c in cols) for r in rows]
        path.write_text("\n".join(lines) + "\n")
    else:  # Parquet: one type per column: text where the values mix numbers and text
        cols = {}
        for c in rows[0]:
            vals = [r[c] for r in rows]
            if any(isinstance(v, str) for v in vals) and c not in ("k", "rel"):
                cols[c] = pa.array([json.dumps(v) if not isinstance(v, str) else v for v in vals], pa.string())
            elif all(isinstance(v, int) for v in vals):
                cols[c] = pa.array(vals, pa.int64())
            elif any(isinstance(v, int) and abs(v) > MAX_ABS for v in vals):  # huge ints among floats: decimal
                import decimal

                cols[c] = pa.array([decimal.Decimal(repr(v) if isinstance(v, float) else v) for v in vals],
                                   pa.decimal128(38, 2))
            else:
                cols[c] = pa.array(vals)
        pq.write_table(pa.table(cols), path)


def _replay(tmp_path, rows: list[dict], fmt: str, name: str) -> list[dict]:
    s = tmp_path / f"{name}.{fmt}"
    _write(rows, s, fmt)
    q = tmp_path / "q.jsonl"
    q.write_text("".join(json.dumps(o) + "\n" for o in _ops()))
    out = tmp_path / f"{name}-out.jsonl"
    r = CliRunner().invoke(app, ["replay", "--stream", str(s), "--queries", str(q), "--out", str(out), "--quiet",
                                 "--algo", "joins=oracle"])
    assert r.exit_code == 0, (r.output, r.exception)
    return read_outputs(out)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_bad_numbers_are_rejected_row_by_row_and_the_rest_is_exact(tmp_path, fmt):
    got = _replay(tmp_path, _rows(True), fmt, "bad")
    ref = _replay(tmp_path, _rows(False), fmt, "clean")
    rejected = {e["at"]: e["reason"] for e in got if e["event"] == "rejected" and e["id"] is None}
    assert set(rejected) == {i + 1 for i, *_ in BAD}, rejected
    for i, col, _, words in BAD:
        reason = rejected[i + 1]
        assert f"'{col}'" in reason and all(w in reason for w in words), (col, reason)
    rest = [e for e in got if e["event"] != "rejected" or e["id"] is not None]
    assert rest == ref
    kinds = {(e["event"], e["id"]) for e in rest}
    for ident in ("t",):
        assert ("matured", ident) in kinds
    assert {("join", "bj"), ("join", "sj"), ("join", "wj")} <= kinds
    assert {("answer", i) for i in ("wr", "wt", "sf", "q")} <= kinds


def test_the_issue_example_replays():
    """{"seq": 7, "x": 3.0, "w": 1152921504606846976} with a threshold on weight w: rejected with
    the limit in the reason, nothing raised."""
    t = pa.table({"seq": [7, 8], "x": [3.0, 3.0], "w": [BIG, 1]})
    w, reasons = weight_column(t, "w")
    assert reasons == {0: f"column 'w' holds {BIG}: beyond |v| <= 2^53 = {MAX_ABS}, the range vigil accepts "
                          "(it computes in float64, exact for integers only up to 2^53)"}
    assert w[1] == 1


def test_the_limits_themselves():
    t = pa.table({"x": pa.array([float(MAX_ABS), -float(MAX_ABS), 2.0**53 + 2, 2.0**64]),
                  "i": pa.array([MAX_ABS, -MAX_ABS, MAX_ABS + 1, -(MAX_ABS + 1)], pa.int64()),
                  "u": pa.array([MAX_ABS, 1, MAX_ABS + 1, 2**64 - 1], pa.uint64()),
                  "seq": pa.array([1, 2**62, 2**63 - 1, 3], pa.int64())})
    assert sorted(numeric_column(t, "i")[1]) == [2, 3]
    assert sorted(numeric_column(t, "u")[1]) == [2, 3]
    assert numeric_column(t, "i")[0][:2].tolist() == [MAX_ABS, -MAX_ABS]
    assert sorted(numeric_column(t, "x")[1]) == [2, 3]
    seq, bad = seq_column(t)
    assert not bad and seq.tolist() == [1, 2**62, 2**63 - 1, 3]  # exact beyond 2^53
    ts = pa.table({"ts": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns"))})
    v, bad = numeric_column(ts, "ts")  # sub-microsecond digits: no "would lose data" error
    assert not bad and abs(v[0] - 1_700_000_000.123_456_789) < 1e-6
    csv = pa.table({"x": ["12345678901234567890123", "1e400", "-0.0", "7"]})
    v, bad = numeric_column(csv, "x")
    assert "2^53" in bad[0] and "infinite" in bad[1] and v[2:].tolist() == [0.0, 7.0]
    assert pcsv is not None
