"""The event-log contract end to end: validation of rows and operations, exact `at` order,
file formats, snapshot/restore."""

import json

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from vigil.checks import Log, logs, run_log
from vigil.cli import app
from vigil.engine import Engine
from vigil.events import output_rows, read_outputs, read_stream


def thr(qid, lo, hi, tau, **kw):
    return {"id": qid, "type": "threshold", "where": {"x": [lo, hi]}, "threshold": tau, **kw}


def reg(at, q):
    return {"op": "register", "at": at, "query": q}


def run(stream: dict | pa.Table, ops, **kw):
    t = stream if isinstance(stream, pa.Table) else pa.table(stream)
    return run_log(Log(t, ops, **kw))


def test_register_counts_only_later_elements_and_matures_once():
    out = run({"x": [1, 1, 1, 1, 1]}, [reg(0, thr("a", 0, 2, 2)), reg(2, thr("b", 0, 2, 2)), reg(4, thr("c", 1, 1, 1))])
    assert out == [
        {"event": "matured", "id": "a", "at": 2},
        {"event": "matured", "id": "b", "at": 4},
        {"event": "matured", "id": "c", "at": 5},
    ]


def test_ops_at_equal_positions_apply_in_file_order():
    ops = [reg(1, thr("a", 0, 9, 1)), {"op": "terminate", "at": 1, "id": "a"}, reg(1, thr("b", 0, 9, 1))]
    assert run({"x": [5, 5]}, ops) == [{"event": "matured", "id": "b", "at": 2}]
    ops = [reg(1, thr("a", 0, 9, 1)), {"op": "terminate", "at": 2, "id": "a"}]
    assert run({"x": [5, 5, 5]}, ops) == [{"event": "matured", "id": "a", "at": 2}]


def test_at_with_explicit_seq_gaps():
    t = pa.table({"seq": [10, 20, 30], "x": [1, 1, 1]})
    out = run(t, [reg(15, thr("a", 0, 2, 1)), reg(20, thr("b", 0, 2, 1)), reg(99, thr("c", 0, 2, 1))])
    assert out == [{"event": "matured", "id": "a", "at": 20}, {"event": "matured", "id": "b", "at": 30}]


def test_many_queries_mature_on_one_element_in_registration_order():
    ops = [reg(0, thr(f"q{i}", 0, 10, 3)) for i in range(50)]
    out = run({"x": [5, 5, 5]}, ops)
    assert [r["id"] for r in out] == [f"q{i}" for i in range(50)] and {r["at"] for r in out} == {3}


@pytest.mark.parametrize(
    ("rows", "reason"),
    [
        ({"x": float("nan")}, "NaN"),
        ({"x": None}, "null"),
        ({"x": "abc"}, "not a number"),
        ({"x": 1, "w": 0}, "not a positive integer"),
        ({"x": 1, "w": 2.5}, "not a positive integer"),
        ({"x": 1, "w": -4}, "not a positive integer"),
    ],
)
def test_bad_rows_rejected_with_reason_and_counted(tmp_path, rows, reason):
    lines = [json.dumps({"x": 1, "w": 1}), json.dumps(rows), json.dumps({"x": 1, "w": 1})]
    p = tmp_path / "s.jsonl"
    p.write_text("\n".join(lines).replace("NaN", "NaN"))
    t = read_stream(p)
    ops = [reg(0, thr("a", 0, 2, 2, weight="w"))]
    out = run(t, ops)
    assert out[0]["event"] == "rejected" and out[0]["at"] == 2 and reason in out[0]["reason"], out
    assert out[1] == {"event": "matured", "id": "a", "at": 3}


def test_rows_checked_only_against_columns_their_queries_reference():
    t = pa.table({"x": [1.0, 1.0, 1.0], "y": [None, None, 1.0], "k": ["a", "b", "b"]})
    ops = [reg(0, {"id": "a", "type": "threshold", "where": {"x": [0, 2], "k": "a"}, "threshold": 2}),
           reg(0, {"id": "b", "type": "threshold", "where": {"y": [0, 2], "k": "b"}, "threshold": 1})]
    out = run(t, ops)
    # row 1 (k=a) is not seen by b, so its null y is fine; row 2 (k=b) is rejected for y
    assert out == [{"event": "rejected", "id": None, "at": 2, "reason": "column 'y' is null"},
                   {"event": "matured", "id": "b", "at": 3}]


