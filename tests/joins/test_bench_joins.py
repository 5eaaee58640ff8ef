"""Smoke test of ``vigil bench joins`` presets at a tiny scale (JSON + PNG written, every
strategy measured, all strategies count the same pairs at each point and batch)."""

from __future__ import annotations

import json

import pytest

from vigil.bench.joins import run_preset


@pytest.mark.slow  # a benchmark preset end to end: make test-all
@pytest.mark.parametrize("preset", ["fig7", "fig7c", "fig10", "fig11"])
def test_bench_presets_smoke(tmp_path, preset):
    out = tmp_path / f"{preset}.json"
    run_preset(preset, scale=0.001, batches=[1, 50], budget=0.1, out=out)
    doc = json.loads(out.read_text())
    assert doc["family"] == "joins" and doc["results"]
    assert out.with_suffix(".png").exists()
    if preset == "fig11":  # every update-cost run: a warm-up, then 3 interleaved CPU samples
        for r in (r for r in doc["results"] if "cpu_s_samples" in r["extra"]):
            e = r["extra"]
            assert e["warmed"] and e["repeat"] == 3 == len(e["us_per_update_samples"])
            assert min(e["us_per_update_samples"]) <= r["per_op_us"] * 1.0001 and \
                r["per_op_us"] <= max(e["us_per_update_samples"]) * 1.0001
        assert sum("cpu_s_samples" in r["extra"] for r in doc["results"]) >= 2
    else:
        eng = [r for r in doc["results"] if r["algo"] == "engine"]  # the engine column (bench.engine_path)
        assert len(eng) == {"fig7": 9, "fig7c": 5}.get(preset, 0)  # one per sweep point of a select preset
        for r in eng:  # the engine path's join events equal the operator path's pairs, each point
            e = r["extra"]
            assert e["verified"] and e["engine_outputs"] == e["operator_outputs"] and e["arrivals"] > 0
            assert e["engine_arrivals_s"] > 0 and e["operator_arrivals_s"] > 0 and e["rejected"] == 0
        doc["results"] = [r for r in doc["results"] if r["algo"] != "engine"]
        for r in doc["results"]:  # several interleaved CPU-timed samples per cell: median within the range
            e = r["extra"]
            assert e["samples"] >= 1 and e["us_per_tuple_range"][0] <= r["per_op_us"] <= e["us_per_tuple_range"][1]
        # runs that pushed the same tuples must count the same pairs (ours and DuckDB)
        by: dict = {}
        for r in doc["results"]:
            p = r["extra"]["point"]
            by.setdefault((tuple(sorted(p.items())), r["operations"]), set()).add(round(r["extra"]["pairs_per_tuple"], 6))
        assert all(len(v) == 1 for v in by.values()), by


def test_select_workload_spreads_rangec_over_sc():
    """Table I's workload: the rangeC midpoints are spread over S.C's domain (not only [0, 10^4],
    the 'clustered C' variant), with lengths scaled to keep tau near the paper's ~30."""
    from vigil.joins.partition import stabbing_number
    from vigil.workloads import joins as wl

    w = wl.select_workload(n_queries=20_000, n_tuples=1_000, n_arrivals=1)
    mid = w["rows"][:, 2:].mean(axis=1)
    assert mid.max() > 900_000 and mid.min() < 100_000 and w["s_x"].max() > 900_000
    assert 15 <= stabbing_number(w["rows"][:, 2], w["rows"][:, 3]) <= 60
    c = wl.select_workload(n_queries=20_000, n_tuples=1_000, n_arrivals=1, c_domain=10_000.0)
    assert c["rows"][:, 2:].mean(axis=1).max() < 11_000
