"""events.jsonl_lines on tables of >= 1,024 rows (its lines joined by Arrow, one text array per
column) writes exactly json.dumps of output_rows' objects, as on small tables."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_jsonl_writer import row
from vigil.events import OUTPUT_SCHEMA, jsonl_lines, output_rows


@pytest.mark.timeout(300)
@settings(max_examples=40, deadline=None)
@given(st.lists(row, min_size=1, max_size=40), st.integers(0, 1100))
def test_large_tables_same_text_as_dumps_of_output_rows(rows, cut):
    rows = (rows * (1100 // len(rows) + 1))[:1100]
    t = pa.Table.from_pylist(rows, OUTPUT_SCHEMA)
    want = [json.dumps(d) + "\n" for d in output_rows(t)]
    assert jsonl_lines(t) == want
    chunked = pa.concat_tables([t.slice(0, cut), t.slice(cut)])  # several chunks per column
    assert jsonl_lines(chunked) == want


def test_answers_with_null_ids_and_positions():
    t = pa.Table.from_pylist([{"event": "answer", "id": None if i % 3 else f'q"{i}é', "at": None if i % 5 else i,
                               "value": i / 7} for i in range(2000)], OUTPUT_SCHEMA)
    assert jsonl_lines(t) == [json.dumps(d) + "\n" for d in output_rows(t)]
