"""`vigil bench quantiles --preset spark` end to end at a tiny scale: Spark SQL's percentile_approx
(and Spark's KLL functions) beside GK and casu on the same stream and checkpoints."""

from __future__ import annotations

import json

import numpy as np
import pytest

from vigil.bench.quantiles_spark import rank_errors


def test_rank_errors_against_the_prefix():
    x = np.arange(1.0, 101.0)  # prefix of 50: ranks 1..50; of 100: 1..100
    phis = np.array([0.5])
    err = rank_errors(x, [50, 100], np.array([[25.0], [53.0]]), phis)
    assert err[0, 0] == 0 and err[1, 0] == pytest.approx(3 / 100)


@pytest.mark.slow  # a Spark session: make test-all
@pytest.mark.timeout(900)
def test_spark_preset(tmp_path):
    from vigil.bench.quantiles import run_preset

    out = tmp_path / "spark.json"
    run_preset("spark", scale=0.002, out=out)
    doc = json.loads(out.read_text())
    assert (tmp_path / "spark.png").exists()
    res = {r["algo"]: r["extra"] for r in doc["results"]}
    assert doc["params"]["session_start_seconds"] > 0 and len(doc["params"]["checkpoints"]) == 20
    for stream in ("uniform", "semisort"):
        for name in ("gk", "casu:cluster", "spark_join", "spark_window"):
            e = res[f"{name}/{stream}"]
            assert e["within_bound"] is True and e["max_rank_error"] <= 0.005 + 1 / 200  # eps N + 1 ranks
            assert e["cpu_seconds"] > 0 and e["wall_seconds"] > 0 and e["cpu_over_casu"] > 0
        kll = res[f"spark_kll/{stream}"]
        assert kll["max_rank_error"] < 0.05 and kll["load_seconds"] > 0
        assert res[f"spark_join/{stream}"]["accuracy"] == 200
