"""Smoke test of every ``vigil bench windows`` preset at a tiny scale (the real runs are in
docs/experiments/windows.md): JSON with the contract's shape, a PNG, verified answers."""

from __future__ import annotations

import json

import pytest

from vigil.bench.windows import run_preset


@pytest.mark.slow  # a benchmark preset end to end (~20 s): make test-all
@pytest.mark.parametrize(("preset", "algos"), [
    ("fig9", ["rint_sum", "bint_sum", "materialize_all_sum", "duckdb_sum", "duckdb_rangejoin_sum",
              "bottleneck_sum"]),
    ("fig10", ["rint_sum", "slickdeque_max"]),
    ("fig11", ["bint_max", "auto_max", "auto_quantile", "duckdb_max", "duckdb_quantile", "duckdb_rangejoin_sum",
               "bottleneck_max"]),
])
def test_preset_smoke(tmp_path, preset, algos):
    out = tmp_path / f"{preset}.json"
    run_preset(preset, scale=1e-4, algos=algos, out=out, batches=[50], budget=0.05, progress=False)
    doc = json.loads(out.read_text())
    assert doc["family"] == "windows" and doc["preset"] == preset
    assert {r["algo"] for r in doc["results"]} == set(algos)
    assert all(r["extra"].get("verified", True) for r in doc["results"])
    assert all(r["seconds"] > 0 and r["operations"] > 0 for r in doc["results"])
    assert out.with_suffix(".png").stat().st_size > 0
