"""The engine's join history with a horizon (vigil.history, ``--join-history COLUMN:H``; issue
13 deliverable 5): memory O(rows within H) on a long stream, the same outputs as the whole
history for every join it accepts, and a clear rejection for the joins it cannot serve."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, run_log
from vigil.engine import Engine
from vigil.history import parse_horizon


def wj(qid, window, max_window=None, a=(0, 30)):
    q = {"id": qid, "type": "window_join", "left": "R", "right": "S", "left_on": "k", "right_on": "k",
         "window": window, "time_column": "ts", "left_range": {"x": list(a)}}
    if max_window is not None:
        q["max_window"] = max_window
    return q


def bj(qid, left="R", right="S"):
    return {"id": qid, "type": "band_join", "left": left, "right": right, "left_on": "x", "right_on": "x",
            "band": [0, 0.5]}


def reg(at, q):
    return {"op": "register", "at": at, "query": q}


def stream(n, seed=0, t0=0.0):
    rng = np.random.default_rng(seed)
    return pa.table({"rel": np.where(rng.random(n) < 0.5, "R", "S"), "k": rng.integers(0, 5, n),
                     "x": rng.integers(0, 30, n).astype(float),
                     "ts": t0 + np.cumsum(rng.integers(0, 3, n)).astype(float)})


def test_late_window_joins_get_the_same_pairs_with_a_bounded_history():
    t = stream(3000, seed=1)
    ops = [reg(0, wj("early", 5.0)), reg(0, wj("early_b", 4.0, max_window=8.0))]
    ops += [reg(a, wj(f"late{a}", w, max_window=m)) for a, w, m in
            ((700, 3.0, 6.0), (1500, 6.0, 6.0), (2200, 2.0, 8.0), (2900, 6.0, 8.0))]
    ops += [{"op": "terminate", "at": 2500, "id": "late700"}]
    whole = run_log(Log(t, ops))
    for cut in (None, 1601):  # also through a snapshot / restore
        bounded = run_log(Log(t, ops, join_history="ts:8"), cut=cut)
        assert bounded == whole
    assert sum(r["event"] == "join" for r in whole) > 500
    assert {r["id"] for r in whole if r["event"] == "join"} >= {"early", "late700", "late1500", "late2200"}


def test_memory_stays_bounded_on_a_long_stream():
    eng = Engine(columns={"rel", "k", "x", "ts"}, join_history="ts:10")
    eng.add_operations([reg(0, wj("w", 3.0, max_window=10.0))])
    sizes = []
    for part in range(8):
        eng.process(stream(5000, seed=part, t0=part * 1e5).append_column(
            "seq", pa.array(np.arange(part * 5000 + 1, part * 5000 + 5001))))
        eng.take_outputs()
        sizes.append(sum(t.num_rows for t in eng.history))
    # rows within 10 time units of the newest: ~10 rows (1 time unit per row on average), plus the
    # amortisation slack (a compaction when the kept rows have doubled, at least 1,024 rows)
    assert max(sizes) <= 2 * 1024 + 64, sizes
    assert eng.history.dropped >= 8 * 5000 - max(sizes)


def test_joins_the_history_cannot_serve_are_rejected_with_the_reason():
    t = stream(600, seed=2)
    ops = [reg(0, bj("band_early")), reg(0, wj("w0", 2.0, max_window=4.0)),
           reg(300, bj("band_late", "S", "R")), reg(300, wj("no_bound", 2.0)), reg(300, wj("too_wide", 2.0, max_window=9.0)),
           reg(300, wj("fits", 2.0, max_window=4.0, a=(0, 29)))]
    out = run_log(Log(t, ops, join_history="ts:4"))
    rejected = {r["id"]: r["reason"] for r in out if r["event"] == "rejected"}
    assert set(rejected) == {"band_late", "no_bound", "too_wide"}
    for why in rejected.values():
        assert "join history" in why and "--join-history ts:4" in why and "max_window <= 4" in why
    whole = run_log(Log(t, ops))
    keep = {"band_early", "w0", "fits"}
    assert [r for r in out if r["id"] in keep] == [r for r in whole if r["id"] in keep]
    assert not any(r["event"] == "rejected" for r in whole)


def test_a_join_joining_an_existing_group_is_unaffected():
    """band_late shares band_early's group (same parameters): the group holds its relations."""
    t = stream(400, seed=3)
    ops = [reg(0, bj("band_early")), reg(250, {**bj("band_late")})]
    out = run_log(Log(t, ops, join_history="ts:2"))
    assert not any(r["event"] == "rejected" for r in out)
    assert out == run_log(Log(t, ops))


