"""`vigil bench quantiles --preset clustered|matched` at a tiny scale: the peers' contract scoring
and the matched-accuracy tuning."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vigil.bench.quantiles import run_preset
from vigil.bench.quantiles_peers import casu_clusters, contract_failures


def test_contract_failures_exact_and_off():
    srt = np.arange(1.0, 1001.0)  # ranks 1..1000
    phi = np.array([0.5, 0.5, 0.5])
    eq = np.full(3, 0.01)  # tolerance 0.01 * 1000 + 1 = 11 ranks around 500
    bad = contract_failures(srt, np.array([500.0, 511.0, 512.0]), phi, eq)
    assert bad.tolist() == [False, False, True]


def test_casu_clusters_cover_members():
    from vigil.quantiles.casu import CASU
    from vigil.quantiles.clustering import query_interval

    phi = np.random.default_rng(1).random(2000) * 0.98 + 0.01
    eq = np.full(2000, 0.01)
    cluster, rep = casu_clusters(phi, eq, 0.005)
    a, b = query_interval(phi, eq, 0.005 * CASU.summary_ratio)
    assert len(rep) < 200 and np.all((a <= rep[cluster] + 1e-12) & (rep[cluster] <= b + 1e-12))


@pytest.mark.timeout(300)
def test_clustered_preset(tmp_path):
    out = tmp_path / "clustered.json"
    run_preset("clustered", scale=0.002, out=out)
    res = {r["algo"]: r["extra"] for r in json.loads(out.read_text())["results"]}
    full, clus = res["kll_reanswer/uniform"], res["kll_clustered/uniform"]
    assert clus["answered_per_recompute"] == clus["clusters"] < full["answered_per_recompute"] == full["queries"]
    for e in (full, clus, res["kll_clustered_k/semisort"]):
        assert 0 <= e["fresh_pair_fail_frac"] <= 1 and e["stale_positions"] > 0 and e["casu_speedup"] > 0
    assert res["kll_reanswer/semisort"]["stale_pair_fail_frac"] > 0.1  # stale answers on a drifting stream
    assert (tmp_path / "clustered.png").exists()


@pytest.mark.timeout(300)
def test_matched_preset(tmp_path):
    out = tmp_path / "matched.json"
    run_preset("matched", scale=0.004, out=out)
    res = {r["algo"]: r["extra"] for r in json.loads(out.read_text())["results"]}
    assert set(res) == {"gk", "kll", "req", "tdigest"}
    assert res["gk"]["max_rank_error"] <= 0.005 + 1e-9
    for e in res.values():
        assert e["space_bytes"] > 0 and e["tail_max_rel_error"] >= 0 and 0.5 < e["vs_target"] < 2
