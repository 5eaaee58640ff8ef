"""Smoke test of the substream benchmark (paper 002 §6.3, Fig. 12) at a tiny scale, and of its
workload: every algorithm gives the same answers, the JSON and the PNG are written."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vigil.bench.substream import run_preset
from vigil.workloads.substream import DAY_OPEN, DAY_SECONDS, ssf_queries, trade_day


def test_workload_shape():
    day = trade_day(20_000, 5000, seed=3)
    assert np.all(np.diff(day.times) >= 0)
    assert DAY_OPEN <= day.times[0] and day.times[-1] <= DAY_OPEN + DAY_SECONDS
    assert day.keys.max() < 5000 and len(np.unique(day.keys)) > 1000
    qs = ssf_queries(day, 50)
    assert np.all((qs.T >= 900) & (qs.T <= 10800)) and np.all(qs.v >= 0)


@pytest.mark.slow  # a benchmark preset end to end (~20 s): make test-all
def test_fig12_smoke(tmp_path):
    out = tmp_path / "fig12.json"
    doc = run_preset("fig12", 0.003, None, out, progress=False)
    assert json.loads(out.read_text())["preset"] == "fig12"
    assert out.with_suffix(".png").exists()
    algos = {r["algo"] for r in doc["results"]}
    assert algos == {"ci", "naive", "naive_probe", "duckdb", "engine"}
    for r in doc["results"]:
        assert r["extra"]["verified"], r
        assert 0 < r["extra"]["selectivity"] < 0.5
        assert r["operations"] > 0 and r["seconds"] > 0