@pytest.mark.parametrize("bad", ["ts", "ts:", ":5", "ts:0", "ts:-1", "ts:nan", "ts:inf", "ts:x"])
def test_bad_horizons_are_refused_with_the_form(bad):
    with pytest.raises(ValueError, match="COLUMN:H"):
        parse_horizon(bad)
    with pytest.raises(ValueError, match="COLUMN:H"):
        Engine(join_history=bad)


def test_horizon_parses_columns_with_colons():
    assert parse_horizon("a:b:2.5") == ("a:b", 2.5)
    assert parse_horizon(None) is None and parse_horizon("") is None


def test_the_pipeline_passes_the_horizon_to_its_engines(tmp_path):
    """Driver and sharded mode build their engines with the run's --join-history (no Spark here)."""
    from vigil.pipeline.config import RunConfig
    from vigil.pipeline.driver import DriverProcessor
    from vigil.pipeline.sharded import ShardedProcessor

    cfg = RunConfig(stream=str(tmp_path / "s"), queries=str(tmp_path / "q"), out=str(tmp_path / "o"),
                    checkpoint=str(tmp_path / "c"), join_history="ts:8")
    assert DriverProcessor(cfg, {"rel", "k", "x", "ts"}).new_engine().history.horizon == ("ts", 8.0)
    assert ShardedProcessor(cfg, {"rel", "k", "x", "ts"}, None).settings()["join_history"] == "ts:8"
    assert Engine(**ShardedProcessor(cfg, None, None).settings()).history.horizon == ("ts", 8.0)
    assert cfg.fingerprint()["join_history"] == "ts:8"


def _replay(tmp_path, rows, ops, *extra):
    """``vigil replay`` of a JSONL stream and operations; the output rows."""
    import json

    from typer.testing import CliRunner

    from vigil.cli import app
    from vigil.events import read_outputs

    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops))
    out = tmp_path / "o.jsonl"
    r = CliRunner().invoke(app, ["replay", "--stream", str(tmp_path / "s.jsonl"), "--queries",
                                 str(tmp_path / "q.jsonl"), "--out", str(out), "--quiet", *extra])
    assert r.exit_code == 0, r.output
    return [{k: v for k, v in row.items() if v is not None} for row in read_outputs(str(out))]


def _wj_k(qid, window=10, max_window=10):
    q = {"id": qid, "type": "window_join", "left": "R", "right": "S", "left_on": "k", "right_on": "k",
         "window": window, "time_column": "ts"}
    if max_window is not None:
        q["max_window"] = max_window
    return q


@pytest.mark.timeout(300)
def test_rows_are_dropped_against_their_own_relations_newest_time(tmp_path):
    """Issue 22 (6): R(ts 5), X(ts 1000), S(ts 6), a window join registered at 2 with max_window
    10. Time order is enforced per join group, so X's time does not age R's rows: the bounded
    history keeps R(5) and the pair (1, 3) appears as with the whole history."""
    rows = [{"rel": "R", "k": 1, "ts": 5}, {"rel": "X", "k": 1, "ts": 1000}, {"rel": "S", "k": 1, "ts": 6}]
    ops = [reg(2, _wj_k("w"))]
    whole = _replay(tmp_path, rows, ops)
    assert [(r["event"], r["r"], r["s"]) for r in whole] == [("join", 1, 3)]
    assert _replay(tmp_path, rows, ops, "--join-history", "ts:10") == whole


def test_a_group_whose_history_lost_pairs_is_refused_with_the_reason():
    """R(5) is dropped (R's newest time is 100), but R(100) has a null key, so the window join
    registered later does not store it and could not rule out a pair of a row to come (S at 6)
    with the dropped R(5): it is refused with the reason instead of losing the pair."""
    t = pa.table({"rel": ["R", "R", "S", "S"], "k": [1, None, 1, 1], "ts": [5.0, 100.0, 2.0, 6.0]})
    ops = [reg(3, _wj_k("w"))]
    whole = run_log(Log(t, ops))
    assert [(r["event"], r["r"], r["s"]) for r in whole] == [("join", 1, 4)]
    out = run_log(Log(t, ops, join_history="ts:10"))
    assert [r["event"] for r in out] == ["rejected"] and out[0]["id"] == "w"
    assert "join history" in out[0]["reason"] and "'R'" in out[0]["reason"]


def test_per_relation_horizons_survive_a_snapshot():
    eng = Engine(columns={"rel", "k", "ts"}, join_history="ts:10")
    eng.process(pa.table({"seq": [1, 2, 3, 4], "rel": ["R", "X", "R", "X"], "k": ["1"] * 4,
                          "ts": [5.0, 1000.0, 20.0, 2000.0]}))
    assert eng.history.dropped == 2 and eng.history.frontier("R") == 5.0 and eng.history.frontier("X") == 1000.0
    back = Engine.restore(eng.snapshot()).history
    assert (back.newest_rel, back.dropped_rel) == (eng.history.newest_rel, eng.history.dropped_rel)
