"""The notify contract (docs/contract.md, paper 004 §2.4) replayed element by element through the
engine: for every implementation, whole streams and sliding windows, on sorted, reverse,
semisorted, duplicate-heavy and random orders, with queries registered and terminated mid-stream,
a notify query's first update is at its first element, consecutive updates differ, and after
every element its latest value is within max(eps_q, eps)*N + 1 of the target rank over its
window (:func:`vigil.checks.check_quantile_updates`). Also: the checker fails on a wrong value;
mergeable summaries keep Theorem 1 and their answer bound; lookups of notify queries return the
maintained value."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.arrays import quantile_rank
from vigil.checks import Log, check_quantile_updates, run_log
from vigil.quantiles import answer_from_summary, merge_summaries
from vigil.quantiles.gk import GKSummary, theorem1_violations

ORDERS = ["sorted", "reverse", "semisort", "duplicates", "random"]


def stream(order: str, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if order == "sorted":
        return np.arange(n)
    if order == "reverse":
        return np.arange(n, 0, -1)
    if order == "semisort":
        return (np.arange(n) // 37) * 100 + rng.integers(0, 100, n)
    if order == "duplicates":
        return rng.integers(0, 5, n)
    return rng.integers(0, 10**6, n)


def log_for(order: str, n: int = 120, seed: int = 0, rows: bool = False) -> Log:
    rng = np.random.default_rng(seed + 1)
    ops = []
    for i in range(10):
        at = int(rng.choice([0, 0, 0, rng.integers(0, n)]))
        q = {"type": "quantile", "id": f"q{i}", "column": "v", "phi": float(rng.choice([0.01, 0.2, 0.5, 0.77, 0.99, 1.0])),
             "epsilon": float(rng.choice([0.01, 0.02, 0.05, 0.1])), "notify": bool(i % 4 != 3)}
        if rows:
            q["rows"] = int(rng.choice([1, 7, 40, 150]))
        ops.append({"op": "register", "at": at, "query": q})
        if i % 5 == 2:
            ops.append({"op": "terminate", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
        ops.append({"op": "lookup", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
    ops.sort(key=lambda o: o["at"])
    return Log(pa.table({"v": pa.array(stream(order, n, seed), pa.int64())}), ops, quantile_epsilon=0.02)


CASES = [("casu", o, False, (1, 64)) for o in ORDERS]
CASES += [("casu", o, True, (1, 16)) for o in ("semisort", "duplicates")]
CASES += [(i, "random", False, (7,)) for i in ("csu", "su", "naive", "oracle")]


@pytest.mark.parametrize(("impl", "order", "rows", "batches"), CASES,
                         ids=[f"{i}-{o}-{'window' if r else 'whole'}" for i, o, r, _ in CASES])
def test_notify_invariant_every_position(impl, order, rows, batches):
    # windows: every implementation delegates them to the bucket summary (sliding), tested via casu
    log = log_for(order, rows=rows, seed=ORDERS.index(order))
    for batch in batches:  # element by element, and in batches
        got = run_log(log, {"quantiles": impl}, batch=batch, cut=100)
        assert not [r for r in got if r["event"] == "rejected" and "not alive" not in r["reason"]], got
        check_quantile_updates(log, got)
        ups = [r for r in got if r["event"] == "update"]
        assert ups
        # a lookup of a notify query returns its latest update
        last: dict[str, float] = {}
        for r in got:
            if r["event"] == "update":
                last[r["id"]] = r["value"]
            elif r["event"] == "answer":
                spec = next(o["query"] for o in log.ops if o["op"] == "register" and o["query"]["id"] == r["id"])
                if spec["notify"]:
                    assert r["value"] == last.get(r["id"]), r


def test_checker_rejects_a_wrong_update():
    log = log_for("random")
    got = run_log(log, {"quantiles": "casu"})
    check_quantile_updates(log, got)
    ups = [i for i, r in enumerate(got) if r["event"] == "update"]
    bad = [dict(r) for r in got]
    bad[ups[0]]["value"] = 10**9  # not an element (a first update is always checked)
    with pytest.raises(AssertionError):
        check_quantile_updates(log, bad)
    dup = [dict(r) for r in got]
    k = ups[1]
    dup.insert(k + 1, dict(dup[k], at=dup[k]["at"] + 0))  # two updates at one position
    with pytest.raises(AssertionError):
        check_quantile_updates(log, dup)


@pytest.mark.parametrize("order", ORDERS)
def test_merged_summaries_keep_the_bound(order):
    rng = np.random.default_rng(5)
    data = stream(order, 20000, 3).astype(np.float64)
    cut = np.sort(rng.choice(np.arange(1, len(data)), 3, replace=False))
    parts, eps = [], 0.01
    for chunk in np.split(data, cut):
        g = GKSummary(eps)
        g.insert(chunk)
        v, lo, hi = g.tuples()
        parts.append(np.column_stack([v, lo, hi]).astype(np.float64))
    parts.append(np.sort(data[:50]))  # an exact part (the oracle's form)
    allx = np.concatenate([data, data[:50]])
    m = merge_summaries(parts)
    assert theorem1_violations(m[:, 0], m[:, 1].astype(np.int64), m[:, 2].astype(np.int64), allx, eps) == []
    srt = np.sort(allx)
    for phi in (0.001, 0.3, 0.5, 0.9, 1.0):
        u = answer_from_summary(m, phi)
        lo_r, hi_r = np.searchsorted(srt, u, "left") + 1, np.searchsorted(srt, u, "right")
        t = quantile_rank(phi, len(srt))
        assert max(0, lo_r - t, t - hi_r) <= eps * len(srt) + 1


BATCH_CASES = [(i, o, False) for i in ("casu", "csu", "su", "naive") for o in ("semisort", "duplicates", "random")]
BATCH_CASES += [("casu", o, True) for o in ("semisort", "duplicates")]


@pytest.mark.parametrize(("impl", "order", "rows"), BATCH_CASES,
                         ids=[f"{i}-{o}-{'window' if r else 'whole'}" for i, o, r in BATCH_CASES])
def test_batch_split_never_changes_updates(impl, order, rows):
    # how the stream is cut into batches (and where a snapshot is restored) is not the user's
    # business: every update and answer must be the same as element by element
    log = log_for(order, n=400, seed=3 + ORDERS.index(order), rows=rows)
    want = run_log(log, {"quantiles": impl}, batch=1)
    assert [r for r in want if r["event"] == "update"]
    for batch, cut in ((3, None), (64, 130), (10**6, None), (10**6, 250)):
        assert run_log(log, {"quantiles": impl}, batch=batch, cut=cut) == want, (batch, cut)
