"""Join operators between full index builds (vigil.joins._delta): queries registered into the
shadow and terminated as dead, with tuples inserted in between, against the oracle; through
``insert`` (one side per call) and ``insert_both`` (both relations per call), in every output
mode, with a snapshot midway; at the real DELTA_MIN and with it lowered so that the shadow
fills, merges and rebuilds many times in one stream."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil import registry
from vigil.joins import _delta
from vigil.joins.oracle import JoinOracle
from vigil.state import pack, unpack

from .test_oracle import select, triples

SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = ["dynamic", "ssi", "hotspot", "join_first", "select_first"]


@st.composite
def many(draw, kind, nq_max=80):
    n = draw(st.integers(5, 60))
    sides = draw(st.lists(st.sampled_from(["left", "right"]), min_size=n, max_size=n))
    keys = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    attrs = draw(st.lists(st.one_of(st.integers(0, 10).map(float), st.just(math.nan)), min_size=n, max_size=n))
    times = sorted(draw(st.lists(st.integers(0, 12).map(float), min_size=n, max_size=n)))
    nq = draw(st.integers(1, nq_max))
    queries = []
    for _ in range(nq):
        reg = draw(st.integers(0, n))
        term = draw(st.one_of(st.none(), st.integers(reg, n)))
        lo_a, lo_c = draw(st.integers(0, 10)), draw(st.integers(0, 10))
        params = ((lo_a, lo_a + draw(st.integers(0, 8))),
                  (draw(st.sampled_from([None, lo_c])), draw(st.sampled_from([None, lo_c + 3]))),
                  draw(st.integers(1, 6)))
        queries.append((reg, term, params))
    return sides, keys, attrs, times, queries


def drive(make, kind, w, both: bool, snapshot: bool):
    """Operations at their points; between two points the tuples go in as one insert_both
    (``both``) or as maximal same-side runs of insert."""
    sides, keys, attrs, times, queries = w
    op = make()
    n = len(sides)
    at: dict[int, list] = {}
    for qid, (reg, term, params) in enumerate(queries):
        at.setdefault(reg, []).append(("reg", qid, params))
        if term is not None:
            at.setdefault(term, []).append(("term", qid, None))
    out = []
    i = 0
    while i <= n:
        for what, qid, params in sorted(at.get(i, []), key=lambda o: o[0] != "reg"):
            if what == "term":
                op.terminate(qid)
            else:
                a, c, win = params
                op.register(qid, select(f"q{qid}", a, c, win if kind == "window" else None))
        if i == n:
            break
        j = i + 1
        while j < n and j not in at and (both or sides[j] == sides[i]):
            j += 1
        seqs = np.arange(i + 1, j + 1)
        cut = {s: [k for k in range(i, j) if sides[k] == s] for s in ("left", "right")}

        def block(ks):
            return (np.array(ks, np.int64) + 1, np.array([keys[k] for k in ks], np.int64),
                    np.array([attrs[k] for k in ks]).reshape(-1, 1),
                    np.array([times[k] for k in ks]) if kind == "window" else None)

        if both:
            res = op.insert_both({s: block(ks) for s, ks in cut.items() if ks})
        else:
            b = block(list(range(i, j)))
            res = op.insert(sides[i], seqs, b[1], b[2], b[3])
        out += triples(res)
        if snapshot and i <= n // 2 < j:
            op = type(op).from_state(unpack(pack(op.state())))
        i = j
    return sorted(out), op


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("kind", ["select", "window"])
@pytest.mark.parametrize("low", [True, False], ids=["min2", "min32"])
def test_delta_agrees_with_oracle(name, kind, low, monkeypatch):
    if low:
        monkeypatch.setattr(_delta, "DELTA_MIN", 2)
    cls = registry.resolve("joins", name)
    if kind not in cls("select").plans:
        pytest.skip(f"{name} does not serve {kind}")
    used = []

    @SETTINGS
    @given(w=many(kind))
    def check(w):
        for output in ("pairs", "affected"):
            ref = drive(lambda o=output: JoinOracle(kind, o), kind, w, both=False, snapshot=False)[0]
            for both in (False, True):
                got, op = drive(lambda o=output: cls(kind, o), kind, w, both=both, snapshot=both)
                assert got == ref, (output, both)
                used.append("_dead" in op.__dict__ or "_shadow" in op.__dict__)

    check()
    assert any(used)  # the delta served some of these streams


def test_shadow_holds_registrations_between_builds():
    """At 64 alive queries a registration goes to the shadow and a termination is dead; the
    built indexes are not marked for a rebuild; past the limit they are."""
    op = registry.resolve("joins", "dynamic")("window")
    for q in range(64):
        op.register(q, select(f"q{q}", (0, 10), (None, None), 5))
    op.insert("left", np.array([1]), np.array([1]), np.array([[1.0]]), np.array([1.0]))
    op.insert("right", np.array([2]), np.array([1]), np.array([[1.0]]), np.array([1.0]))
    assert not op._dirty
    op.register(64, select("q64", (0, 10), (None, None), 5))
    op.terminate(3)
    assert not op._dirty and 64 in op._shadow.q and op._dead == {3}
    q, r, s = op.insert("left", np.array([3]), np.array([1]), np.array([[2.0]]), np.array([2.0]))
    assert 3 not in q.tolist() and 64 in q.tolist() and len(q) == 64  # 63 built + 1 shadow
    for q in range(65, 65 + _delta.limit(op)):
        op.register(q, select(f"q{q}", (0, 10), (None, None), 5))
    assert op._dirty and "_shadow" not in op.__dict__  # merged: the next probe rebuilds


@pytest.mark.timeout(900)
@pytest.mark.parametrize("seed", [1, 2])
def test_delta_through_the_engine_agrees_with_the_oracle(seed, monkeypatch):
    """vigil.checks' conformance run (the engine, snapshot and restore midway, every rejection)
    on a join log with hundreds of queries registered and terminated between its rows, so that
    the join groups' operators take updates into the shadow and as dead queries."""
    from vigil.checks import check_family, random_log
    from vigil.joins._base import JoinBase

    used = []
    add = _delta.add

    def counting(op, *a):
        took = add(op, *a)
        used.append(took)
        return took

    monkeypatch.setattr(_delta, "add", counting)
    monkeypatch.setattr(_delta, "DELTA_MIN", 4)  # the log's groups hold tens of queries each
    check_family("joins", "dynamic", random_log("joins", seed, 1500, queries=400, lookups=0), cut=750)
    assert sum(used) >= 20, sum(used)
    assert JoinBase.shadow_cls is None  # the registered strategies set their own
