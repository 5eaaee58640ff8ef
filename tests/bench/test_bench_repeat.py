"""Every `vigil bench` runner warms up before timing and reports CPU time over several interleaved
repetitions (vigil.bench.common.measure_interleaved / sample_fields): the shared helper, and
windows fig9/fig10/fig11, substream fig12, threshold and joins at a tiny scale."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

import pytest

from vigil.bench import common
from vigil.bench import substream as bs
from vigil.bench import windows as bw


def _burn(seconds: float) -> None:
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:
        pass


def check_samples(ex: dict, repeat: int) -> None:
    """The fields of repeated measurements in a result's extra."""
    assert ex["warmed"] is True and ex["repeat"] == repeat
    cpu = ex["cpu_s_samples"]
    assert len(cpu) == repeat >= 2 and all(c >= 0 for c in cpu)
    lo, hi = ex["cpu_s_range"]
    assert lo == min(cpu) and hi == max(cpu) and lo <= ex["cpu_s_median"] <= hi
    assert len(ex["wall_s_samples"]) == repeat and ex["wall_s_median"] is not None


# ---------------------------------------------------------------------------------- the helper


def test_measure_interleaved_warms_up_then_interleaves():
    calls: list[str] = []

    def run(name: str, compile_s: float = 0.0):
        first = [True]

        def fn():
            calls.append(name)
            if first[0]:  # a numba compilation on the first call only
                first[0] = False
                _burn(compile_s)
            _burn(0.01)
            return name

        return fn

    runs = {"a": run("a", 0.3), "b": run("b"), "c": run("c")}
    s = common.measure_interleaved(runs, repeat=3)
    assert calls == ["a", "b", "c"] * 4  # one warm-up round, then A B C A B C A B C
    a = s["a"]
    assert a.warmed and a.warmup_cpu >= 0.3
    assert len(a.cpu) == len(a.wall) == 3 and a.values == ["a"] * 3
    assert max(a.cpu) < 0.2  # the compilation is in the warm-up, not in a timed sample
    f = a.fields()
    assert f["repeat"] == 3 and f["warmed"] is True and f["warmup_cpu_s"] >= 0.3
    assert f["cpu_s_range"] == [min(a.cpu), max(a.cpu)] and f["cpu_s_median"] == sorted(a.cpu)[1]


def test_measure_interleaved_timed_values_warmup_map_and_scale():
    warm_calls = []
    s = common.measure_interleaved({"x": lambda: common.Timed(2.0, 3.0, 7)}, repeat=2,
                                   warmup={"x": lambda: warm_calls.append(1)})
    assert warm_calls == [1]
    x = s["x"]
    assert x.cpu == [2.0, 2.0] and x.wall == [3.0, 3.0] and x.values == [7, 7]
    f = x.fields([1.0, 2.0])  # a prefix extrapolated per sample
    assert f["cpu_s_samples"] == [2.0, 4.0] and f["cpu_s_median"] == 3.0 and f["wall_s_range"] == [3.0, 6.0]
    assert x.median_index([1.0, 5.0]) == 0
    none = common.measure_interleaved({"y": lambda: None}, repeat=2, warmup=False)["y"]
    assert not none.warmed and none.warmup_cpu is None
    with pytest.raises(ValueError):
        common.measure_interleaved({"y": lambda: None}, repeat=0)


# ---------------------------------------------------------------------------------- presets


@pytest.mark.timeout(120)
def test_windows_fig9_fig11_tiny(tmp_path, monkeypatch):
    monkeypatch.setattr(bw, "FIG9_FRACTIONS", (0.5,))
    monkeypatch.setenv("VIGIL_FIG11_W", "100")
    for preset, algos in (("fig9", ["rint_sum", "materialize_none_sum"]), ("fig11", ["rint_sum", "bint_max"])):
        out = tmp_path / f"{preset}.json"
        doc = bw.run_preset(preset, scale=0.001, algos=algos, out=out, batches=[1000], budget=5.0, repeat=2,
                            progress=False)
        on_disk = json.loads(out.read_text())
        assert on_disk["params"]["repeat"] == 2 and "timing" in on_disk["params"]
        assert [r["algo"] for r in on_disk["results"]] == algos
        for r in on_disk["results"]:
            ex = r["extra"]
            check_samples(ex, 2)
            assert ex["verified"] is True and ex["warmup_cpu_s"] is not None
            assert r["seconds"] == pytest.approx(ex["wall_s_median"])
            assert ex["cpu_seconds"] == pytest.approx(ex["cpu_s_median"])
            assert ex["cpu_rate_per_s"] == pytest.approx(r["operations"] / ex["cpu_s_median"])
        assert doc["results"][0]["extra"]["point"]["batch"] == 1000


