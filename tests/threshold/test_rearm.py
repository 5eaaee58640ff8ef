"""Re-arming threshold queries (``"repeat": true``, issue 26 item 2): after maturing at an element a
query counts again from zero with the next element (the overshoot at the maturing element is
dropped), same threshold and rectangle, and matures again until terminated. Every implementation
against the oracle at several batch sizes, several maturities in one push, thousands of queries
maturing at one element, snapshots mid-stream, termination, threshold 1, auto's switches, DT's
rounds and bucketed trees; and through the engine."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil import registry
from vigil.checks import Log, check_family, run_log
from vigil.threshold import dt as dtmod
from vigil.threshold.oracle import ThresholdOracle

pytestmark = pytest.mark.timeout(600)

ALGOS = sorted(n for n in registry.IMPLEMENTATIONS["threshold"] if n != "oracle")


def _make(name, dim):
    from vigil.errors import Unsupported

    try:
        return registry.resolve("threshold", name)(dim)
    except Unsupported:
        pytest.skip(f"{name} does not serve d={dim}")


def _run(op, pts, w, batch, cuts=(), events=None):
    """Push the stream in pushes of ``batch`` elements (a list: successive sizes, the last
    repeated); at the offsets in ``cuts`` the operator is snapshotted and restored; ``events``:
    {offset: callable(op)} applied before that element. Returns (qid, global offset) pairs."""
    out = []
    n = len(w)
    sizes = list(np.atleast_1d(batch))
    stops = sorted(set(cuts) | set(events or {}))
    a = 0
    while a < n:
        b = sizes.pop(0) if len(sizes) > 1 else sizes[0]
        e = min(n, a + int(b))
        nxt = [s for s in stops if a < s < e]
        if nxt:
            e = nxt[0]
        q, o = op.push(pts[a:e], w[a:e])
        out += list(zip(q.tolist(), (o + a).tolist(), strict=True))
        a = e
        if a in cuts:
            op = type(op).from_state(op.state())
        if events and a in events:
            events[a](op)
    return out


def _workload(seed, dim, m=80, n=600, big=False):
    rng = np.random.default_rng(seed)
    lo = rng.integers(0, 60, (m, dim)).astype(float)
    hi = lo + rng.integers(0, 60, (m, dim))
    lo[rng.random((m, dim)) < 0.05] = -np.inf
    if big:  # thresholds far above DT's direct mode: its rounds re-arm
        tau = rng.integers(150, 1500, m)
        w = rng.integers(1, 100, n)
    else:
        tau = rng.choice([1, 2, 3, 5, 17, 40], m)
        w = rng.choice([1, 1, 2, 7], n)
    rep = np.where(rng.random(m) < 0.7, tau, 0)
    pts = rng.integers(0, 100, (n, dim)).astype(float)
    return np.arange(m, dtype=np.int64), lo, hi, tau, rep, pts, w.astype(np.int64)


@pytest.mark.parametrize("name", ALGOS)
@pytest.mark.parametrize("dim", [1, 2, pytest.param(3, marks=pytest.mark.slow)])  # (3D, big: make test-all)
@pytest.mark.parametrize("big", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_agrees_with_oracle_at_every_batch_size(name, dim, big):
    op0 = _make(name, dim)
    for seed in range(3):
        qids, lo, hi, tau, rep, pts, w = _workload(seed, dim, big=big)
        ref = ThresholdOracle(dim)
        ref.register(qids, lo, hi, tau, rep)
        want = _run(ref, pts, w, len(w))
        assert len(want) > len(qids) // 2  # queries re-arm (d = 3: fewer elements inside)
        for batch in (1, 7, 100, len(w), [3, 250, 1]):
            op = type(op0)(dim)
            op.register(qids, lo, hi, tau, rep)
            assert _run(op, pts, w, batch) == want, (name, seed, batch)


@pytest.mark.parametrize("name", ALGOS)
def test_several_maturities_in_one_push_and_the_overshoot_is_dropped(name):
    op = _make(name, 1)
    # q0: tau 5 over weights 3,3,3,3,3,3: 6 >= 5 at 1, restart at 0: 6 at 3, 6 at 5 (the overshoot
    # 1 is dropped each time: carried over it would mature at 1, 3, 4)
    # q1: tau 2, unit elements outside q0's weights: every second element in range
    op.register(np.array([0, 1]), np.array([[0.0], [10.0]]), np.array([[5.0], [20.0]]), np.array([5, 2]),
                np.array([5, 2]))
    pts = np.array([[1.0]] * 6 + [[15.0]] * 7)
    w = np.array([3] * 6 + [1] * 7, np.int64)
    q, o = op.push(pts, w)
    assert list(zip(q.tolist(), o.tolist(), strict=True)) == [(0, 1), (0, 3), (0, 5), (1, 7), (1, 9), (1, 11)]
    assert op.alive() == 2


@pytest.mark.parametrize("name", ALGOS)
def test_threshold_one_matures_at_every_element_inside(name):
    op = _make(name, 1)
    op.register(np.array([7]), np.array([[0.0]]), np.array([[1.0]]), np.array([1]), np.array([1]))
    pts = np.array([[0.5], [3.0], [1.0], [0.0], [2.0]])
    q, o = op.push(pts, np.array([1, 1, 10**9, 2**53, 1], np.int64))
    assert q.tolist() == [7, 7, 7] and o.tolist() == [0, 2, 3]


@pytest.mark.parametrize("name", ALGOS)
@pytest.mark.parametrize("tau", [3, 5000])
def test_thousands_mature_at_one_element(name, tau):
    """4,000 queries (every other one re-arming) share a rectangle: all mature at the same
    elements; the re-arming ones again and again, in one step each time."""
    op = _make(name, 1)
    k = 4000
    qids = np.arange(k, dtype=np.int64)
    op.register(qids, np.zeros((k, 1)), np.ones((k, 1)), np.full(k, tau), np.where(qids % 2 == 0, tau, 0))
    wt = max(1, tau // 3)
    n = 12
    q, o = op.push(np.full((n, 1), 0.5), np.full(n, wt, np.int64))
    ref = ThresholdOracle(1)
    ref.register(qids, np.zeros((k, 1)), np.ones((k, 1)), np.full(k, tau), np.where(qids % 2 == 0, tau, 0))
    rq, ro = ref.push(np.full((n, 1), 0.5), np.full(n, wt, np.int64))
    assert np.array_equal(q, rq) and np.array_equal(o, ro)
    per = -(-tau // wt)  # elements per maturity
    assert len(q) == k // 2 * (n // per) + k // 2
    assert op.alive() == k // 2


@pytest.mark.parametrize("name", ALGOS)
@pytest.mark.parametrize("dim", [1, 2])
def test_snapshot_restore_mid_stream_keeps_the_rearm_state(name, dim):
    op0 = _make(name, dim)
    for big in (False, True):
        qids, lo, hi, tau, rep, pts, w = _workload(11, dim, big=big)
        ref = ThresholdOracle(dim)
        ref.register(qids, lo, hi, tau, rep)
        want = _run(ref, pts, w, 50)
        op = type(op0)(dim)
        op.register(qids, lo, hi, tau, rep)
        assert _run(op, pts, w, 50, cuts=(13, 150, 151, 420)) == want
        # and the queries exported into another implementation (the oracle) continue exactly
        op = type(op0)(dim)
        op.register(qids, lo, hi, tau, rep)
        got = _run(op, pts[:300], w[:300], 64)
        assert "repeat" in (op.state()["inner"] if name == "auto" else op.state())
        cont = ThresholdOracle(dim)
        cont.register(*op.export())
        got += [(q, o + 300) for q, o in _run(cont, pts[300:], w[300:], 64)]
        assert got == want


@pytest.mark.parametrize("name", ALGOS)
def test_terminating_a_repeating_query_ends_it(name):
    op = _make(name, 1)
    qids, lo, hi, tau, rep, pts, w = _workload(5, 1)
    kill = qids[rep > 0][:10]

    def term(o):
        o.terminate(kill)

    ref = ThresholdOracle(1)
    ref.register(qids, lo, hi, tau, rep)
    want = _run(ref, pts, w, 40, events={200: term})
    op.register(qids, lo, hi, tau, rep)
    got = _run(op, pts, w, 40, events={200: term})
    assert got == want
    assert not any(q in set(kill.tolist()) and o >= 200 for q, o in got)
    assert any(q in set(kill.tolist()) for q, o in got)  # they did mature before


@pytest.mark.parametrize("dim", [1, 2])
def test_auto_switches_carry_the_rearm_thresholds(dim):
    from vigil.threshold.auto import Auto, choices

    qids, lo, hi, tau, rep, pts, w = _workload(3, dim, big=True)
    ref = ThresholdOracle(dim)
    ref.register(qids, lo, hi, tau, rep)
    want = _run(ref, pts, w, 60)
    op = Auto(dim)
    op.register(qids, lo, hi, tau, rep)
    algos = list(choices(dim))
    switches = {a: (lambda o, name=algos[i % len(algos)]: o.switch_to(name)) for i, a in enumerate(range(60, 600, 60))}
    assert _run(op, pts, w, 60, events=switches) == want


@pytest.mark.parametrize("B", [1, 3, 32])
def test_dt_bucketed_trees_rearm(monkeypatch, B):
    monkeypatch.setattr(dtmod, "BUCKET", B)
    for big in (False, True):
        qids, lo, hi, tau, rep, pts, w = _workload(21, 2, m=150, big=big)
        ref = ThresholdOracle(2)
        ref.register(qids, lo, hi, tau, rep)
        want = _run(ref, pts, w, 600)
        op = dtmod.DT(2)
        op.register(qids, lo, hi, tau, rep)
        assert _run(op, pts, w, 37, cuts=(300,)) == want


# -------------------------------------------------------------------------------- engine


def _engine_log(seed=0, n=400, dim=1):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 50, n).astype(float)
    y = rng.integers(0, 4, n).astype(float)
    w = rng.choice([1, 2, 5, 100], n).astype(float)
    ops = []
    for i in range(40):
        a, b = sorted(int(v) for v in rng.integers(0, 50, 2))
        where = {"x": [a, b]} if dim == 1 else {"x": [a, b], "y": [0, 2 + i % 2]}
        q = {"type": "threshold", "id": f"q{i}", "where": where, "weight": "w",
             "threshold": int(rng.choice([1, 3, 20, 300]))}
        if i % 3:
            q["repeat"] = True
        ops.append({"op": "register", "at": int(rng.integers(0, n // 2)), "query": q})
    ops.append({"op": "terminate", "at": 250, "id": "q1"})
    ops.append({"op": "terminate", "at": 300, "id": "q3"})  # a one-shot query (matured or not)
    ops.sort(key=lambda o: o["at"])
    return Log(pa.table({"x": x, "y": y, "w": w}), ops, batch=n)


@pytest.mark.parametrize("name", ALGOS)
def test_engine_replay_agrees_with_the_oracle_at_every_batch_size(name):
    log = _engine_log(dim=2 if name == "seg_intv" else 1)
    want = run_log(log, {"threshold": "oracle"})
    matured = [r for r in want if r["event"] == "matured"]
    assert len(matured) > 3 * 40
    assert not [r for r in matured if r["id"] == "q1" and r["at"] > 250]  # after seq <= 250
    assert len([r for r in matured if r["id"] == "q2"]) > 1  # a repeating query matures again and again
    for batch in (1, 13, 400, [5, 100, 1]):
        assert run_log(log, {"threshold": name}, batch=batch) == want, batch
    check_family("threshold", name, log, cut=177)


def test_engine_repeat_field_and_refusals():
    from vigil.specs import parse_query

    q = parse_query({"type": "threshold", "id": "a", "where": {"x": [0, 1]}, "threshold": 3, "repeat": True})
    assert q.repeat is True
    assert parse_query({"type": "threshold", "id": "a", "where": {"x": [0, 1]}, "threshold": 3}).repeat is False
    from vigil.specs import SpecError

    with pytest.raises(SpecError, match="repeat"):
        parse_query({"type": "threshold", "id": "a", "where": {"x": [0, 1]}, "threshold": 3, "repeat": 1})
    # counted from the element after its registration; ended by a terminate, a second one is a no-op
    log = Log(pa.table({"x": [0.5] * 6}),
              [{"op": "register", "at": 0, "query": {"type": "threshold", "id": "r", "where": {"x": [0, 1]},
                                                     "threshold": 2, "repeat": True}},
               {"op": "terminate", "at": 5, "id": "r"}, {"op": "terminate", "at": 6, "id": "r"}], batch=2)
    rows = run_log(log, {"threshold": "dt"})
    assert [(r["event"], r["at"]) for r in rows] == [("matured", 2), ("matured", 4)]


@pytest.mark.slow  # a benchmark preset end to end: make test-all
def test_bench_rearm_preset_smoke(tmp_path):
    """vigil bench threshold --preset rearm at scale 0.01: three runs per algorithm, every
    maturity counted, JSON + PNG written."""
    from rich.console import Console

    from vigil.bench.threshold_rearm import run_rearm

    doc = run_rearm(scale=0.01, algos=["dt", "sweep"], reps=1, out=tmp_path / "r.json", console=Console(quiet=True))
    assert (tmp_path / "r.json").exists() and (tmp_path / "r.png").exists()
    res = {r["algo"]: r["extra"] for r in doc["results"]}
    assert res["dt:once"]["maturities"] == 1000
    assert res["dt:rearm"]["maturities"] > 10 * 1000  # ~20 per query
    assert res["dt:rearm"]["maturities"] == res["sweep:rearm"]["maturities"]
    assert res["dt:reregister"]["maturities"] == res["sweep:reregister"]["maturities"]
    assert set(doc["params"]["summary"]["dt"]) >= {"rearm/reregister cpu", "rearm/once us_per_maturity"}


def test_fast_spec_decodes_repeat():
    """The bulk registration path (specs.fast_spec): a re-arming query's threshold is negated in its
    row; a non-boolean repeat is left to pydantic (which rejects it)."""
    from vigil.specs import fast_spec

    q = {"id": "a", "type": "threshold", "where": {"x": [1.0, 2.0]}, "threshold": 3}
    assert fast_spec(q)[2] == (1.0, 2.0, 3)
    assert fast_spec(q | {"repeat": False})[2] == (1.0, 2.0, 3)
    assert fast_spec(q | {"repeat": True})[2] == (1.0, 2.0, -3)
    assert fast_spec(q | {"repeat": True, "where": {"x": [1, 2], "k": "a"}})[2] == (1.0, 2.0, -3)
    for bad in (1, 0, "true", None):
        assert fast_spec(q | {"repeat": bad}) is None


@pytest.mark.parametrize("dim", [1, 2])
def test_sweep_sub_batches_rearm(monkeypatch, dim):
    """Sweep cuts a push into sub-batches (of SUB_MIN while re-arming queries are alive) and keeps
    the full time halving of each (1D): crossings across and inside sub-batches are exact."""
    from vigil.threshold import sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "SUB_MIN", 50)
    for big in (False, True):
        qids, lo, hi, tau, rep, pts, w = _workload(8, dim, big=big, n=1500)
        ref = ThresholdOracle(dim)
        ref.register(qids, lo, hi, tau, rep)
        want = _run(ref, pts, w, 1500)
        op = sweep_mod.Sweep(dim)
        op.register(qids, lo, hi, tau, rep)
        assert _run(op, pts, w, [1500, 333]) == want
