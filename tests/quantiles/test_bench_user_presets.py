"""vigil bench quantiles --preset sliding|registered end to end at a small scale: JSON + PNG, every
configuration measured, the engine and operator runs of one workload give the same events."""

from __future__ import annotations

import json

import pytest

from vigil.bench.quantiles_user import run_user_preset


@pytest.mark.slow  # ~1-2 min at load: make test-all
@pytest.mark.timeout(900)
@pytest.mark.parametrize(("preset", "scale"), [("sliding", 0.1), ("registered", 0.2)])
def test_user_presets_run(tmp_path, preset, scale):
    out = tmp_path / f"{preset}.json"
    doc = run_user_preset(preset, scale, out, repeat=2)
    assert out.exists() and out.with_suffix(".png").exists()
    res = {r["algo"]: r for r in json.loads(out.read_text())["results"]}
    assert len(res) == (6 if preset == "sliding" else 8) and all(r["seconds"] > 0 for r in res.values())
    for r in res.values():  # the median of the interleaved runs, every sample kept
        ex = r["extra"]
        assert ex["warmed"] and ex["repeat"] == len(ex["cpu_s_samples"]) == 2
        assert r["seconds"] == pytest.approx(ex["cpu_s_median"]) and ex["cpu_s_range"][0] <= r["seconds"] <= ex["cpu_s_range"][1]
    if preset == "sliding":
        assert res["engine/notify"]["extra"]["events"] == res["operator/notify"]["extra"]["events"] > 0
        assert res["current/notify10"]["extra"]["x_faster_than_baseline"] > 1
    else:
        assert all("x_one" in r["extra"] for k, r in res.items() if k.startswith("distinct/"))
    assert doc["preset"] == preset
