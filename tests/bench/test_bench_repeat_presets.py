"""The presets converted last to the shared repeated measurements (vigil.bench.common
.measure_interleaved): a warm-up call, then >= 2 interleaved CPU-timed repetitions per algorithm,
the median reported with every sample and the range. Tiny scales."""

from __future__ import annotations

import json

import pytest

from .test_bench_repeat import check_samples


@pytest.mark.timeout(300)
@pytest.mark.parametrize("preset", ["clustered", "matched"])
def test_quantiles_peers_presets_median_of_interleaved(tmp_path, preset):
    from vigil.bench.quantiles import run_preset

    out = tmp_path / f"{preset}.json"
    run_preset(preset, scale=0.001, out=out, repeat=2)
    doc = json.loads(out.read_text())
    assert doc["params"]["repeat"] == 2
    assert doc["results"]
    for r in doc["results"]:
        ex = r["extra"]
        check_samples(ex, 2)
        assert ex["warmup_cpu_s"] is not None
        assert r["seconds"] == pytest.approx(ex["cpu_s_median"])
    if preset == "clustered":
        casu = next(r for r in doc["results"] if r["algo"] == "casu:cluster/uniform")
        peer = next(r for r in doc["results"] if r["algo"] == "kll_reanswer/uniform")
        assert peer["extra"]["casu_speedup"] == pytest.approx(peer["seconds"] / casu["seconds"])
        assert "fresh_pair_fail_frac" in peer["extra"]


@pytest.mark.slow  # a Spark session: make test-all
@pytest.mark.timeout(900)
def test_quantiles_spark_median_of_interleaved(tmp_path):
    from vigil.bench.quantiles import run_preset

    out = tmp_path / "spark.json"
    run_preset("spark", scale=0.002, out=out, repeat=2)
    doc = json.loads(out.read_text())
    assert doc["params"]["repeat"] == 2 and "median" in doc["params"]["seconds"]
    for r in doc["results"]:
        ex = r["extra"]
        check_samples(ex, 2)
        assert r["seconds"] == pytest.approx(ex["cpu_s_median"]) == pytest.approx(ex["cpu_seconds"])
        assert ex["fastest_cpu_s"] == ex["cpu_s_range"][0] and ex["wall_seconds"] == ex["wall_s_median"]


@pytest.mark.timeout(300)
def test_joins_appB_builds_median_of_interleaved(tmp_path):
    from rich.console import Console

    from vigil.bench.joins_hist import run_hist

    doc = run_hist(out=tmp_path / "appB.json", n=2000, buckets=(20, 30), repeat=2, console=Console(quiet=True))
    assert doc["params"]["repeat"] == 2
    assert {r["algo"] for r in doc["results"]} == {"hist_ssi", "hist_ssi_total", "hist_eqw"}
    assert len(doc["results"]) == 2 * 2 * 3  # two interval sets x two k
    for r in doc["results"]:
        ex = r["extra"]
        check_samples(ex, 2)
        assert r["seconds"] == pytest.approx(ex["cpu_s_median"]) and 0 <= ex["error"]


@pytest.mark.slow  # ~40 s on a loaded machine: make test-all
@pytest.mark.timeout(300)
def test_joins_dynamic_preset_chunk_samples(tmp_path):
    from vigil.bench.joins import run_preset

    out = tmp_path / "fig12.json"
    run_preset("fig12", scale=0.001, batches=[50], budget=0.05, out=out, repeats=2)
    doc = json.loads(out.read_text())
    assert doc["params"]["repeat"] == 2
    timed = [r for r in doc["results"] if r["algo"] not in ("optimum", "group_ceiling")]
    assert {r["algo"] for r in timed} == {"join_first", "select_first", "vanilla", "hotspot", "dynamic", "oracle"}
    for r in timed:
        ex = r["extra"]
        check_samples(ex, 2)
        assert ex["warmup_cpu_s"] is not None and sum(ex["sample_chunks"]) == r["operations"] // ex["batch"]
        # each sample is a slice of the chunks scaled to the whole run: the median near the total CPU
        total = r["operations"] / ex["cpu_rate_per_s"]
        assert ex["cpu_s_range"][0] <= total * 1.0001 and total <= ex["cpu_s_range"][1] * 1.0001


@pytest.mark.slow  # a Spark session: make test-all
@pytest.mark.timeout(900)
def test_pipeline_throughput_median_of_interleaved(tmp_path):
    from vigil.bench.pipeline import run_preset

    doc = run_preset("throughput", scale=0.01, out=tmp_path / "thr.json", workdir=tmp_path / "work",
                     workloads=("threshold",), batches=(100_000,), repeat=3)
    assert doc["params"]["repeat"] == 3
    (r,) = doc["results"]
    ex = r["extra"]
    for side in ("engine", "spark"):
        check_samples(ex[side], 3)
        assert ex[side]["warmup_cpu_s"] > 0
    assert ex["engine_seconds"] == ex["engine"]["wall_s_median"] and r["seconds"] == ex["spark"]["wall_s_median"]
    assert ex["spark_cpu_seconds"] == ex["cpu_s_median"] == ex["spark"]["cpu_s_median"]
    assert ex["outputs_equal"] and ex["cpu_overhead_ratio"] > 0


@pytest.mark.timeout(300)
def test_joins_fig11_partitions_median_of_interleaved():
    from rich.console import Console

    from vigil.bench.joins import _fig11_partitions

    res = _fig11_partitions(0.002, 0, 0.2, Console(quiet=True), repeat=2)
    assert len(res) == 8 and {r.algo for r in res} >= {"partition_a1_eps0.5", "tracker_a2_eps3"}
    for r in res:
        ex = r.extra
        check_samples(ex, 2)
        assert ex["warmup_cpu_s"] is not None and len(ex["us_per_update_samples"]) == 2
        assert min(ex["us_per_update_samples"]) <= r.per_op_us * 1.0001
        assert r.per_op_us <= max(ex["us_per_update_samples"]) * 1.0001


def test_results_table_shows_string_sweep_points():
    """appB's and pipeline throughput's points hold strings (set, workload): the table prints them
    (a ValueError from the numeric format before)."""
    from rich.console import Console

    from vigil.bench import common

    doc = {"family": "joins", "preset": "appB", "results": [common.Result(
        "hist_ssi", 0.5, 10, extra={"point": {"set": "paper_appB", "buckets": 20},
                                    **common.sample_fields([0.4, 0.5, 0.6], warmed=True)}).to_json()]}
    con = Console(record=True, width=200)
    common.print_table(doc, reference="hist_ssi", console=con)
    text = con.export_text()
    assert "set=paper_appB" in text and "buckets=20" in text and "CPU median of 3 0.5 s, range 0.4-0.6" in text
