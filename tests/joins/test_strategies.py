"""Every paper-003 strategy against the JoinOracle (all output modes, count mode included, with a
snapshot/restore midway), the default against DuckDB, rejections, and the flat-memory check."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from vigil import registry
from vigil.errors import Unsupported
from vigil.joins import hotspot
from vigil.joins._base import _Side
from vigil.joins.oracle import JoinOracle
from vigil.specs import parse_query
from vigil.state import pack, unpack

from .test_oracle import band, select, sql_pairs, triples, workload

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAMES = [n for n in registry.IMPLEMENTATIONS["joins"] if n != "oracle"]
CASES = [(n, k) for n in NAMES for k in ("band", "select", "window")
         if k in registry.resolve("joins", n)("band").plans]


def drive(cls, kind, output, sides, keys, attrs, times, queries, snapshot=True):
    """Apply registrations/terminations at their points, insert maximal same-side runs."""
    op = cls(kind, output)
    n = len(sides)
    ops_at: dict[int, list] = {}
    for qid, (reg, term, params) in enumerate(queries):
        ops_at.setdefault(reg, []).append(("reg", qid, params))
        if term is not None:
            ops_at.setdefault(term, []).append(("term", qid, None))
    out = []
    i = 0
    while i <= n:
        for what, qid, params in sorted(ops_at.get(i, []), key=lambda o: o[0] != "reg"):
            if what == "term":
                op.terminate(qid)
            elif kind == "band":
                op.register(qid, band(f"q{qid}", *params))
            else:
                a, c, w = params
                op.register(qid, select(f"q{qid}", a, c, w if kind == "window" else None))
        if i == n:
            break
        j = i + 1
        while j < n and sides[j] == sides[i] and j not in ops_at:
            j += 1
        key = np.array(keys[i:j], dtype=np.float64 if kind == "band" else np.int64)
        at = None if kind == "band" else np.array(attrs[i:j]).reshape(-1, 1)
        tm = np.array(times[i:j]) if kind == "window" else None
        out += triples(op.insert(sides[i], np.arange(i + 1, j + 1), key, at, tm))
        if snapshot and i == n // 2:
            op = cls.from_state(unpack(pack(op.state())))
        i = j
    return out, op


def monotone(w):
    sides, keys, attrs, times, queries = w
    return sides, keys, attrs, sorted(times), queries  # tuples arrive in time order (paper 003 §3.3)


@pytest.mark.parametrize(("name", "kind"), CASES, ids=[f"{n}-{k}" for n, k in CASES])
def test_strategy_agrees_with_oracle(name, kind):
    cls = registry.resolve("joins", name)

    @SETTINGS
    @given(w=workload(kind))
    def check(w):
        w = monotone(w)
        for output in ("pairs", "affected"):
            assert drive(cls, kind, output, *w)[0] == drive(JoinOracle, kind, output, *w, snapshot=False)[0]
        _, op = drive(cls, kind, "count", *w)
        assert op.counted == len(drive(JoinOracle, kind, "pairs", *w, snapshot=False)[0])

    check()


@pytest.mark.parametrize("kind", ["band", "select", "window"])
def test_default_matches_duckdb(kind):
    cls = registry.resolve("joins")

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(w=workload(kind))
    def check(w):
        w = monotone(w)
        for output in ("pairs", "affected"):
            assert drive(cls, kind, output, *w)[0] == sql_pairs(kind, output, *w)

    check()


def test_undefined_types_and_columns_are_rejected():
    with pytest.raises(Unsupported, match="band_join"):
        registry.resolve("joins", "vanilla")("band").register(1, band("a", 0, 1))
    with pytest.raises(Unsupported, match="select_join"):
        registry.resolve("joins", "mj")("select").register(1, select("a", (0, 1), (0, 1)))
    two = parse_query({"id": "x", "type": "select_join", "left": "R", "right": "S", "left_on": "B",
                       "right_on": "B", "left_range": {"A": [0, 1], "Z": [0, 1]}})
    with pytest.raises(Unsupported, match="one range column"):
        registry.resolve("joins", "ssi")("select").register(1, two)


@pytest.mark.slow  # 57-82 s on a fresh clone: make test-all
@pytest.mark.parametrize("alpha", [0.001, 0.05])
def test_many_queries_larger_stream_vs_oracle(monkeypatch, alpha):
    """150 clustered queries (hot and scattered groups: alpha 0.05), a few hundred tuples per
    side; a small buffer part so that merges into the main index happen mid-stream."""
    monkeypatch.setattr(_Side, "BUF_MIN", 8)
    monkeypatch.setattr(hotspot, "ALPHA", alpha)
    rng = np.random.default_rng(7)
    for kind in ("band", "select", "window"):
        qs = []
        for i in range(150):
            c = rng.choice([5.0, 20.0, 40.0]) if i % 3 else rng.uniform(0, 50)
            if kind == "band":
                qs.append(band(f"q{i}", c - 25 - rng.uniform(0, 3), c - 25 + rng.uniform(0, 3)))
            else:
                qs.append(select(f"q{i}", (c - rng.uniform(0, 8), c + rng.uniform(0, 8)),
                                 (c - rng.uniform(0, 8), c + rng.uniform(0, 8)), 5.0 + i % 7 if kind == "window" else None))
        names = ("ssi", "hotspot", "join_first", "select_first", "mj", "douter", "qouter", "vanilla")
        for name in names if alpha == 0.001 else ("hotspot",):
            cls = registry.resolve("joins", name)
            if kind not in cls(kind).plans:
                continue
            ops = [cls(kind), JoinOracle(kind)]
            for i, s in enumerate(qs[:100]):
                for op in ops:
                    op.register(i, s)
            seq, t = 1, 0.0
            for step in range(16):
                side = "left" if step % 3 else "right"
                n = int(rng.integers(1, 20))
                key = rng.integers(0, 50, n).astype(np.float64 if kind == "band" else np.int64)
                attrs = None if kind == "band" else rng.uniform(0, 50, (n, 1)).round()
                times = None
                if kind == "window":
                    times = t + np.cumsum(rng.integers(0, 2, n)).astype(float)
                    t = float(times[-1])
                if step == 8:
                    for op in ops:
                        for i in range(0, 100, 3):
                            op.terminate(i)
                        for i in range(100, 150):
                            op.register(i, qs[i])
                got, exp = (op.insert(side, np.arange(seq, seq + n), key, attrs, times) for op in ops)
                seq += n
                assert all(np.array_equal(a, b) for a, b in zip(got, exp, strict=True)), (kind, name, step)