@pytest.mark.timeout(120)
def test_windows_fig10_tiny(tmp_path, monkeypatch):
    monkeypatch.setattr(bw, "FIG10_NMAX", (1_000, 10_000))
    out = tmp_path / "fig10.json"
    doc = bw.run_preset("fig10", scale=0.001, algos=["rint_sum", "bint_max"], out=out, batches=[10_000],
                        budget=5.0, repeat=2, progress=False)
    assert len(doc["results"]) == 4
    for r in json.loads(out.read_text())["results"]:
        check_samples(r["extra"], 2)


def _tiny_fig12(monkeypatch):
    pr = dataclasses.replace(bs.PRESETS["fig12"], p_values=(4,), batches=(100,), n_symbols=500, n_queries=20)
    monkeypatch.setitem(bs.PRESETS, "fig12", pr)
    monkeypatch.setattr(bs, "WARM_SCALE", 0.002)


@pytest.mark.timeout(120)
def test_substream_fig12_tiny(tmp_path, monkeypatch):
    _tiny_fig12(monkeypatch)
    out = tmp_path / "fig12.json"
    bs.run_preset("fig12", scale=0.005, algos=["ci", "naive", "naive_probe"], out=out, repeat=3, progress=False)
    doc = json.loads(out.read_text())
    assert doc["params"]["repeat"] == 3
    assert [r["algo"] for r in doc["results"]] == ["ci", "naive", "naive_probe"]
    for r in doc["results"]:
        ex = r["extra"]
        check_samples(ex, 3)
        assert ex["verified"] is True and ex["inputs_per_s"] > 0
        assert r["seconds"] == pytest.approx(ex["cpu_s_median"])
        assert ex["cpu_s_range"][1] < 5 * ex["cpu_s_range"][0] + 0.05  # no sample holds a compilation


@pytest.mark.slow  # compiles the CI kernels into an empty numba cache (~1 min on a busy machine)
@pytest.mark.timeout(900)
def test_substream_fig12_cold_cache_times_no_compilation(tmp_path):
    """On a cold numba cache the compilation lands in the warm-up call: every timed sample of
    every algorithm is within a bounded ratio of the others, and naive shows a real rate."""
    code = (
        "import dataclasses, sys\n"
        "from vigil.bench import substream as bs\n"
        "bs.PRESETS['fig12'] = dataclasses.replace(bs.PRESETS['fig12'], p_values=(4,), batches=(100,),"
        " n_symbols=500, n_queries=20)\n"
        "bs.WARM_SCALE = 0.002\n"
        "bs.run_preset('fig12', scale=0.005, algos=['ci', 'naive'], out=sys.argv[1], repeat=2, progress=False)\n"
    )
    cache = tmp_path / "numba-cache"
    env = {**os.environ, "VIGIL_NUMBA_CACHE": str(cache), "NUMBA_CACHE_DIR": str(cache)}
    out = tmp_path / "fig12.json"
    subprocess.run([sys.executable, "-c", code, str(out)], env=env, check=True, timeout=880, capture_output=True)
    doc = json.loads(out.read_text())
    for r in doc["results"]:
        ex = r["extra"]
        check_samples(ex, 2)
        lo, hi = ex["cpu_s_range"]
        assert hi < 5 * lo + 0.05, (r["algo"], ex["cpu_s_samples"])
        assert ex["warmup_cpu_s"] > hi  # the compilation: in the untimed warm-up
    naive = next(r for r in doc["results"] if r["algo"] == "naive")
    assert naive["extra"]["inputs_per_s"] > 1000


