"""events.write_outputs writes, for tables of any size, exactly the text of json.dumps of
output_rows' objects (large tables: vigil.jsonl_out.jsonl_bytes, from the buffer of the lines
joined by Arrow)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_jsonl_writer import row
from vigil.events import OUTPUT_SCHEMA, output_rows, write_outputs
from vigil.jsonl_out import jsonl_bytes


def _want(t: pa.Table) -> bytes:
    return "".join(json.dumps(d) + "\n" for d in output_rows(t)).encode()


@pytest.mark.timeout(300)
@settings(max_examples=30, deadline=None)
@given(st.lists(row, min_size=1, max_size=30), st.integers(1, 1500), st.integers(0, 1500))
def test_file_text_equals_dumps_of_output_rows(tmp_path_factory, rows, n, cut):
    rows = (rows * (n // len(rows) + 1))[:n]
    t = pa.Table.from_pylist(rows, OUTPUT_SCHEMA)
    t = pa.concat_tables([t.slice(0, cut), t.slice(cut)])  # several chunks per column
    want = _want(t)
    assert bytes(jsonl_bytes(t)) == want
    p = tmp_path_factory.mktemp("w") / "out.jsonl"
    write_outputs(t, p)
    assert p.read_bytes() == want


@pytest.mark.parametrize("n", [1023, 1024, 5000])
def test_answers_values_keys_and_asked(tmp_path, n):
    vals = [0.0, -0.0, 1.5, 1e-5, 1 / 3, float("nan"), None, float("inf"), float("-inf"), 2.0**53, 1e16, 123.25]
    rows = []
    for i in range(n):
        v = vals[i % len(vals)]
        r = {"event": "answer", "id": f"q{i % 7}", "at": i, "value": v}
        if i % 3 == 0:
            r["keys"] = [f"K{j}" for j in range(i % 4)]
        if i % 5 == 0:
            r["asked_at"] = i - 1
        if i % 11 == 0:
            r = {"event": "matured", "id": f"t{i}", "at": i}
        rows.append(r)
    t = pa.Table.from_pylist(rows, OUTPUT_SCHEMA)
    write_outputs(t, tmp_path / "o.jsonl")
    assert (tmp_path / "o.jsonl").read_bytes() == _want(t)
    for s in (t.slice(7), t.slice(3, n - 10)):  # columns that start inside their buffers
        assert bytes(jsonl_bytes(s)) == _want(s)


def test_only_other_events_and_empty():
    t = pa.Table.from_pylist([{"event": "matured", "id": f"t{i}", "at": i} for i in range(1500)], OUTPUT_SCHEMA)
    assert bytes(jsonl_bytes(t)) == _want(t)
    assert bytes(jsonl_bytes(t.slice(0, 0))) == b""


_SEL = ['{"a": 1, "b": "x"}', '{"a":2.50,"b":null}', '{"k": "\\u00e9t\\u00e9"}', '{"k": "été"}',
        '{"n": 9223372036854775807, "f": 1e16, "z": -0.0}', "{}", None]


@pytest.mark.parametrize("n", [1024, 3000])
@pytest.mark.parametrize("mix", ["join", "join+sel", "affected", "all"])
def test_join_events_pairs_selected_texts_nulls_big_ints(tmp_path, n, mix):
    rows = []
    for i in range(n):
        r = {"event": "join", "id": f"j{i % 5}", "at": i // 3, "r": (2**62 + i) if i % 13 == 0 else i,
             "s": None if i % 17 == 0 else i // 2}
        if i % 29 == 0:  # the int64 extremes
            r["r"], r["s"], r["at"] = -2**63, 2**63 - 1, -i
        if mix == "join+sel":
            r["left"] = _SEL[i % len(_SEL)]
            if i % 2:
                r["right"] = _SEL[(i * 3) % len(_SEL)]
        if i % 19 == 0:
            r["asked_at"] = i
        if mix == "affected":
            r = {"event": "affected", "id": f"j{i % 5}", "at": i, **({"asked_at": 7} if i % 4 == 0 else {})}
        if mix == "all":
            k = i % 8
            r = [r, {**r, "left": _SEL[i % len(_SEL)], "right": _SEL[i % 3]},
                 {"event": "affected", "id": "a", "at": i},
                 {"event": "cluster", "id": "c", "at": i, "r": i % 4},
                 {"event": "cluster_update", "id": None, "at": i, "r": None if i % 3 else 2, "value": i / 7},
                 {"event": "rejected", "id": None, "at": i, "reason": "bad \"value\" é"},
                 {"event": "late", "id": "q", "at": None, "reason": None},
                 {"event": "answer", "id": "q", "at": i, "value": 2.0, "keys": ["K"] if i % 2 else None}][k]
        rows.append(r)
    t = pa.Table.from_pylist(rows, OUTPUT_SCHEMA)
    want = _want(t)
    write_outputs(t, tmp_path / "o.jsonl")
    assert (tmp_path / "o.jsonl").read_bytes() == want
    assert bytes(jsonl_bytes(t)) == want
    for s in (t.slice(5), t.slice(2, n - 9)):  # columns that start inside their buffers
        assert bytes(jsonl_bytes(s)) == _want(s)
