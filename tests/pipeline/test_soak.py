"""A short soak: continuous query churn through a processing-time trigger; the engine's
snapshot (its whole state) and the alive-query count stay bounded while the stream grows."""

import json

import pytest

from vigil.bench.pipeline import run_preset

pytestmark = pytest.mark.slow


def test_short_soak_memory_stays_bounded(spark, tmp_path):
    doc = run_preset("soak", scale=0.02, algos={"threshold": "scan"}, out=tmp_path / "soak.json",
                     minutes=0.75, workdir=tmp_path / "work", kinds=(0, 1))
    ex = doc["results"][0]["extra"]
    assert ex["batches"] >= 3 and ex["rows"] >= 3 * ex["point"]["rows_per_file"]
    snaps = ex["curve"]["snapshot_bytes"]
    # state follows the alive queries, not the stream: the last snapshot is not larger than
    # twice the largest of the first half (the stream grew by the whole second half)
    assert snaps[-1] <= 2 * max(snaps[: max(1, len(snaps) // 2)])
    assert ex["alive_last"] <= 2 * ex["point"]["alive_target"]
    assert json.loads((tmp_path / "soak.json").read_text())["family"] == "pipeline"
    assert (tmp_path / "soak.png").exists()
