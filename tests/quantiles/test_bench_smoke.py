"""Smoke test of `vigil bench quantiles` presets at a tiny scale (the JSON has the contract's shape)."""

from __future__ import annotations

import json

import pytest

from vigil.bench.quantiles import run_preset


@pytest.mark.slow  # a benchmark preset end to end: make test-all
@pytest.mark.parametrize(("preset", "scale"), [("fig5", 0.001), ("targets", 0.002), ("peers", 0.001),
                                               ("fig12", 0.001)])
def test_preset_runs(tmp_path, preset, scale):
    out = tmp_path / f"{preset}.json"
    run_preset(preset, scale=scale, out=out)
    doc = json.loads(out.read_text())
    assert doc["family"] == "quantiles" and doc["preset"] == preset
    assert doc["results"] and all(r["seconds"] >= 0 and r["operations"] > 0 for r in doc["results"])
    if preset == "peers":
        err = {r["algo"]: r["extra"]["max_rank_error"] for r in doc["results"]}
        assert err["gk"] <= 0.005 + 1e-3
    if preset == "targets":
        ratio = next(r for r in doc["results"] if r["algo"] == "oqc_vs_qcb")["extra"]["ratio"]
        assert ratio <= 1.5


def test_targets_both_notify_modes(tmp_path):
    out = tmp_path / "targets.json"
    run_preset("targets", scale=0.002, out=out, notify="query,cluster")
    res = {r["algo"]: r["extra"] for r in json.loads(out.read_text())["results"]}
    q, c = res["casu/uniform"], res["casu:cluster/uniform"]
    assert q["notify"] == "query" and q["update_events"] > 0 and q["cluster_updates"] == q["memberships"] == 0
    assert c["notify"] == "cluster" and c["update_events"] == 0 and c["memberships"] >= c["queries"]
    assert 0 < c["cluster_updates"] == c["changes"] and c["walks"] == 0
    assert c["vs_kll_reanswer"] > 0 and c["summary4_seconds"] > 0
    with pytest.raises(ValueError):
        run_preset("targets", scale=0.002, out=out, notify="members")