def test_malformed_and_bad_operations(tmp_path):
    eng = Engine(columns={"x"})
    eng.add_operations([
        "{not json", json.dumps({"op": "explode"}), json.dumps({"op": "lookup", "id": "zz", "at": 1}),
        json.dumps({"op": "terminate", "id": "zz"}), json.dumps({"op": "register", "at": -1, "query": thr("a", 0, 1, 1)}),
        json.dumps(reg(0, {"id": "u", "type": "unknown"})), json.dumps(reg(0, thr("d", 0, 1, 1))),
        json.dumps(reg(0, thr("d", 0, 1, 1))), json.dumps(reg(0, thr("m", 0, 1, 1) | {"where": {"nope": [0, 1]}})),
        json.dumps({"op": "lookup", "id": "d", "at": 1}), json.dumps({"op": "register", "at": 0, "query": thr("e", 0, 1, 1), "x": 1}),
    ])
    out = output_rows(eng.process(pa.table({"x": [0.5]}))) + output_rows(eng.finish())
    reasons = [r["reason"] for r in out if r["event"] == "rejected"]
    for needle in ["malformed JSON", "unknown operation", "unknown query id", "non-negative integer", "unknown query type",
                   "duplicate id", "does not have", "not alive", "unknown field"]:
        assert any(needle in r for r in reasons), (needle, reasons)
    c = eng.counts
    assert c["ops_in"] == 11 == c["ops_applied"] + c["ops_rejected"] and c["ops_applied"] == 1


def test_non_increasing_seq_rejected():
    t = pa.table({"seq": [1, 2, 2, 5, 4, 6], "x": [1, 1, 1, 1, 1, 1]})
    out = run(t, [reg(0, thr("a", 0, 2, 4))])
    rej = [r for r in out if r["event"] == "rejected"]
    assert len(rej) == 2 and all("not increasing" in r["reason"] for r in rej)
    assert out[-1] == {"event": "matured", "id": "a", "at": 6}


def test_late_operation_is_applied_and_reported():
    eng = Engine(columns={"x"})
    eng.process(pa.table({"x": [1, 1, 1]}))
    eng.add_operations([reg(1, thr("a", 0, 2, 1))])
    out = output_rows(eng.process(pa.table({"x": [1]})))
    assert out[0]["event"] == "late" and out[0]["id"] == "a"
    assert out[1] == {"event": "matured", "id": "a", "at": 4}


def _write_all_formats(tmp_path, table):
    paths = {}
    pq.write_table(table, tmp_path / "s.parquet")
    pcsv.write_csv(table, tmp_path / "s.csv")
    with open(tmp_path / "s.jsonl", "w") as f:
        for r in table.to_pylist():
            f.write(json.dumps(r) + "\n")
    for suf in ("parquet", "csv", "jsonl"):
        paths[suf] = tmp_path / f"s.{suf}"
    return paths


def test_replay_round_trips_in_three_formats(tmp_path):
    table = pa.table({"x": [float(i % 7) for i in range(200)], "w": [1 + i % 3 for i in range(200)],
                      "k": ["a" if i % 2 else "b" for i in range(200)]})
    ops = [reg(i, thr(f"q{i}", i % 5, i % 5 + 2, 5 + i, weight="w")) for i in range(30)]
    ops.append(reg(3, {"id": "kk", "type": "threshold", "where": {"x": [0, 9], "k": "a"}, "threshold": 20}))
    (tmp_path / "q.jsonl").write_text("\n".join(json.dumps(o) for o in ops))
    runner = CliRunner()
    results = {}
    for suf, path in _write_all_formats(tmp_path, table).items():
        for outsuf in ("jsonl", "parquet"):
            out = tmp_path / f"o_{suf}.{outsuf}"
            r = runner.invoke(app, ["replay", "--stream", str(path), "--queries", str(tmp_path / "q.jsonl"),
                                    "--out", str(out), "--quiet", "--batch", "37"])
            assert r.exit_code == 0, r.output
            results[(suf, outsuf)] = read_outputs(out)
    first = results[("parquet", "jsonl")]
    assert len(first) == 31 and all(r["event"] == "matured" for r in first)
    assert all(v == first for v in results.values())


def test_snapshot_restore_mid_log_equals_uninterrupted():
    t = pa.table({"x": [float(i % 11) for i in range(120)]})
    ops = [reg(i * 3, thr(f"q{i}", i % 4, i % 4 + 5, 3 + i % 9)) for i in range(40)]
    ops += [{"op": "terminate", "at": 50, "id": f"q{i}"} for i in range(30, 40)]
    base = run_log(Log(t, ops))
    for cut in (0, 1, 49, 50, 51, 119, 120):
        assert run_log(Log(t, ops), cut=cut, batch=13) == base


