"""events.jsonl_lines (the JSONL writer of vigil replay) writes exactly json.dumps of
output_rows' objects, for every event kind and odd values."""

from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.events import OUTPUT_SCHEMA, jsonl_lines, output_rows

EVENTS = ["answer", "update", "alert", "clear", "join", "cluster", "cluster_update", "rejected", "late", "matured"]
text = st.text(max_size=6)
maybe_int = st.none() | st.integers(-2**62, 2**62)
floats = st.none() | st.floats(allow_nan=True, allow_infinity=False) | st.integers(-2**60, 2**60).map(float)
sel = st.none() | st.dictionaries(st.text(max_size=3), st.integers() | st.text(max_size=3), max_size=3).map(json.dumps)
row = st.fixed_dictionaries({
    "event": st.sampled_from(EVENTS), "id": st.none() | text, "at": maybe_int, "value": floats,
    "keys": st.none() | st.lists(text, max_size=3), "r": maybe_int, "s": maybe_int, "reason": st.none() | text,
    "asked_at": maybe_int, "left": sel, "right": sel})


@settings(max_examples=200, deadline=None)
@given(st.lists(row, max_size=30))
def test_same_text_as_dumps_of_output_rows(rows):
    t = pa.Table.from_pylist(rows, OUTPUT_SCHEMA)
    assert jsonl_lines(t) == [json.dumps(d) + "\n" for d in output_rows(t)]


def test_a_table_without_the_newer_columns():
    t = pa.table({"event": ["answer"], "id": ["q"], "at": [3], "value": [2.5]})
    assert jsonl_lines(t) == ['{"event": "answer", "id": "q", "at": 3, "value": 2.5}\n']
