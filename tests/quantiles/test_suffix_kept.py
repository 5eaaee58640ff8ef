"""Plain queries of the suffix structure (:mod:`vigil.quantiles.suffix`) answer a lookup with
their previous answer while it still meets docs/contract.md's bound over their own window (a
check of its counts, as a notify query keeps its value), else with a new best candidate: every
answer is checked against the exact window, on a stream whose quantiles drift (the kept answers
go stale and must be replaced) and on a stationary one (they are kept)."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.quantiles.oracle import rank_error_ok
from vigil.quantiles.suffix import Suffix
from vigil.state import pack, unpack

EPS = 0.005


def _run(x: np.ndarray, regs: list[int], step: int, snap_at: int | None = None):
    """Register plain queries at positions ``regs`` (phi spread over (0, 1]), look every one up
    every ``step`` elements and check each answer; returns (answers, repeats)."""
    rng = np.random.default_rng(len(x))
    phis = np.round(rng.uniform(0.001, 1.0, len(regs)), 3)
    eps_q = rng.choice([EPS, 0.01, 0.05], len(regs))
    s = Suffix(EPS)
    starts: dict[int, int] = {}
    last: dict[int, float] = {}
    answers = repeats = 0
    p = 0
    events = sorted({*regs, *range(step, len(x) + 1, step)})
    for c in events:
        if c > p:
            s.push(x[p:c])
            p = c
        if snap_at is not None and p >= snap_at:
            s = Suffix.from_state(unpack(pack(s.state())))
            snap_at = None
        for i in [i for i, r in enumerate(regs) if r == c]:
            s.register(i, float(phis[i]), max(float(eps_q[i]), EPS), False)
            starts[i] = c
        if c % step == 0 and starts:
            ids = np.array(sorted(starts), np.int64)
            got = s.lookup(ids)
            for q, v in zip(ids.tolist(), got.tolist(), strict=True):
                win = x[starts[q]:p]
                if not len(win):
                    assert v != v
                    continue
                assert rank_error_ok(win, v, float(phis[q]), max(float(eps_q[q]), EPS)), (q, p, v)
                answers += 1
                repeats += last.get(q) == v
                last[q] = v
    return answers, repeats


@pytest.mark.timeout(600)
@pytest.mark.parametrize("stream", ["uniform", "drift", "ties"])
def test_kept_answers_meet_the_bound(stream):
    rng = np.random.default_rng(11)
    n = 30_000
    if stream == "uniform":
        x = rng.random(n)
    elif stream == "drift":  # increasing blocks: every quantile moves up, kept answers go stale
        x = (np.arange(n) // 500) * 1.0 + rng.random(n)
    else:
        x = rng.integers(0, 30, n).astype(float)
    regs = sorted(rng.integers(0, n // 2, 60).tolist())
    answers, repeats = _run(x, regs, 97)
    assert answers > 5000
    if stream == "uniform":
        assert repeats > answers // 2  # the kept path answers most lookups
    if stream == "drift":
        assert repeats < answers  # and new answers replace stale ones


@pytest.mark.timeout(600)
def test_kept_answers_across_a_snapshot():
    x = np.random.default_rng(3).normal(size=12_000)
    regs = list(range(0, 6000, 150))
    assert _run(x, regs, 101, snap_at=7000) == _run(x, regs, 101)


def test_snapshot_of_an_older_format_answers_plain_queries():
    """A snapshot whose query table has 5 columns (plain queries without a slot) still answers."""
    x = np.random.default_rng(4).random(4000)
    s = Suffix(EPS)
    s.push(x[:1000])
    s.register(1, 0.3, 0.01, False)
    s.push(x[1000:])
    st = s.state()
    q = np.asarray(st["q"])
    st["q"] = np.column_stack([q[:, :4], np.full(len(q), -1.0)])  # (phi, e, K_q, N0, slot -1)
    old = Suffix.from_state(unpack(pack(st)))
    v = old.lookup(np.array([1]))[0]
    assert rank_error_ok(x[1000:], v, 0.3, 0.01)