@st.composite
def _churn_logs(draw):
    """Threshold queries in two groups (with and without a weight) and window queries under
    heavy churn:
    terminations between any two elements, twice, of matured queries, of unknown ids, of every
    query of a group (after which the group's columns are no longer checked), and registrations
    after terminations."""
    n = draw(st.integers(1, 60))
    # bad weights (0) are rejected only while a query with a weight is alive
    # and bad values of v (null) only while a window query is alive
    t = pa.table({"x": draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)),
                  "w": draw(st.lists(st.sampled_from([1, 2, 5, 0]), min_size=n, max_size=n)),
                  "v": draw(st.lists(st.sampled_from([1.0, 2.5, None]), min_size=n, max_size=n))})
    ops = []
    for i in range(draw(st.integers(1, 14))):
        at = draw(st.integers(0, n))
        lo = draw(st.integers(0, 6))
        if draw(st.integers(0, 3)) == 0:
            q = {"id": f"q{i}", "type": "window_aggregate", "agg": "sum", "column": "v", "rows": [5, 0]}
        else:
            q = thr(f"q{i}", lo, lo + draw(st.integers(0, 3)), draw(st.integers(1, 30)))
        if draw(st.booleans()) and q["type"] == "threshold":
            q["weight"] = "w"
        ops.append(reg(at, q))
        for _ in range(draw(st.integers(0, 2))):
            ops.append({"op": "terminate", "at": draw(st.integers(max(0, at - 2), n)), "id": f"q{i}"})
    if draw(st.booleans()):
        ops.append({"op": "terminate", "at": draw(st.integers(0, n)), "id": "nobody"})
    ops.sort(key=lambda o: o["at"])
    return Log(t, ops)


@settings(max_examples=300, deadline=None)
@given(_churn_logs())
def test_terminations_inside_a_batch_equal_element_at_a_time(log):
    # batch=1 applies every operation exactly between its elements; a whole-stream batch defers
    # terminations to the end of segments (Engine._deferrable): the outputs must not differ
    assert run_log(log, batch=10**6) == run_log(log, batch=1)


@pytest.mark.parametrize("family", ["threshold", "windows", "substream", "joins", "quantiles"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_batch_size_never_changes_outputs(family, data):
    log = data.draw(logs(family))
    assert run_log(log, batch=10**6) == run_log(log, batch=1)


@pytest.mark.parametrize("impl", ["su", "csu"])
def test_terminations_are_not_deferred_in_groups_whose_queries_interact(impl):
    # SU/CSU's global trigger re-evaluates every cluster when any fires: a terminated query left
    # in the operator until the end of a segment would move the others' updates, and segments
    # depend on the batch split (these logs failed before Group.independent)
    from quantiles.test_notify import log_for

    for seed, order in ((2, "semisort"), (4, "duplicates"), (4, "random")):
        log = log_for(order, n=300, seed=seed)
        want = run_log(log, {"quantiles": impl}, batch=1)
        assert [r for r in want if r["event"] == "update"]
        for batch, cut in ((7, None), (10**6, None), (64, 130)):
            assert run_log(log, {"quantiles": impl}, batch=batch, cut=cut) == want, (seed, order, batch, cut)


@pytest.mark.parametrize("joins", [False, True])
@pytest.mark.parametrize("big_at", [False, True])
def test_segment_orders_outputs_by_at_event_query_pair(joins, big_at):
    import numpy as np

    from vigil.group import EV_NAMES, Segment

    rng = np.random.default_rng(7)
    ids = [f"q{i}" for i in range(50)]
    seg, rows = Segment(), []
    for ev in ("matured", "update", "join") if joins else ("matured", "update"):
        k = 300
        qid, at = rng.integers(0, 50, k), rng.integers(0, 2**61 if big_at else 20, k)
        r = rng.integers(0, 5, k) if ev == "join" else None
        s = rng.integers(0, 5, k) if ev == "join" else None
        seg.add(ev, qid, at, r=r, s=s)
        rows += [(int(at[i]), EV_NAMES.index(ev), ids[qid[i]], -1 if r is None else int(r[i]), -1 if s is None else int(s[i]))
                 for i in range(k)]
    counts: dict[str, int] = {}
    t = seg.table(ids, counts).to_pylist()
    got = [(x["at"], EV_NAMES.index(x["event"]), x["id"], -1 if x["r"] is None else x["r"], -1 if x["s"] is None else x["s"])
           for x in t]
    want = sorted(rows, key=lambda x: (x[0], x[1], int(x[2][1:]), x[3], x[4]))
    assert got == want and sum(counts.values()) == len(rows)


@pytest.mark.parametrize("family", ["windows", "substream", "quantiles"])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_lookups_answered_in_runs_equal_one_by_one(family, data):
    from unittest import mock

    # a run of lookups at one position is answered with one lookup_many call per group; one by
    # one (the run cut to single lookups) must give the same events in the same order
    log = data.draw(logs(family))
    at = data.draw(st.integers(0, log.stream.num_rows))
    ids = [o["query"]["id"] for o in log.ops if o["op"] == "register"] + ["nope"]
    extra = [{"op": "lookup", "at": at, "id": data.draw(st.sampled_from(ids))} for _ in range(data.draw(st.integers(2, 12)))]
    log = Log(log.stream, log.ops + extra, log.quantile_epsilon, log.join_output)
    batched = run_log(log)
    with mock.patch.object(Engine, "_lookup_run", lambda self, ops, n: [self._apply(op, n) for op in ops]):
        one_by_one = run_log(log)
    assert one_by_one == batched
    assert sum(r["event"] == "answer" for r in batched) + sum(r["event"] == "rejected" for r in batched) >= 2
