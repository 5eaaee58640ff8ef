"""Every ring-based WindowOperator against WindowOracle at the operator level (hypothesis): random
registrations (rows / time, suffix / historical, any start), terminations, pushes with seq gaps,
NULLs, duplicates and equal timestamps, lookups at non-decreasing n, snapshot/restore through
vigil.state.pack (pickle-free) in the middle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil import registry
from vigil.errors import Unsupported
from vigil.specs import parse_query
from vigil.state import pack, unpack
from vigil.windows.oracle import WindowOracle

SERVES = {
    "rint": ("sum", "count", "avg"),
    "bint": ("sum", "count", "avg", "min", "max"),
    "lint": ("sum", "count", "avg", "min", "max"),
    "bint_qnt": ("quantile",),
    "wavelet_qnt": ("quantile",),
    "slickdeque": ("min", "max"),
    "psoup": ("sum", "count", "avg", "min", "max"),
    "materialize_all": ("sum", "count", "avg"),
    "materialize_none": ("sum", "count", "avg", "min", "max", "quantile"),
    "auto": ("sum", "count", "avg", "min", "max", "quantile"),
}
CASES = [(n, a) for n, aggs in SERVES.items() for a in aggs]


def spec(i: int, agg: str, time_based: bool, left, right, phi=None):
    q = {"type": "window_aggregate", "id": f"q{i}", "agg": agg, "column": "v"}
    q["time" if time_based else "rows"] = [left, right]
    if agg == "quantile":
        q["phi"] = phi
    return parse_query(q)


@st.composite
def scripts(draw, agg: str, time_based: bool):
    steps = []
    nq = 0
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["reg", "reg", "push", "push", "push", "look", "term", "snap"]))
        if kind == "reg":
            right = draw(st.sampled_from([0, 0, 1, 3]))
            left = right + draw(st.sampled_from([1, 2, 3, 7, 16, 40, 200]))
            phi = draw(st.sampled_from([0.01, 0.25, 0.5, 0.9, 1.0, 0.07]))
            steps.append(("reg", nq, left, right, phi))
            nq += 1
        elif kind == "push":
            k = draw(st.integers(0, 40))
            vals = draw(st.lists(st.one_of(st.integers(-4, 4).map(float), st.just(math.nan),
                                           st.floats(-1e3, 1e3, allow_nan=False)), min_size=k, max_size=k))
            gaps = draw(st.lists(st.sampled_from([1, 1, 1, 2, 5]), min_size=k, max_size=k))
            dts = draw(st.lists(st.sampled_from([0, 0, 1, 2, 9]), min_size=k, max_size=k))
            steps.append(("push", vals, gaps, dts))
        elif kind == "term" and nq:
            steps.append(("term", draw(st.integers(0, nq - 1))))
        elif kind == "look":
            steps.append(("look", draw(st.integers(0, 2))))
        elif kind == "snap":
            steps.append(("snap",))
    return steps


def run_script(name: str, agg: str, time_based: bool, steps) -> None:
    cls = registry.resolve("windows", name)
    op, orc = cls(agg, time_based), WindowOracle(agg, time_based)
    seq, t, n, alive = 0, 0.0, 0, set()
    for s in steps:
        if s[0] == "reg":
            _, i, left, right, phi = s
            sp = spec(i, agg, time_based, left, right, phi)
            try:
                op.register(i, sp, n)
            except Unsupported:
                assert name in ("slickdeque", "lint") and (right > 0 or time_based), (name, left, right)
                continue
            orc.register(i, sp, n)
            alive.add(i)
        elif s[0] == "push":
            _, vals, gaps, dts = s
            seqs = n + np.cumsum(np.array(gaps, np.int64))
            times = t + np.cumsum(np.array(dts, np.float64))
            op.push(np.array(vals, np.float64), seqs, times if time_based else None)
            orc.push(np.array(vals, np.float64), seqs, times if time_based else None)
            if len(vals):
                n, seq, t = int(seqs[-1]), int(seqs[-1]), float(times[-1])
        elif s[0] == "term":
            op.terminate(s[1])
            orc.terminate(s[1])
            alive.discard(s[1])
        elif s[0] == "look":
            n += s[1]  # rows after the last element may have been rejected: n > last seq
        elif s[0] == "snap":
            op = cls.from_state(unpack(pack(op.state())))
        if alive:
            q = np.array(sorted(alive), np.int64)
            t_now = t if seq else math.nan
            got, want = op.lookup(q, n, t_now), orc.lookup(q, n, t_now)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, equal_nan=True,
                                       err_msg=f"{name} {agg} time={time_based} after {s}")


@pytest.mark.parametrize(("name", "agg"), CASES, ids=[f"{n}-{a}" for n, a in CASES])
@pytest.mark.parametrize("time_based", [False, True], ids=["rows", "time"])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_agrees_with_oracle(name, agg, time_based, data):
    if name == "lint" and time_based:
        op = registry.resolve("windows", name)(agg, True)
        with pytest.raises(Unsupported, match="rows windows only"):
            op.register(0, spec(0, agg, True, 5, 0), 0)
        return
    run_script(name, agg, time_based, data.draw(scripts(agg, time_based)))


@pytest.mark.parametrize("name", ["rint", "bint_qnt", "slickdeque", "materialize_all"])
def test_rejects_what_it_cannot_serve(name):
    op = registry.resolve("windows", name)("max" if name != "slickdeque" else "sum", False)
    with pytest.raises(Unsupported, match=name):
        op.register(0, spec(0, op.agg, False, 5, 0), 0)


def test_slickdeque_rejects_historical_windows():
    op = registry.resolve("windows", "slickdeque")("max", False)
    with pytest.raises(Unsupported, match="suffix windows only"):
        op.register(0, spec(0, "max", False, 5, 2), 0)
    op.register(1, spec(1, "max", False, 5, 0), 0)  # suffix: served


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(-5, 5).map(float), max_size=300), min_size=1, max_size=12), st.data())
def test_bint_qnt_selection_over_sorted_pieces(pieces, data):
    from vigil.windows._bint_qnt_kernels import select_kth

    flat = np.concatenate([np.sort(np.array(p, np.float64)) for p in pieces] + [np.zeros(0)])
    if not len(flat):
        return
    sizes = [len(p) for p in pieces]
    lo = np.zeros(128, np.int64)
    hi = np.zeros(128, np.int64)
    lo[:len(sizes)] = np.cumsum([0, *sizes[:-1]])
    hi[:len(sizes)] = np.cumsum(sizes)
    k = data.draw(st.integers(1, len(flat)))
    ws = [np.empty(128, np.int64) for _ in range(2)]
    got = select_kth(flat, lo, hi, len(sizes), k, np.empty(128), np.empty(128, np.int64), ws[0], ws[1], np.empty(513))
    assert got == np.sort(flat)[k - 1]