@pytest.mark.timeout(120)
def test_threshold_reps_fields(tmp_path):
    from vigil.bench import threshold as bt

    out = tmp_path / "fig6.json"
    doc = bt.run_preset("fig6", dim=1, algos=["scan", "interval_tree"], out=out, scale=0.002, batch=200,
                        progress=False, resolver="scan", reps=2, plot=False)
    for r in doc["results"]:
        check_samples(r["extra"], 2)
        assert r["extra"]["cpu_s_samples"] == r["extra"]["reps_seconds"]


@pytest.mark.timeout(120)
def test_joins_samples_fields(tmp_path):
    from vigil.bench import joins as bj

    out = tmp_path / "fig10.json"
    doc = bj.run_preset("fig10", scale=0.01, algos=["ssi", "hotspot"], out=out, batches=[1, 100], budget=2.0,
                        points={"n_queries": [1000]}, repeats=2, materialise=False, min_tuples=50)
    assert len(doc["results"]) == 4
    for r in doc["results"]:
        check_samples(r["extra"], 2)


@pytest.mark.timeout(300)
@pytest.mark.parametrize(("preset", "scale"), [("fig5", 0.001), ("peers", 0.001), ("targets", 0.002),
                                               ("fig12", 0.001),
                                               pytest.param("fig13", 0.002, marks=pytest.mark.slow)])  # ~1-3 min
def test_quantiles_repeat_fields(tmp_path, preset, scale):
    from vigil.bench.quantiles import run_preset

    out = tmp_path / f"{preset}.json"
    run_preset(preset, scale=scale, out=out, repeat=2)
    doc = json.loads(out.read_text())
    assert doc["params"]["repeat"] == 2
    timed = [r for r in doc["results"] if not r["algo"].startswith(("summary_only", "oqc_vs_qcb"))]
    assert timed
    for r in timed:
        check_samples(r["extra"], 2)
        assert r["extra"]["warmup_cpu_s"] is not None


def test_substream_verified_compares_each_run_as_far_as_it_goes():
    ref = [frozenset({1}), frozenset({2}), frozenset({3})]
    # repetitions cut by the budget at different lookups: each compared on its own prefix
    assert bs.verified([ref[:3], ref[:1], ref[:2]], ref)
    assert bs.verified([ref[:2]], ref[:1])
    assert not bs.verified([ref[:3], [frozenset({1}), frozenset({9})]], ref)


@pytest.mark.timeout(300)
def test_quantiles_paper_fig15_samples(tmp_path):
    from vigil.bench.quantiles import run_paper

    out = tmp_path / "fig15.json"
    run_paper("fig15", 0.001, out, repeat=2)
    for r in json.loads(out.read_text())["results"]:
        ex = r["extra"]
        assert ex["warmed"] is True and ex["repeat"] == 2 and len(ex["cpu_s_samples"]) == 2
        assert r["seconds"] == pytest.approx(ex["cpu_s_range"][0])  # the fastest run, as the figures


@pytest.mark.slow  # ~15 s CPU, minutes on a loaded machine: make test-all
@pytest.mark.timeout(600)
def test_windows_keyed_samples(tmp_path):
    doc = bw.run_preset("keyed", scale=0.01, algos=["op_shared", "engine_group_by"], out=tmp_path / "k.json",
                        batches=[50_000], repeat=2)
    assert doc["params"]["repeat"] == 2
    for r in doc["results"]:
        check_samples(r["extra"], 2)
        assert r["seconds"] == pytest.approx(r["extra"]["cpu_s_median"])


@pytest.mark.slow  # ~15 s CPU, minutes on a loaded machine: make test-all
@pytest.mark.timeout(600)
def test_threshold_rearm_and_quantile_alerts_samples(tmp_path):
    from rich.console import Console

    from vigil.bench.quantiles import run_preset
    from vigil.bench.threshold_rearm import run_rearm

    doc = run_rearm(scale=0.01, algos=["sweep"], reps=2, out=None, console=Console(quiet=True))
    for r in doc["results"]:
        ex = r["extra"]
        assert ex["warmed"] is True and ex["cpu_s_samples"] == ex["cpu_seconds"] and len(ex["cpu_seconds"]) == 2
    doc = run_preset("alerts", scale=0.002, out=tmp_path / "alerts.json", repeat=2)
    for r in doc["results"]:
        ex = r["extra"]
        check_samples(ex, 2)
        assert r["seconds"] == ex["cpu_s_median"] and ex["fastest_s"] == ex["cpu_s_range"][0]
