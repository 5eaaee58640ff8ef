"""The demo end to end at a tiny size: files, summary, the picture of outputs and throughput."""

import re

import pytest

from vigil.pipeline import sinks
from vigil.pipeline.demo import run_demo

pytestmark = pytest.mark.slow


def test_demo_runs_and_plots(spark, tmp_path, capsys):
    s = run_demo(tmp_path / "demo", rows=4000, files=3, n_queries=60, quiet=True,
                 families=("threshold", "select_join"), algos={"threshold": "scan"})
    assert s["rows_in"] == 4000 and s["batches"] == 3
    assert (tmp_path / "demo" / "outputs.png").stat().st_size > 5000
    assert s["outputs_per_family"].get("threshold", 0) + s["outputs_per_family"].get("joins", 0) > 0
    assert len(sinks.read_metrics(tmp_path / "demo" / "out")) == 4  # 3 batches + final
    table = re.sub(r"\s+", " ", capsys.readouterr().out)
    # the stream's elements are not counted as queries: they are the caption's
    assert "stream rows" not in table and "stream: 4,000 elements in 3 micro-batches, 0 rejected" in table
