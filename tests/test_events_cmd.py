"""`vigil events OUT_DIR`: a run's Parquet outputs printed as JSON lines or CSV, with filters."""

from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from vigil.cli import app
from vigil.events import OUTPUT_SCHEMA, output_rows
from vigil.pipeline import sinks


def _table(rows: list[dict]) -> pa.Table:
    full = [{f.name: r.get(f.name) for f in OUTPUT_SCHEMA} for r in rows]
    return pa.Table.from_pylist(full, schema=OUTPUT_SCHEMA)


BATCH0 = [
    {"event": "matured", "id": "t1", "at": 3},
    {"event": "rejected", "id": None, "at": 4, "reason": "column 'price' is NaN or infinite"},
    {"event": "answer", "id": "w1", "at": 5, "value": 2.5},
]
BATCH1 = [
    {"event": "join", "id": "j1", "at": 9, "r": 7, "s": 9},
    {"event": "answer", "id": "s1", "at": 10, "keys": ["A", "B"]},
    {"event": "late", "id": "w1", "at": 3, "reason": "operation at 3 arrived after element 10; applied after element 10"},
    {"event": "answer", "id": "w1", "at": 10, "asked_at": 3, "value": 12.0},
]


@pytest.fixture
def out(tmp_path):
    d = tmp_path / "out"
    sinks.write_batch(d, 0, _table(BATCH0))
    sinks.write_batch(d, 1, _table(BATCH1))
    return d


def _run(*args) -> str:
    r = CliRunner().invoke(app, ["events", *map(str, args)])
    assert r.exit_code == 0, r.output
    return r.stdout


def test_jsonl_is_the_contracts_objects_with_their_batch(out):
    got = [json.loads(ln) for ln in _run(out).splitlines()]
    events0 = [r for r in BATCH0 if r["event"] != "rejected"]
    rejected0 = [r for r in BATCH0 if r["event"] == "rejected"]
    events1 = [r for r in BATCH1 if r["event"] != "rejected"]
    want = ([{"batch": 0, **d} for d in output_rows(_table(events0 + rejected0))]
            + [{"batch": 1, **d} for d in output_rows(_table(events1))])
    assert got == want
    assert {"batch": 1, "event": "answer", "id": "s1", "at": 10, "value": ["A", "B"]} in got
    assert {"batch": 1, "event": "answer", "id": "w1", "at": 10, "asked_at": 3, "value": 12} in got


def test_filters_by_id_event_and_batch(out):
    def ids(*a):
        return [(r["batch"], r["event"], r["id"]) for r in map(json.loads, _run(out, *a).splitlines())]

    assert ids("--id", "w1") == [(0, "answer", "w1"), (1, "late", "w1"), (1, "answer", "w1")]
    assert ids("--event", "answer", "--batch", "1") == [(1, "answer", "s1"), (1, "answer", "w1")]
    assert ids("--event", "rejected") == [(0, "rejected", None)]
    assert ids("--event", "matured", "--event", "join") == [(0, "matured", "t1"), (1, "join", "j1")]
    assert ids("--batch", "0-0", "--id", "t1") == [(0, "matured", "t1")]
    assert ids("--id", "nobody") == []


def test_csv_has_one_header_and_every_event(out):
    rows = list(csv.DictReader(io.StringIO(_run(out, "--format", "csv"))))
    assert len(rows) == len(BATCH0) + len(BATCH1)
    assert list(rows[0]) == ["batch", "event", "id", "at", "asked_at", "value", "r", "s", "cluster", "reason"]
    by = {(r["event"], r["id"]): r for r in rows}
    assert by[("join", "j1")]["r"] == "7" and by[("join", "j1")]["s"] == "9"
    assert json.loads(by[("answer", "s1")]["value"]) == ["A", "B"]
    assert by[("rejected", "")]["reason"] == "column 'price' is NaN or infinite"


@pytest.mark.parametrize("args,msg", [
    (["--format", "xml"], "--format takes jsonl or csv"),
    (["--batch", "x"], "--batch 'x'"),
    (["--batch", "5-2"], "A <= B"),
])
def test_bad_arguments_are_one_line_user_errors(out, args, msg):
    r = CliRunner().invoke(app, ["events", str(out), *args])
    assert r.exit_code == 2 and msg in r.output, r.output


def test_a_folder_that_is_not_a_run_output(tmp_path):
    r = CliRunner().invoke(app, ["events", str(tmp_path)])
    assert r.exit_code == 2 and "no events/ or rejected/ folder" in r.output, r.output
    r = CliRunner().invoke(app, ["events", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "no such folder" in r.output, r.output
