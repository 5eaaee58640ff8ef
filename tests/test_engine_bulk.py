"""The engine's bulk paths give the text one-at-a-time code gives: output lines built from columns
(vigil.events.jsonl_lines) and operation lines recognized in bulk (vigil.oplines)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from vigil.events import OUTPUT_SCHEMA, conform_outputs, jsonl_lines, output_rows


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=OUTPUT_SCHEMA)


def test_jsonl_lines_equal_json_dumps_of_output_rows():
    vals = [0.0, -0.0, 1.0, -3.0, 2.0**53, 2.0**53 - 1, -(2.0**53), 1e16, 1.5, 1e-5, 1 / 3, float("nan"), None,
            float("inf"), float("-inf"), 123456789.125, 5e-324]
    rows = []
    for k, v in enumerate(vals):
        for ev in ("answer", "update", "alert", "clear"):
            rows.append({"event": ev, "id": f"q{k}", "at": k, "value": v})
    rows += [
        {"event": "answer", "id": "s", "at": 3, "value": None, "keys": ["AAPL", "é\"x"]},
        {"event": "answer", "id": "s", "at": 3, "value": None, "keys": []},
        {"event": "answer", "id": "g", "at": 4, "value": 2.5, "keys": ["k1"]},
        {"event": "answer", "id": "late", "at": 9, "value": 1.0, "asked_at": 5},
        {"event": "answer", "id": None, "at": None, "value": 7.0},
        {"event": "matured", "id": "t", "at": 11},
        {"event": "terminated", "id": "t", "at": 12},
        {"event": "join", "id": "j", "at": 13, "r": 4, "s": 13},
        {"event": "join", "id": "j", "at": 13, "r": 4, "s": None, "left": '{"a": 1, "b": "x"}', "right": '{"c": [1]}'},
        {"event": "cluster", "id": "c", "at": 14, "r": 2},
        {"event": "cluster_update", "id": "c", "at": 15, "r": 3, "value": 0.25},
        {"event": "rejected", "id": None, "at": 16, "reason": "line 3: bad \u2028 \"quote\""},
        {"event": "late", "id": "x", "at": 17, "reason": "late"},
        {"event": None, "id": "\u00e9\\", "at": 18},
    ]
    rng = np.random.default_rng(1)
    rows += [{"event": "answer", "id": f"r{i}", "at": int(i), "value": round(float(x), int(d))}
             for i, (x, d) in enumerate(zip(rng.normal(0, 1e6, 200), rng.integers(0, 4, 200), strict=True))]
    t = _table(rows)
    want = [json.dumps(d) + "\n" for d in output_rows(t)]
    assert jsonl_lines(t) == want
    # a table lacking columns (outputs written before a column existed)
    small = t.select(["event", "id", "at", "value", "keys"])
    assert jsonl_lines(small) == [json.dumps(d) + "\n" for d in output_rows(conform_outputs(small))]
    assert jsonl_lines(t.slice(0, 0)) == []


@pytest.mark.parametrize("ev", ["answer", "matured"])
def test_jsonl_lines_one_kind(ev):
    t = _table([{"event": ev, "id": f"q{i}", "at": i, "value": i / 4} for i in range(50)])
    assert jsonl_lines(t) == [json.dumps(d) + "\n" for d in output_rows(t)]


@pytest.mark.parametrize("odd", ["", "é", "a\"b", "back\\slash", "tab\t"])
def test_jsonl_lines_key_lists(odd):
    rows = [{"event": "answer", "id": "s", "at": i, "value": None, "keys": [f"K{j}" for j in range(i % 4)]}
            for i in range(30)]
    rows += [{"event": "answer", "id": "g", "at": 31, "value": 1.5, "keys": ["A", "B"], "asked_at": 7},
             {"event": "answer", "id": "g", "at": 32, "value": None, "keys": ["A"], "asked_at": 8},
             {"event": "matured", "id": "t", "at": 33},
             {"event": "answer", "id": "g", "at": 34, "value": 2.0, "keys": ["A" + odd]}]
    t = _table(rows)
    want = [json.dumps(d) + "\n" for d in output_rows(t)]
    assert jsonl_lines(t) == want
    assert jsonl_lines(pa.concat_tables([t.slice(3, 10), t.slice(20)])) == want[3:13] + want[20:]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("at", ["99999999999999999999", "9223372036854775808", "1e30"])
def test_operation_beyond_int64_is_rejected(at):
    """An ``at`` beyond 2^63 - 1 is no stream position: rejected (it crashed a lookup kernel)."""
    from vigil.engine import Engine

    eng = Engine(columns={"v"})
    eng.add_operations(['{"op": "register", "at": 0, "query": {"type": "window_aggregate", "id": "q", '
                        '"agg": "sum", "column": "v", "rows": [3, 0]}}',
                        '{"op": "lookup", "at": ' + at + ', "id": "q"}',
                        '{"op": "lookup", "at": 9223372036854775807, "id": "q"}'], [1, 2, 3])
    out = pa.concat_tables([eng.process(pa.table({"v": [1.0, 2.0, 4.0]})), eng.finish()]).to_pylist()
    assert [(r["event"], r["at"]) for r in out] == [("rejected", 0), ("answer", 9223372036854775807)]
    assert "line 2: at: must be at most 2^63 - 1" in out[0]["reason"]
