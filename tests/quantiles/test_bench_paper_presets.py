"""`vigil bench quantiles --preset fig7|fig15|eager` at a tiny scale: JSON + PNG, the ratios."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vigil.bench.quantiles import run_paper
from vigil.bench.quantiles_paper import word_stream


def test_word_stream_has_heavy_duplicates():
    x = word_stream(20_000, 1)
    vals, counts = np.unique(x, return_counts=True)
    assert len(vals) < 15_000 and counts.max() > 20 and x.min() >= 0


@pytest.mark.timeout(300)
def test_fig7_preset(tmp_path):
    out = tmp_path / "fig7.json"
    run_paper("fig7", 0.002, out, repeat=1)
    res = {r["algo"]: r["extra"] for r in json.loads(out.read_text())["results"]}
    assert (tmp_path / "fig7.png").exists()
    assert {k.split("/")[1] for k in res} == {"uni10", "uni20", "zip10", "zip20"}
    for pat in ("uni10", "zip20"):
        o, a, b = res[f"oqc/{pat}"], res[f"qc_a/{pat}"], res[f"qc_b/{pat}"]
        assert len(o["clusters"]) == o["points"] == (8 if pat == "uni10" else 18)
        # QC_B minimizes the number of clusters: never more than OQC's or QC_A's
        assert all(kb <= min(ko, ka) for kb, ko, ka in zip(b["clusters"], o["clusters"], a["clusters"], strict=True))
        assert 0 < b["avg_ratio_over_oqc"] <= 1 and a["avg_ratio_over_oqc"] > 0


@pytest.mark.timeout(300)
def test_fig15_preset(tmp_path):
    out = tmp_path / "fig15.json"
    run_paper("fig15", 0.001, out, repeat=1)
    doc = json.loads(out.read_text())
    res = {r["algo"]: r["extra"] for r in doc["results"]}
    assert (tmp_path / "fig15.png").exists() and len(res) == 8
    assert res["casu/uni10"]["x_casu"] == 1 and res["csu/uni10"]["x_casu"] > 0
    assert doc["params"]["distinct_values"] < doc["params"]["elements"]


@pytest.mark.slow  # 14 s: make test-all
@pytest.mark.timeout(300)
def test_eager_preset(tmp_path):
    out = tmp_path / "eager.json"
    run_paper("eager", 0.01, out, repeat=1, budget=0.5, queries=(50, 2000))
    res = json.loads(out.read_text())["results"]
    assert (tmp_path / "eager.png").exists()
    by = {(r["algo"], r["extra"]["queries"]): r for r in res}
    assert set(by) == {(a, q) for a in ("naive", "su", "csu", "casu") for q in (50, 2000)}
    big = by[("naive", 2000)]
    assert big["extra"]["prefix"] < big["operations"] and big["seconds"] > big["extra"]["measured_seconds"]
    assert by[("casu", 2000)]["extra"]["x_casu_query_seconds"] == 1
    assert big["seconds"] > by[("casu", 2000)]["seconds"]  # the eager baseline is the slowest
