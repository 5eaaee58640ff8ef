"""Smoke tests of ``vigil bench joins --fit`` and the data-sensitive presets (fig12/15/18) at a
tiny scale: JSON (+ PNG) written, parameters shipped and loadable, decisions recorded."""

from __future__ import annotations

import json

import pytest

from vigil.bench.joins import run_preset
from vigil.bench.joins_dynamic import run_fit, ship
from vigil.joins import costs
from vigil.joins.dynamic import Dynamic


@pytest.mark.slow  # a benchmark preset end to end (~20 s): make test-all
def test_fit_ship_and_load(tmp_path, monkeypatch):
    out = tmp_path / "fit.json"
    doc = run_fit(scale=0.001, per_point=8, grid=[100_000, 300_000], out=out)
    assert set(doc["params"]) == {"select", "window", "band"}
    for kind, strat in costs.MODELS.items():
        for s, terms in strat.items():
            assert [p for p, _ in terms] == list(doc["params"][kind][s])
    target = tmp_path / "shipped.py"
    ship(out, target)
    ns: dict = {}
    exec(target.read_text(), ns)
    assert ns["PARAMS"]["select"]["join_first"]["alpha_J"] == float(f"{doc['params']['select']['join_first']['alpha_J']['value']:.6g}")
    monkeypatch.setenv("VIGIL_JOIN_COSTS", str(out))
    assert Dynamic("select").params["vanilla"]["gamma_V"] == doc["params"]["select"]["vanilla"]["gamma_V"]["value"]


@pytest.mark.slow  # a benchmark preset end to end: make test-all
def test_dynamic_preset_smoke(tmp_path):
    out = tmp_path / "fig12.json"
    run_preset("fig12", scale=0.001, batches=[50], budget=0.05, out=out)
    doc = json.loads(out.read_text())
    algos = {r["algo"] for r in doc["results"]}
    assert algos == {"join_first", "select_first", "vanilla", "hotspot", "dynamic", "optimum", "oracle"}
    for r in doc["results"]:
        if r["algo"] == "optimum":
            assert 0 <= r["extra"]["match"] <= 1 and sum(r["extra"]["breakdown"].values()) == r["extra"]["n"]
    assert out.with_suffix(".png").exists()


@pytest.mark.slow  # a benchmark preset end to end: make test-all
def test_fig9mix_preset_smoke(tmp_path):
    out = tmp_path / "fig9mix.json"
    run_preset("fig9mix", scale=0.001, batches=[50], budget=0.05, out=out)
    doc = json.loads(out.read_text())
    assert {r["algo"] for r in doc["results"]} >= {"dynamic", "join_first", "select_first", "optimum", "group_ceiling"}
    assert {r["extra"]["point"]["size"] for r in doc["results"]} == {100, 500}
