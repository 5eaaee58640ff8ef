"""Smoke test of ``vigil bench joins`` presets at a tiny scale (JSON + PNG written, every
strategy measured, all strategies count the same pairs at each point and batch)."""

from __future__ import annotations

import json

import pytest

from vigil.bench.joins import run_preset


@pytest.mark.slow  # a benchmark preset end to end: make test-all
@pytest.mark.parametrize("preset", ["fig7", "fig10", "fig11"])
def test_bench_presets_smoke(tmp_path, preset):
    out = tmp_path / f"{preset}.json"
    run_preset(preset, scale=0.001, batches=[1, 50], budget=0.1, out=out)
    doc = json.loads(out.read_text())
    assert doc["family"] == "joins" and doc["results"]
    assert out.with_suffix(".png").exists()
    if preset != "fig11":
        # runs that pushed the same tuples must count the same pairs (ours and DuckDB)
        by: dict = {}
        for r in doc["results"]:
            p = r["extra"]["point"]
            by.setdefault((tuple(sorted(p.items())), r["operations"]), set()).add(round(r["extra"]["pairs_per_tuple"], 6))
        assert all(len(v) == 1 for v in by.values()), by
