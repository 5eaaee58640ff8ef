"""Window joins with a declared max_window (issue 13, deliverable 5): every strategy drops the
stored tuples no window <= max_window can pair, gives the same pairs as without the bound, and
keeps memory flat on a long stream; the spec and the engine reject what breaks the bound."""

from __future__ import annotations

import numpy as np
import pytest

from vigil import registry
from vigil.errors import Unsupported
from vigil.events import output_rows
from vigil.specs import parse_query
from vigil.state import pack, unpack

from .test_oracle import select, triples

NAMES = [n for n in registry.IMPLEMENTATIONS["joins"]
         if n == "oracle" or "window" in registry.resolve("joins", n)("band").plans]


def _stream(rng, n, t0=0.0):
    sides = np.where(rng.random(n) < 0.5, "left", "right")
    keys = rng.integers(0, 6, n)
    attrs = rng.integers(0, 20, n).astype(float)
    times = t0 + np.cumsum(rng.integers(0, 3, n)).astype(float)  # ties included
    return sides, keys, attrs, times


def _run(cls, stream, queries, retain, seq0=0, op=None, snapshot_at=None):
    if op is None:
        op = cls("window", "pairs")
        if retain is not None:
            op.retain(retain)
        for qid, (a, c, w) in enumerate(queries):
            op.register(qid, select(f"q{qid}", a, c, w))
    sides, keys, attrs, times = stream
    out = []
    i, n = 0, len(sides)
    while i < n:
        j = i + 1
        while j < n and sides[j] == sides[i] and j - i < 50:
            j += 1
        seqs = np.arange(seq0 + i + 1, seq0 + j + 1)
        out += triples(op.insert(str(sides[i]), seqs, keys[i:j].astype(np.int64), attrs[i:j].reshape(-1, 1), times[i:j]))
        if snapshot_at is not None and i <= snapshot_at < j:
            op = type(op).from_state(unpack(pack(op.state())))
        i = j
    return out, op


@pytest.mark.parametrize("name", NAMES)
def test_same_pairs_with_and_without_the_bound(name):
    cls = registry.resolve("joins", name)
    rng = np.random.default_rng(3)
    queries = [((0, 12), (3, 15), 4), ((5, 19), (None, None), 9), ((0, 19), (0, 5), 1)]
    stream = _stream(rng, 6000)
    free, _ = _run(cls, stream, queries, None)
    bound, op = _run(cls, stream, queries, 9.0, snapshot_at=3000)
    assert bound == free and len(free) > 1000
    if name != "oracle":
        # the tuples kept are those a window of 9 can still pair, up to the amortization slack
        t = np.concatenate([op.sides[s].t.view for s in ("left", "right")])
        assert len(t) < 2 * op.sides["left"].BUF_MIN + 4 * np.count_nonzero(t > stream[3][-1] - 9.0)


@pytest.mark.parametrize("name", [n for n in NAMES if n != "oracle"])
def test_memory_flat_on_a_long_stream(name):
    cls = registry.resolve("joins", name)
    rng = np.random.default_rng(5)
    queries = [((0, 12), (3, 15), 4), ((5, 19), (None, None), 9)]
    op = None
    sizes = []
    for part in range(6):  # 6 x 6,000 tuples (each > 2 compactions), times keep growing
        stream = _stream(rng, 6_000, t0=part * 1e6)
        _, op = _run(cls, stream, queries, 9.0, seq0=part * 6_000, op=op)
        sizes.append(op.nbytes())
    assert max(sizes[2:]) <= 1.5 * sizes[1], sizes


def test_bound_is_checked():
    cls = registry.resolve("joins", "ssi")
    op = cls("window", "pairs")
    op.retain(5.0)
    with pytest.raises(Unsupported, match="max_window"):
        op.register(1, select("q", (0, 1), (0, 1), 6))
    op.register(2, select("q2", (0, 1), (0, 1), 5))
    op.insert("left", np.array([1]), np.array([0]), np.array([[0.0]]), np.array([10.0]))
    with pytest.raises(ValueError, match="non-decreasing"):
        op.insert("right", np.array([2]), np.array([0]), np.array([[0.0]]), np.array([9.0]))
    with pytest.raises(ValueError, match="window joins only"):
        cls("select", "pairs").retain(5.0)
    spec = {"id": "j", "type": "window_join", "left": "R", "right": "S", "left_on": "B", "right_on": "B",
            "window": 5}
    assert parse_query({**spec, "max_window": 7}).max_window == 7
    for bad in (3, 0, -1, float("inf")):
        with pytest.raises(ValueError):
            parse_query({**spec, "max_window": bad})


def test_engine_groups_by_the_declared_bound_and_equals_the_oracle():
    import pyarrow as pa

    from vigil.engine import Engine

    rng = np.random.default_rng(11)
    n = 4000
    sides, keys, attrs, times = _stream(rng, n)
    table = pa.table({"seq": np.arange(1, n + 1), "rel": np.where(sides == "left", "R", "S"),
                      "B": keys.astype(str), "A": attrs, "C": attrs, "T": times})
    ops = []
    for i, (w, mw) in enumerate([(4, 9), (9, 9), (3, None), (2, 1)]):
        q = {"id": f"j{i}", "type": "window_join", "left": "R", "right": "S", "left_on": "B", "right_on": "B",
             "left_range": {"A": [0, 12]}, "right_range": {"C": [3, 15]}, "window": w, "time_column": "T"}
        if mw is not None:
            q["max_window"] = mw
        ops.append({"op": "register", "at": 0, "query": q})
    res = {}
    for algo in ("oracle", "ssi"):
        eng = Engine({"joins": algo})
        eng.add_operations([__import__("json").dumps(o) for o in ops])
        out = [eng.process(table.slice(k, 500)) for k in range(0, n, 500)] + [eng.finish()]
        rows = [r for t in out for r in output_rows(t)]
        res[algo] = rows
        assert sum(len(g.qids) for g in eng.groups.values() if g.family == "joins") == 3
    assert res["ssi"] == res["oracle"]
    rej = [r for r in res["ssi"] if r["event"] == "rejected"]
    assert len(rej) == 1 and rej[0]["id"] == "j3" and "max_window" in rej[0]["reason"]
    assert sum(r["event"] == "join" for r in res["ssi"]) > 100
