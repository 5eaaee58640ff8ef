"""vigil bench engine: the user's path end to end at a small scale: every configuration timed,
the floor's output count equal to the engine's, the JSON and the PNG written."""

import json

import pytest

from vigil.bench import engine as be


@pytest.mark.slow  # a benchmark preset end to end: make test-all
@pytest.mark.timeout(900)
def test_engine_preset_small(tmp_path):
    out = tmp_path / "engine.json"
    doc = be.run_preset("tour", scale=0.1, out=out, repeat=2, batch=500)
    assert json.loads(out.read_text())["preset"] == "tour"
    assert out.with_suffix(".png").stat().st_size > 0
    rows = {r["algo"]: r for r in doc["results"]}
    assert set(rows) == {"all", *(f for f in be.FAMILIES if rows.get(f))}
    for fam in be.FAMILIES:
        if fam in rows:
            e = rows[fam]["extra"]
            assert e["floor_outputs"] == e["engine_outputs"], fam
            assert len(e["cpu_s"]) == 2 and e["elements_per_s"] > 0
            assert e["cpu_s_samples"] == e["cpu_s"] and e["warmed"] and e["repeat"] == 2
            assert e["operator_s"] + e["engine_s"] == pytest.approx(rows[fam]["seconds"])
    assert rows["all"]["extra"]["outputs"] == sum(rows[f]["extra"]["outputs"] for f in be.FAMILIES if f in rows)
