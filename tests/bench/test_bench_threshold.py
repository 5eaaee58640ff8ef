"""`vigil bench threshold`: every preset at a tiny scale through run_preset (JSON shape, PNG,
verified outputs, prefix extrapolation, skipped algorithms) and once through the typer app; and
the §8 workload generator (distributions, p_del, modes, determinism)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from vigil.bench import threshold as bt
from vigil.bench.cli import bench_app
from vigil.threshold.stabbing import Scan
from vigil.workloads.threshold import ThresholdWorkloadParams, draw_elements, draw_queries, generate_trace

TINY = {"scale": 0.002, "batch": 200, "progress": False, "resolver": "scan"}
ALGOS = {1: ["scan", "interval_tree"], 2: ["scan", "seg_intv", "rtree"]}


def check_doc(doc, path, preset, algos):
    on_disk = json.loads(path.read_text())
    assert on_disk == json.loads(json.dumps(doc))
    assert set(on_disk) == {"family", "preset", "params", "machine", "results"}
    assert on_disk["family"] == "threshold" and on_disk["preset"] == preset
    assert {"cpu", "cores", "python", "numba", "date"} <= set(on_disk["machine"])
    assert on_disk["results"], "no results"
    for r in on_disk["results"]:
        assert set(r) == {"algo", "seconds", "operations", "per_op_us", "extra"}
        assert r["algo"] in algos
        assert r["seconds"] > 0 and r["operations"] > 0
        assert math.isclose(r["per_op_us"], r["seconds"] / r["operations"] * 1e6, rel_tol=1e-9)
        assert r["extra"]["verified"] is True
        if bt.PRESETS[preset].sweep:
            assert set(r["extra"]["point"]) == {bt.PRESETS[preset].sweep[0]}
        else:
            c = r["extra"]["curve"]
            assert len(c["x"]) == len(c["per_op_us"]) > 0
    png = path.with_suffix(".png")
    assert png.exists() and png.stat().st_size > 1000


@pytest.mark.slow  # a benchmark preset end to end: make test-all
@pytest.mark.parametrize("preset", sorted(bt.PRESETS))
def test_preset_tiny(preset, tmp_path):
    dim = 2 if preset in ("fig3", "fig7") else 1
    pre = bt.PRESETS[preset]
    points = list(pre.sweep[1][:2]) if pre.sweep else None
    out = tmp_path / f"{preset}.json"
    doc = bt.run_preset(preset, dim=dim, algos=ALGOS[dim], out=out, points=points, **TINY)
    check_doc(doc, out, preset, ALGOS[dim])
    n_points = len(points) if points else 1
    assert len(doc["results"]) == n_points * len(ALGOS[dim])
    assert len(doc["params"]["points"]) == n_points
    for p in doc["params"]["points"]:
        assert p["trace"]["operations"] == doc["results"][0]["operations"] or pre.sweep


def test_prefix_extrapolation_and_skips(tmp_path, monkeypatch):
    real = bt.make_operator

    def no_dt(name, dim):
        if name.startswith("dt"):
            raise ImportError("DT not available in this test")
        return real(name, dim)

    monkeypatch.setattr(bt, "make_operator", no_dt)
    out = tmp_path / "fig6.json"
    doc = bt.run_preset("fig6", dim=1, algos=["dt", "dt_floor", "scan", "seg_intv"], out=out,
                        budget=1e-9, **{**TINY, "resolver": "interval_tree"})
    skipped = doc["params"]["skipped"]
    assert set(skipped) == {"dt", "dt_floor", "seg_intv"}
    assert "ImportError" in skipped["dt"] and "Unsupported" in skipped["seg_intv"]
    (r,) = doc["results"]
    ex = r["extra"]
    assert r["algo"] == "scan" and 0 < ex["prefix"] < r["operations"]
    assert ex["prefix_steps"] >= 1 and r["seconds"] > ex["measured_seconds"] > 0
    assert out.with_suffix(".png").exists()


def test_cli(tmp_path):
    out = tmp_path / "cli" / "fig3.json"
    res = CliRunner().invoke(bench_app, ["threshold", "--preset", "fig3", "--scale", "0.002", "--algos",
                                         "scan,interval_tree", "--batch", "200", "--resolver", "scan",
                                         "--out", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    check_doc(doc, out, "fig3", ["scan", "interval_tree"])
    assert "x dt" in res.output or "scan" in res.output
    bad = CliRunner().invoke(bench_app, ["threshold", "--preset", "fig99", "--out", str(out)])
    assert bad.exit_code != 0


# ---------------------------------------------------------------------------------------------
# workload generator (§8.1 / §8.2)
# ---------------------------------------------------------------------------------------------


def test_distributions():
    rng = np.random.default_rng(0)
    for d in (1, 2):
        p = ThresholdWorkloadParams(dim=d)
        pts, w = draw_elements(rng, 200_000, p)
        assert pts.shape == (200_000, d) and np.all(pts == np.rint(pts))
        assert pts.min() >= 0 and pts.max() <= p.domain
        assert w.dtype == np.int64 and w.min() >= 1 and abs(w.mean() - 100) < 0.5 and abs(w.std() - 15) < 0.5
        lo, hi = draw_queries(rng, 50_000, p)
        assert np.all(lo >= 0) and np.all(hi <= p.domain)
        side = hi - lo
        assert np.allclose(np.prod(side / p.domain, axis=1), 0.1, rtol=1e-3)
        c = (lo + hi) / 2
        assert abs(c.mean() - 50_000) < 200 and 6_000 < c.std() < 7_600  # N(5e4, 7500), truncated
        inside = np.all((pts[:20_000, None, :] >= lo[None, :200]) & (pts[:20_000, None, :] <= hi[None, :200]), axis=2)
        assert abs(inside.mean() - 0.1) < 0.005  # every element stabs 10% of the queries


def test_p_del():
    p = ThresholdWorkloadParams(tau=20_000_000)
    assert p.expected_maturity == 2_000_000
    assert math.isclose((1 - p.p_del) ** p.expected_maturity, 0.1, rel_tol=1e-9)


def test_modes_and_determinism():
    base = ThresholdWorkloadParams(dim=1, m=3000, tau=60_000, batch=100, seed=5)
    static = generate_trace(base, Scan(1))
    st = static.stats()
    assert st["registered"] == 3000 and st["terminated"] + st["matured"] == 3000  # ran until all done
    assert 0.05 < st["matured"] / 3000 < 0.16  # ~10% live to maturity
    assert static.alive_before[-1] > 0 and st["elements"] < base.stream_length
    again = generate_trace(base, Scan(1))
    assert all(a[0] == b[0] and all(np.array_equal(x, y) for x, y in zip(a[1:], b[1:], strict=True))
               for a, b in zip(static.steps, again.steps, strict=True))

    sto = generate_trace(ThresholdWorkloadParams(dim=2, m=1000, tau=20_000, mode="stochastic", p_ins=0.3,
                                                 n_elements=3000, ins_until=2000, batch=100, seed=1), Scan(2))
    ss = sto.stats()
    assert ss["elements"] == 3000 and abs((ss["registered"] - 1000) - 600) < 100

    fixed = generate_trace(ThresholdWorkloadParams(dim=1, m=500, tau=20_000, mode="fixed", n_elements=4000,
                                                   batch=100, seed=2), Scan(1))
    fs = fixed.stats()
    assert fs["elements"] == 4000 and fs["registered"] > 500
    pushes = [a for a, s in zip(fixed.alive_before, fixed.steps, strict=True) if s[0] == "push"]
    assert set(pushes) == {500}  # the load stays at m


def test_algorithm_failing_mid_run(tmp_path, monkeypatch):
    """A resolver or algorithm that raises during the run is reported under params.failed and the
    benchmark goes on (the trace is generated by the next resolver)."""
    real = bt.make_operator

    class Broken:
        name = "broken"

        def __init__(self, dim):
            self.inner = real("scan", dim)

        def register(self, *a):
            self.inner.register(*a)

        def terminate(self, ids):
            self.inner.terminate(ids)

        def push(self, pts, w):
            raise RuntimeError("kernel typing failed")

    monkeypatch.setattr(bt, "make_operator", lambda name, dim: Broken(dim) if name.startswith("dt") else real(name, dim))
    out = tmp_path / "fig3.json"
    doc = bt.run_preset("fig3", dim=1, algos=["dt", "dt_floor", "scan", "interval_tree"], out=out,
                        **{**TINY, "resolver": None})
    assert set(doc["params"]["failed"]) == {"dt", "dt_floor"}
    assert "RuntimeError" in doc["params"]["failed"]["dt"]
    assert [r["algo"] for r in doc["results"]] == ["scan", "interval_tree"]
    assert doc["params"]["points"][0]["resolver"] == "interval_tree"
    assert all(r["extra"]["verified"] is True for r in doc["results"])


def test_repetitions_interleaved_cpu(tmp_path):
    """Every algorithm replays the trace --reps times; the median CPU run is reported with every
    run's seconds and the range."""
    out = tmp_path / "fig3.json"
    doc = bt.run_preset("fig3", dim=1, algos=ALGOS[1], out=out, reps=3, **TINY)
    assert doc["params"]["reps"] == 3 and doc["params"]["clock"].startswith("cpu")
    for r in doc["results"]:
        reps = r["extra"]["reps_seconds"]
        lo, hi = r["extra"]["range_seconds"]
        assert len(reps) == 3 and lo == min(reps) and hi == max(reps)
        assert r["seconds"] == sorted(reps)[1] and r["extra"]["verified"] is True
