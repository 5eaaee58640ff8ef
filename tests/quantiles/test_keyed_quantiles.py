"""Per-key quantile queries (``where``, ``group_by``): one summary per key shared by the group's
queries; a key's rows window is its last ``rows`` matching elements; results carry their key in
``keys`` (docs/contract.md, "Per-key quantiles")."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, check_family, implementations, run_log
from vigil.engine import Engine


def keyed_log(n: int, batch: int, seed: int = 5, every: int = 7) -> Log:
    rng = np.random.default_rng(seed)
    ep = rng.choice(["/a", "/b", "/c", "/login"], n, p=[0.5, 0.3, 0.15, 0.05])
    lat = rng.gamma(2.0, 50.0, n).round(1) + np.where(ep == "/login", 150, 0)
    region = rng.choice(["eu", "us"], n)
    lat[rng.random(n) < 0.02] = np.nan  # rejected rows (null latency)
    t = pa.table({"lat": pa.array(lat, mask=np.isnan(lat)), "ep": ep, "region": region})
    qs = [
        {"id": "p99", "type": "quantile", "column": "lat", "phi": 0.99, "epsilon": 0.02, "rows": 100, "group_by": "ep"},
        {"id": "p50", "type": "quantile", "column": "lat", "phi": 0.5, "epsilon": 0.01, "rows": 100, "group_by": "ep",
         "notify": True},
        {"id": "med", "type": "quantile", "column": "lat", "phi": 0.5, "epsilon": 0.01, "group_by": ["region", "ep"]},
        {"id": "eu", "type": "quantile", "column": "lat", "phi": 0.9, "epsilon": 0.01, "where": {"region": "eu"},
         "notify": True},
        {"id": "rng", "type": "quantile", "column": "lat", "phi": 0.75, "epsilon": 0.02, "rows": 50,
         "where": {"lat": [50, None], "region": "us"}, "group_by": "ep"},
        {"id": "cdf", "type": "quantile", "column": "lat", "rank_of": 120, "epsilon": 0.01, "group_by": "ep"},
        {"id": "slo", "type": "quantile", "column": "lat", "phi": 0.9, "epsilon": 0.01, "rows": 40, "group_by": "ep",
         "above": 230, "rearm": 180},
    ]
    ops = [{"op": "register", "at": 0, "query": q} for q in qs]
    ops += [{"op": "register", "at": n // 3, "query": {**qs[0], "id": "late"}},
            {"op": "terminate", "at": 2 * n // 3, "id": "p50"}]
    ops += [{"op": "lookup", "at": a, "id": q["id"]} for a in range(0, n + 1, every) for q in qs
            if not (q["id"] == "p50" and a > 2 * n // 3)]
    return Log(t, ops, quantile_epsilon=0.01, batch=batch)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", [n if n in ("casu", "sliding") else pytest.param(n, marks=pytest.mark.slow)
                                  for n in implementations("quantiles")])  # the others: make test-all
@pytest.mark.parametrize("batch", [1, 50, pytest.param(1500, marks=pytest.mark.slow)])
def test_keyed_queries_within_the_bound_at_every_position(name, batch):
    log = keyed_log(1500 if batch > 1 else 300, batch)
    check_family("quantiles", name, log, cut=log.stream.num_rows // 2)


def test_output_shape_and_windows_per_key():
    """p99 over each endpoint's last 3 requests; keys as text in ``keys``, by key; a lookup before
    any element answers an empty key list."""
    t = pa.table({"lat": [10.0, 20.0, 30.0, 40.0, 5.0, 7.0, 100.0], "ep": ["a", "b", "a", "a", "b", "a", "c"]})
    ops = [{"op": "register", "at": 0, "query": {"id": "p", "type": "quantile", "column": "lat", "phi": 1.0,
                                                 "epsilon": 0.01, "rows": 3, "group_by": "ep"}},
           {"op": "lookup", "at": 0, "id": "p"}, {"op": "lookup", "at": 7, "id": "p"}]
    out = run_log(Log(t, ops, quantile_epsilon=0.01, batch=3), {"quantiles": "casu"})
    assert out == [{"event": "answer", "id": "p", "at": 0, "value": []},
                   {"event": "answer", "id": "p", "at": 7, "keys": ["a"], "value": 40},  # a: 30, 40, 7
                   {"event": "answer", "id": "p", "at": 7, "keys": ["b"], "value": 20},
                   {"event": "answer", "id": "p", "at": 7, "keys": ["c"], "value": 100}]


def test_queries_sharing_a_key_share_one_summary():
    eng = Engine({"quantiles": "casu"}, 0.01, columns={"lat", "ep"})
    ops = [{"op": "register", "at": 0, "query": {"id": f"q{i}", "type": "quantile", "column": "lat",
                                                 "phi": 0.1 + 0.08 * i, "epsilon": 0.01, "group_by": "ep"}}
           for i in range(10)]
    eng.add_operations(ops)
    rng = np.random.default_rng(1)
    eng.process(pa.table({"lat": rng.random(5000), "ep": rng.choice([f"k{i}" for i in range(40)], 5000)}))
    (g,) = [g for g in eng.groups.values() if g.family == "quantiles"]
    assert len(g.ops) == 40 and all(op.alive() == 10 for op in g.ops)  # 40 summaries, not 400


def test_snapshot_restore_and_batches_give_the_same_events():
    log = keyed_log(900, 64)
    whole = run_log(log, {"quantiles": "casu"})
    assert any(r["event"] == "update" and r.get("keys") for r in whole)
    assert any(r["event"] in ("alert", "clear") and r.get("keys") for r in whole)
    for cut in (1, 450, 899):
        assert run_log(log, {"quantiles": "casu"}, cut=cut) == whole


def test_replay_parquet_and_monitor(tmp_path):
    import json

    import pyarrow.parquet as pq
    from typer.testing import CliRunner

    from vigil import Monitor
    from vigil.cli import app
    from vigil.events import read_outputs

    log = keyed_log(400, 64)
    pq.write_table(log.stream, tmp_path / "s.parquet")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(op) + "\n" for op in log.ops))
    for suffix in ("jsonl", "parquet"):
        r = CliRunner().invoke(app, ["replay", "--stream", str(tmp_path / "s.parquet"), "--queries",
                                     str(tmp_path / "q.jsonl"), "--out", str(tmp_path / f"o.{suffix}"), "--quiet",
                                     "--no-precompile", "--batch", "64", "--quantile-epsilon", "0.01"])
        assert r.exit_code == 0, r.output
        assert read_outputs(tmp_path / f"o.{suffix}") == run_log(log)
    m = Monitor(quantile_epsilon=0.01)
    m.register("SELECT ep, APPROX_QUANTILE(lat, 0.5, 0.01) FROM requests [ROWS 100] GROUP BY ep", id="k")
    m.register({"id": "two", "type": "quantile", "column": "lat", "phi": 0.5, "epsilon": 0.01,
                "group_by": ["region", "ep"]})
    assert m.lookup("k") == []
    m.push(log.stream)
    got = m.lookup("k")
    assert sorted(got) == ["/a", "/b", "/c", "/login"] and all(isinstance(v, float | int) for v in got.values())
    assert ("eu", "/a") in m.lookup("two")


def test_keyed_specs_are_validated():
    from vigil.specs import SpecError, parse_query

    base = {"id": "a", "type": "quantile", "column": "v", "phi": 0.5, "epsilon": 0.01}
    for extra, reason in [({"group_by": []}, "distinct key columns"), ({"where": {}}, "at least one column"),
                          ({"group_by": "v", "where": {"v": [1, 2]}}, "range column"),
                          ({"group_by": "k", "notify": "cluster"}, "not served with where/group_by"),
                          ({"where": {"v": [3, 1]}}, "inverted range")]:
        with pytest.raises(SpecError, match=reason):
            parse_query({**base, **extra})
