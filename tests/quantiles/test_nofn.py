"""The shared rows-window structure (vigil.quantiles.nofn): every lookup of every query, each with
its own window W and start, checked against the exact window (the contract: rank within e*N + 1
of max(1, ceil(phi*N))), beside Sliding (one summary per W) whose answers must be valid too;
windows of 1, 2, around the block size and beyond the stream, registrations inside the window,
terminations, positions without element, seq gaps, ties and huge values, lookups inside a gap;
sharded summaries (two parts by seq parity, merged) and snapshots (identical answers after)."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil.quantiles import _nofn_kernels as K
from vigil.quantiles import answer_from_summary, merge_summaries
from vigil.quantiles.nofn import MAX_ROWS, NofN
from vigil.quantiles.oracle import rank_error_ok
from vigil.quantiles.sliding import Sliding


def _values(rng, kind, k):
    if kind == 0:
        return rng.normal(0, 1, k)
    if kind == 1:  # many ties
        return rng.integers(0, 4, k).astype(float)
    if kind == 2:  # huge magnitudes (and infinities: 1.5e308 * 2)
        with np.errstate(over="ignore"):
            return rng.choice([-1e300, -1e-300, 0.0, 1e-300, 1e300, 1.5e308, -1.5e308], k) * rng.integers(1, 3, k)
    if kind == 3:  # one value
        return np.full(k, 7.0)
    return np.sort(rng.random(k)) if rng.random() < 0.5 else -np.sort(rng.random(k))  # trends


def _windows(rng, B, n):
    base = [1, 2, 3, B - 1, B, B + 1, 2 * B, 4 * B + 3, int(rng.integers(1, n + 2)), n + 1000, 10**5]
    if rng.random() < 0.1:
        base.append(MAX_ROWS)
    return [int(w) for w in base if w >= 1]


def _check(vals, seqs, n, start, w, ans, phi, e):
    lq = max(start + 1, n - w + 1)
    m = (seqs >= lq) & (seqs <= n)
    return rank_error_ok(vals[m], ans, phi, e)


@pytest.mark.timeout(900)
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), eps=st.sampled_from([0.005, 0.01, 0.05, 0.2]),
       block=st.sampled_from([None, 16]), kind=st.integers(0, 4), nan=st.sampled_from([0.0, 0.1, 0.5]),
       gaps=st.sampled_from([1, 3, 50]), chunk=st.sampled_from([1, 7, 100, 400]))
def test_every_lookup_within_the_contract(seed, eps, block, kind, nan, gaps, chunk):
    rng = np.random.default_rng(seed)
    op = NofN(eps, None, block)
    B = op.B
    total = int(rng.integers(chunk, 30 * chunk + 2 * B + 10))
    x = _values(rng, kind, total)
    x[rng.random(total) < nan] = np.nan
    seqs = np.cumsum(rng.integers(1, gaps + 1, total)).astype(np.int64)
    ws = _windows(rng, B, int(seqs[-1]))
    slid: dict[int, Sliding] = {}  # W -> Sliding with the same queries (validity, not equality)
    q: dict[int, tuple[float, float, int, int]] = {}
    qid = 0
    p = 0
    checked = 0
    while p < total:
        last = int(seqs[p - 1]) if p else 0
        for _ in range(int(rng.integers(0, 3))):  # registrations at the current position
            w = int(rng.choice(ws))
            phi = float(rng.choice([0.5, 0.9, 0.99, 0.01, 1.0, float(rng.random()) or 0.5]))
            eq = float(rng.choice([eps, 0.01, 0.1]))
            op.register(qid, phi, eq, last, rows=w)
            if w <= 5000:
                s = slid.setdefault(w, Sliding(eps, w))
                if p and not s.npushed:  # its positions so far (a fresh one starts at this one)
                    s.push(x[:p], seqs[:p])
                s.register(qid, phi, eq, last)
            q[qid] = (phi, eq, last, w)
            qid += 1
        if q and rng.random() < 0.2:  # a termination
            d = int(rng.choice(sorted(q)))
            op.terminate(d)
            if q[d][3] in slid:
                slid[q[d][3]].terminate(d)
            del q[d]
        k = min(total - p, int(rng.integers(1, chunk + 1)))
        op.push(x[p:p + k], seqs[p:p + k])
        for s in slid.values():
            s.push(x[p:p + k], seqs[p:p + k])
        p += k
        if not q:
            continue
        n = int(seqs[p - 1])
        for at in (n, n + int(rng.integers(1, 3 * gaps + 2))):  # at the last position and inside a gap
            ks = np.array(sorted(q), np.int64)
            got = op.lookup(ks, at)
            vals, sq = x[:p], seqs[:p]
            for i, c in enumerate(ks.tolist()):
                phi, eq, start, w = q[c]
                assert _check(vals, sq, at, start, w, got[i], phi, max(eq, eps)), (c, at, w, start, got[i])
                checked += 1
                if w in slid:
                    a = slid[w].lookup(np.array([c]), at)[0]
                    assert _check(vals, sq, at, start, w, a, phi, max(eq, eps)), ("sliding", c, w)
    assert checked or not qid


@pytest.mark.timeout(900)
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1), eps=st.sampled_from([0.005, 0.02, 0.1]), kind=st.integers(0, 4),
       shards=st.sampled_from([1, 2, 3]))
def test_sharded_summaries_merge_within_the_contract(seed, eps, kind, shards):
    """Each shard (seq mod shards) ships ``summary``; the merged answer keeps the contract, and a
    summary stays small (pruned to rank steps <= 2 eps n, never the window's values)."""
    rng = np.random.default_rng(seed)
    total = int(rng.integers(50, 6000))
    x = _values(rng, kind, total)
    seqs = np.cumsum(rng.integers(1, 3, total)).astype(np.int64)
    ops = [NofN(eps) for _ in range(shards)]
    ws = [1, 5, 100, 1000, 3000, 10**5]
    phis = [0.5, 0.9, 0.99, 0.01]
    for i, w in enumerate(ws):
        for o in ops:
            o.register(i, phis[i % 4], eps, 0, rows=w)
    p = 0
    while p < total:
        k = min(total - p, int(rng.integers(1, 700)))
        part = seqs[p:p + k] % shards
        for j, o in enumerate(ops):
            m = part == j
            if m.any():
                o.push(x[p:p + k][m], seqs[p:p + k][m])
        p += k
        n = int(seqs[p - 1])
        for i, w in enumerate(ws):
            parts = [o.summary(i, n) for o in ops]
            full = ops[0].summary(i, n, prune=False)  # the kernel's merge is merge_summaries'
            np.testing.assert_array_equal(full, merge_summaries(ops[0].parts(i, n)).reshape(-1, 3))
            for s in parts:
                if len(s):
                    assert len(s) <= 2 / eps + 4 * 64 + 64, len(s)  # O(1/eps + lists)
                    assert s[-1, 1] == s[-1, 2]  # its maximum exactly
            ans = answer_from_summary(merge_summaries(parts), phis[i % 4])
            assert _check(x[:p], seqs[:p], n, 0, w, ans, phis[i % 4], eps), (w, n)


@pytest.mark.timeout(600)
def test_snapshot_restores_identical_answers():
    rng = np.random.default_rng(5)
    op = NofN(0.01)
    x = rng.normal(0, 1, 20_000)
    x[rng.random(20_000) < 0.05] = np.nan
    seqs = np.cumsum(rng.integers(1, 3, 20_000)).astype(np.int64)
    for i, w in enumerate([1, 64, 1000, 7000]):
        op.register(i, 0.5, 0.01, 0, rows=w)
    op.push(x[:9_000], seqs[:9_000])
    op.register(9, 0.9, 0.01, int(seqs[8_999]), rows=30_000)  # a larger window: the layout grows
    op.push(x[9_000:12_345], seqs[9_000:12_345])
    st = op.state()
    back = NofN.from_state({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in st.items()})
    qs = np.array([0, 1, 2, 3, 9])
    for a, b in ((12_345, 15_000), (15_000, 20_000)):
        for o in (op, back):
            o.push(x[a:b], seqs[a:b])
        for at in (int(seqs[b - 1]), int(seqs[b - 1]) + 17):
            np.testing.assert_array_equal(op.lookup(qs, at), back.lookup(qs, at))
            np.testing.assert_array_equal(op.summary(9, at), back.summary(9, at))


def test_nodes_are_built_and_used():
    """A window of many blocks is answered from O(2 log) nodes, not one list per block."""
    op = NofN(0.005, None, 16)
    op.register(0, 0.5, 0.01, 0, rows=50_000)
    x = np.arange(60_000, dtype=float)[::-1].copy()
    op.push(x, np.arange(1, 60_001, dtype=np.int64))
    cap = int(op.meta[K.M_CAPB]) + 8
    loff, llen, lgap, lsize = (np.empty(cap, np.int64) for _ in range(4))
    K.sort_open(op.meta, op.V, op.RK, op.ov, op.os_, op.oss)
    k = K.cover(op.meta, op.lev, op.V, op.RK, op.ls, op.blo, op.bhi, op.os_, op.oss, op.nj, op.nm, op.ng,
                10_001, loff, llen, lgap, lsize)
    assert lsize[:k].sum() == 50_000
    assert k <= 2 * (int(op.meta[K.M_L]) + 1) + 2
    assert (lgap[:k] - 1).sum() <= 2 * 0.005 * 50_000
    assert op.lookup(np.array([0]), 60_000)[0] == pytest.approx(25_000, abs=0.005 * 50_000 + 1)


def test_refuses_notify_and_windows_beyond_the_cap():
    from vigil.errors import Unsupported

    op = NofN(0.01)
    with pytest.raises(Unsupported):
        op.register(0, 0.5, 0.01, 0, notify=True, rows=10)
    with pytest.raises(Unsupported):
        op.register(1, 0.5, 0.01, 0, rows=MAX_ROWS + 1)
    op.register(2, 0.5, 0.01, 0, rows=10)
    assert math.isnan(op.lookup(np.array([2]), 5)[0])  # empty window
    op.push(np.array([np.nan, 3.0]), np.array([1, 2]))
    assert op.lookup(np.array([2]), 2)[0] == 3.0
    assert math.isnan(op.lookup(np.array([2]), 12)[0])  # the window at 12 holds positions 3..12


def test_query_table_survives_many_registrations_and_terminations():
    """The query table's rows are reused after terminations (compaction keeps every live query's
    phi, start and window)."""
    rng = np.random.default_rng(3)
    op = NofN(0.01)
    x = rng.normal(0, 1, 5000)
    seqs = np.arange(1, 5001, dtype=np.int64)
    q = {}
    for step in range(50):
        a, b = step * 100, (step + 1) * 100
        for _ in range(7):
            qid = len(q) + 1000 * step
            q[qid] = (float(rng.choice([0.1, 0.5, 0.99])), a, int(rng.integers(1, 3000)))
            op.register(qid, q[qid][0], 0.01, a, rows=q[qid][2])
        for d in rng.choice(sorted(q), 5, replace=False).tolist():
            op.terminate(d)
            del q[d]
        op.push(x[a:b], seqs[a:b])
        ks = np.array(sorted(q), np.int64)
        got = op.lookup(ks, b)
        for i, c in enumerate(ks.tolist()):
            phi, start, w = q[c]
            assert _check(x[:b], seqs[:b], b, start, w, got[i], phi, 0.01)
    with pytest.raises(KeyError):
        op.lookup(np.array([-5]), 5000)


# ----------------------------------------------------------------------------- engine routing


def _engine_log(seed, n=6000):
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    v = np.round(rng.normal(100, 10, n), 1)
    table = pa.table({"seq": np.arange(1, n + 1, dtype=np.int64), "v": v})
    ops = []
    for i in range(40):
        q = {"type": "quantile", "id": f"q{i}", "column": "v", "phi": float(rng.choice([0.5, 0.9, 0.99])),
             "epsilon": 0.01, "rows": int(rng.integers(1, 3000))}
        ops.append({"op": "register", "at": int(rng.integers(0, n // 2)), "query": q})
        ops += [{"op": "lookup", "at": int(a), "id": f"q{i}"} for a in rng.integers(n // 2, n, 5)]
    ops.append({"op": "register", "at": 0, "query": {"type": "quantile", "id": "nt", "column": "v", "phi": 0.5,
                                                     "epsilon": 0.01, "rows": 100, "notify": True}})
    ops.append({"op": "register", "at": 0, "query": {"type": "quantile", "id": "big", "column": "v", "phi": 0.5,
                                                     "epsilon": 0.01, "rows": MAX_ROWS + 1}})
    ops.append({"op": "lookup", "at": n, "id": "big"})
    ops.sort(key=lambda o: o["at"])
    return table, v, ops


def _answers(out):
    return [(r["id"], r["at"], r["value"]) for r in out.to_pylist() if r["event"] == "answer"]


def test_engine_routes_plain_rows_lookups_to_one_group_and_restores():
    import json

    from vigil.engine import Engine

    table, v, ops = _engine_log(1)
    e = Engine()
    e.add_operations(ops)
    first = e.process(table.slice(0, 3500))
    keys = [json.loads(k)[1] for k in e.groups]
    assert {"column": "v", "rows": "shared"} in keys
    assert {"column": "v", "rows": 100} in keys and {"column": "v", "rows": MAX_ROWS + 1} in keys  # notify, beyond the cap
    assert len(keys) == 3
    back = Engine.restore(e.snapshot())
    rest = [x.process(table.slice(3500)) for x in (e, back)]
    assert _answers(rest[0]) == _answers(rest[1])
    spec = {o["query"]["id"]: o["query"] for o in ops if o["op"] == "register"}
    start = {o["query"]["id"]: o["at"] for o in ops if o["op"] == "register"}
    got = _answers(first) + _answers(rest[0])
    assert len(got) > 100
    for ident, at, val in got:
        q = spec[ident]
        lo = max(start[ident] + 1, at - q["rows"] + 1)
        assert rank_error_ok(v[lo - 1:at], math.nan if val is None else val, q["phi"], 0.01), (ident, at)


def test_old_snapshot_with_a_group_per_window_still_loads(monkeypatch):
    """A snapshot whose plain rows-window queries live in groups keyed by their window (before
    the shared group) restores into those groups and keeps answering them."""
    from vigil.engine import Engine
    from vigil.quantiles.group import QuantileGroup

    table, v, ops = _engine_log(2)
    old = QuantileGroup.params_of
    monkeypatch.setattr(QuantileGroup, "params_of", staticmethod(
        lambda spec: {"column": spec.column, "rows": spec.rows}))
    e = Engine()
    e.add_operations(ops)
    e.process(table.slice(0, 3500))
    assert all("shared" not in k for k in e.groups)
    monkeypatch.setattr(QuantileGroup, "params_of", old)
    back = Engine.restore(e.snapshot())
    assert all("shared" not in k for k in back.groups)
    spec = {o["query"]["id"]: o["query"] for o in ops if o["op"] == "register"}
    start = {o["query"]["id"]: o["at"] for o in ops if o["op"] == "register"}
    got = _answers(back.process(table.slice(3500)))
    assert len(got) > 50
    for ident, at, val in got:
        q = spec[ident]
        lo = max(start[ident] + 1, at - q["rows"] + 1)
        assert rank_error_ok(v[lo - 1:at], math.nan if val is None else val, q["phi"], 0.01), (ident, at)
