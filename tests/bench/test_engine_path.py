"""The engine-path column of the family benchmarks (vigil.bench.engine_path): present in the
result documents, and the engine's answers equal the operator path's on the same workload."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.bench import engine_path as ep


@pytest.mark.timeout(300)
def test_windows_mixed_answers_match():
    from vigil.workloads.windows import fig9_windows, lookup_qids, mixed_blocks, stream

    vals, _, _ = stream(8000, 0)
    qids = lookup_qids(5000, 50, 0)
    for blk in (10, 1000):
        s = ep.windows_compare(vals, fig9_windows(50), qids, 1000, mixed_blocks(5000, 0.9, blk), batch=1000)
        assert s["verified"] and s["engine_outputs"] == s["operator_outputs"] == 500
        assert s["ratio"] > 0


@pytest.mark.timeout(300)
def test_fig11_engine_column_in_document(tmp_path, monkeypatch):
    from vigil.bench.windows import run_preset

    monkeypatch.setattr(ep, "FIG11_ENGINE", {"W": (10,), "lookups": 2000})
    monkeypatch.setenv("VIGIL_FIG11_W", "10")
    doc = run_preset("fig11", scale=0.001, algos=["rint_sum", "engine"], out=tmp_path / "w.json",
                     batches=[1000], budget=1.0)
    eng = [r for r in doc["results"] if r["algo"] == "engine"]
    assert len(eng) == 1
    e = eng[0]["extra"]
    assert e["verified"] and e["engine_outputs"] == e["operator_outputs"] == 2000
    assert e["ratio"] == pytest.approx(e["engine_cpu_s"] / e["operator_cpu_s"])


@pytest.mark.timeout(300)
def test_substream_counts_match():
    from vigil.bench.substream import PRESETS, build_trace

    tr = build_trace(PRESETS["fig12"], 0.01, 0)
    n = min(len(tr.keys), tr.warm + 3000)
    s = ep.substream_compare(tr.times[:n], tr.keys[:n], tr.T[:10], tr.v[:10], tr.warm, tr.picks % 10, 1000)
    assert n - tr.warm > 2000
    assert s["verified"] and s["engine_outputs"] == s["operator_outputs"] == n - tr.warm
    assert s["keys_reported"] == s["operator_keys_reported"] > 0


@pytest.mark.slow  # ~200 s on a cold numba cache (every threshold kernel auto may pick compiles): make test-all
@pytest.mark.timeout(600)
def test_threshold_engine_column_matches_trace(tmp_path):
    from vigil.bench.threshold import run_preset

    doc = run_preset("fig3", scale=0.005, algos=["dt", "engine"], out=None, reps=1, progress=False, plot=False)
    eng = [r for r in doc["results"] if r["algo"] == "engine"]
    assert len(eng) == 1
    e = eng[0]["extra"]
    matured = doc["params"]["points"][0]["trace"]["matured"]
    assert e["verified"] and e["engine_outputs"] == e["operator_outputs"] == matured > 0
    assert e["rejected"] == 0


def test_threshold_workload_positions():
    from vigil.workloads.threshold import ThresholdTrace, ThresholdWorkloadParams

    tr = ThresholdTrace(ThresholdWorkloadParams(dim=1, mode="static"))
    lo = np.array([[0.0], [5.0]])
    tr.steps = [("register", np.array([0, 1]), lo, lo + 2, np.array([3, 4])),
                ("push", np.array([[1.0], [6.0], [1.0]]), np.array([1, 1, 2])), ("terminate", np.array([1]))]
    table, ops = ep.threshold_workload(tr)
    assert table.column_names == ["x0", "w"] and table.num_rows == 3
    assert [(o["op"], o["at"]) for o in ops] == [("register", 0), ("register", 0), ("terminate", 3)]
    assert ops[1]["query"]["where"] == {"x0": [5.0, 7.0]} and ops[1]["query"]["threshold"] == 4
