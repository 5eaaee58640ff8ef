"""The window-join operators' time order (issue 22, defect 8) and preloading (defect 7), and the
affected-mode dedupe (defect 9).

Every window strategy indexes the stored tuples in (key, arrival) order, read as (key, time)
order: an insert whose times go back is refused with a ValueError (one vectorised pass), with or
without a max_window; tuples that arrived earlier, in any time order, are stored with
``preload`` and pair exactly as the oracle's afterwards."""

from __future__ import annotations

import time

import numpy as np
import pytest

from vigil import registry
from vigil.state import pack, unpack

from .test_oracle import select, triples

WINDOW = [n for n in registry.IMPLEMENTATIONS["joins"]
          if n != "oracle" and "window" in registry.resolve("joins", n)("band").plans]
QUERIES = [((0, 12), (3, 15), 4), ((5, 19), (None, None), 9), ((0, 19), (0, 5), 1)]


def _op(name, output="pairs", retain=None):
    op = registry.resolve("joins", name)("window", output)
    if retain is not None:
        op.retain(retain)
    for qid, (a, c, w) in enumerate(QUERIES):
        op.register(qid, select(f"q{qid}", a, c, w))
    return op


def _ins(op, side, seqs, times, key=0, x=5.0):
    n = len(seqs)
    return op.insert(side, np.asarray(seqs), np.full(n, key, np.int64), np.full((n, 1), x), np.asarray(times, float))


def test_window_strategies_are_the_ones_the_issue_names():
    assert {"ssi", "hotspot", "join_first", "dynamic"} <= set(WINDOW)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", WINDOW)
@pytest.mark.parametrize("retain", [None, 20.0])
def test_times_going_back_are_refused(name, retain):
    op = _op(name, retain=retain)
    _ins(op, "left", [1, 2], [10.0, 10.0])  # ties are fine
    with pytest.raises(ValueError, match="non-decreasing: time 9 arrives after 10"):
        _ins(op, "right", [3], [9.0])  # below an earlier insert
    with pytest.raises(ValueError, match="non-decreasing: time 11 arrives after 12"):
        _ins(op, "right", [3, 4, 5], [12.0, 11.0, 13.0])  # inside one insert
    # q0 (w 4) and q1 (w 9) pair 12 with 10; q2 (w 1) does not
    assert triples(_ins(op, "right", [6, 7], [12.0, 12.0])) == [
        (q, r, s) for s in (6, 7) for q in (0, 1) for r in (1, 2)]


@pytest.mark.parametrize("name", ["ssi", "dynamic"])
def test_nan_times_pair_with_nothing_and_do_not_order(name):
    op = _op(name)
    _ins(op, "left", [1, 2, 3], [10.0, np.nan, 11.0])
    assert triples(_ins(op, "right", [4], [np.nan])) == []
    assert triples(_ins(op, "right", [5], [11.0])) == [(0, 1, 5), (0, 3, 5), (1, 1, 5), (1, 3, 5), (2, 3, 5)]
    with pytest.raises(ValueError, match="max_window needs non-NaN"):
        _ins(_op(name, retain=9.0), "left", [1], [np.nan])


def _random(rng, n, t0=0.0, jitter=0.0):
    sides = np.where(rng.random(n) < 0.5, "left", "right")
    keys = rng.integers(0, 4, n)
    x = rng.integers(0, 20, n).astype(float)
    t = t0 + np.cumsum(rng.integers(0, 3, n)).astype(float) + rng.uniform(0, jitter, n).round()
    return sides, keys, x, t


def _feed(op, stream, seq0, out):
    sides, keys, x, t = stream
    i = 0
    while i < len(sides):
        j = i + 1
        while j < len(sides) and sides[j] == sides[i] and j - i < 40:
            j += 1
        seqs = np.arange(seq0 + i + 1, seq0 + j + 1)
        out += triples(op.insert(str(sides[i]), seqs, keys[i:j], x[i:j].reshape(-1, 1), t[i:j]))
        i = j


@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", WINDOW)
@pytest.mark.parametrize("retain", [None, 9.0])
@pytest.mark.parametrize("output", ["pairs", "affected"])
def test_preloaded_tuples_in_any_order_pair_as_the_oracles(name, retain, output):
    """2,000 earlier tuples in scrambled time order (preloaded in three calls), then 3,000
    arrivals in time order: the same outputs as the oracle's, also through a snapshot taken while
    preloaded tuples are held."""
    rng = np.random.default_rng(7)
    old = _random(rng, 2000, jitter=30.0)
    new = _random(rng, 3000, t0=float(old[3].max()))
    res = []
    for impl in ("oracle", name):
        op = _op(impl, output, retain if impl != "oracle" else None)
        seqs = np.arange(1, 2001)
        for part in np.array_split(rng.permutation(2000), 3):
            for side in ("left", "right"):
                p = part[old[0][part] == side]
                op.preload(side, seqs[p], old[1][p], old[2][p].reshape(-1, 1), old[3][p])
        if impl != "oracle":
            op = type(op).from_state(unpack(pack(op.state())))
        out = []
        _feed(op, new, 2000, out)
        res.append(out)
    assert res[1] == res[0] and len(res[0]) > 500


def test_distinct_pairs_equal_numpys():
    from vigil.joins._base import distinct_pairs

    rng = np.random.default_rng(0)
    for k, qspan, qlo in ((1, 1, 0), (500, 7, 0), (20_000, 10**6, -50), (3000, 2**62, -(2**61))):
        i = rng.integers(0, 300, k)
        q = qlo + rng.integers(0, qspan, k)
        ui, uq = distinct_pairs(i, q)
        want = np.unique(np.stack([i, q], 1), axis=0)
        assert np.array_equal(ui, want[:, 0]) and np.array_equal(uq, want[:, 1])


@pytest.mark.timeout(300)
def test_affected_dedupe_costs_a_sort():
    """Issue 22 (9): the affected mode's dedupe of k (arriving tuple, query) pairs was
    np.unique(axis=0), ~15x a sort of k int64; now one sort of a combined key."""
    rng = np.random.default_rng(1)
    k = 2_000_000
    i = np.sort(rng.integers(0, 1000, k))
    q = rng.integers(0, 100_000, k)
    op = _op("ssi", "affected")
    seqs = np.arange(10_001, 11_001)
    best = {}
    for what in ("sort", "assemble") * 3:
        c = time.process_time()
        if what == "sort":
            np.sort(i * 100_000 + q)
        else:
            got = op._assemble("left", seqs, q, i, None, 0)
        best[what] = min(best.get(what, np.inf), time.process_time() - c)
    assert best["assemble"] < 3 * best["sort"], best
    want = np.unique(np.stack([i, q], 1), axis=0)
    assert np.array_equal(got[0], want[:, 1]) and np.array_equal(got[1], seqs[want[:, 0]])
