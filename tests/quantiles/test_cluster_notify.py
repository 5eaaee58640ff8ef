"""``"notify": "cluster"`` (docs/contract.md, paper 004 §3 / §5.5's message model), replayed element
by element through the engine: a query's ``cluster`` events name the cluster whose value it shows
(the first at its first element, then one per move: OQC merges absorbing its cluster), and
``cluster_update`` events (id null) carry a cluster's value when it gets its first value or
changes, and only then; at every position the value of the latest update of a query's latest
cluster is within max(eps_q, eps)*N + 1 of the target rank over its window
(:func:`vigil.checks.check_quantile_updates`). Also: batch splits and snapshot/restore never
change the events, lookups return the shown value, sharded mode rejects the mode, the checker
fails on wrong events, and the kernel walks no member."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, check_quantile_updates, run_log
from vigil.engine import Engine, Partial
from vigil.events import output_rows
from vigil.quantiles.casu import CASU
from vigil.quantiles.csu import CSU

from .test_notify import ORDERS, stream

IMPLS = ["casu", "csu", "su", "naive", "oracle"]


def cluster_log(order: str, n: int = 120, seed: int = 0, rows: bool = False) -> Log:
    """Notify "cluster" queries in batches at a few positions; inside a batch a termination between
    registrations makes the operator cluster the first part (QC_A) before the rest arrives (OQC,
    so that merges absorb clusters and move their members); plus queries without notify."""
    rng = np.random.default_rng(seed + 11)
    ops = []
    k = 0
    for at in sorted({0, int(rng.integers(1, n // 2)), int(rng.integers(n // 2, n))}):
        for part in range(2):
            for _ in range(6):
                q = {"type": "quantile", "id": f"q{k}", "column": "v",
                     "phi": float(rng.choice([0.2, 0.45, 0.5, 0.52, 0.55, 0.6, 0.99, 1.0])),
                     "epsilon": float(rng.choice([0.01, 0.02, 0.04, 0.08, 0.1])), "notify": "cluster"}
                if k % 7 == 6:
                    q["notify"] = False
                if rows:
                    q["rows"] = int(rng.choice([1, 7, 40, 150]))
                ops.append({"op": "register", "at": at, "query": q})
                ops.append({"op": "lookup", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
                if k % 5 == 4:
                    ops.append({"op": "terminate", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
                k += 1
            if part == 0:  # a query of this batch ends at once: its operator clusters what it has
                ops.append({"op": "terminate", "at": at, "id": f"q{k - 1}"})
    ops.sort(key=lambda o: o["at"])  # stable: same-position operations keep their order
    return Log(pa.table({"v": pa.array(stream(order, n, seed), pa.int64())}), ops, quantile_epsilon=0.02)


def _lookups_show_the_cluster_value(log: Log, got: list[dict]) -> None:
    specs = {o["query"]["id"]: o["query"] for o in log.ops if o["op"] == "register"}
    of: dict[str, int] = {}
    val: dict[int, float] = {}
    for r in got:
        if r["event"] == "cluster":
            of[r["id"]] = r["cluster"]
        elif r["event"] == "cluster_update":
            val[r["cluster"]] = r["value"]
        elif r["event"] == "answer" and specs[r["id"]].get("notify") == "cluster":
            assert r["value"] == (val.get(of[r["id"]]) if r["id"] in of else None), r


CASES = [("casu", o, False) for o in ORDERS] + [("casu", "semisort", True)]
CASES += [(i, o, False) for i in ("csu", "su", "naive", "oracle") for o in ("random", "semisort")]


@pytest.mark.parametrize(("impl", "order", "rows"), CASES,
                         ids=[f"{i}-{o}-{'window' if r else 'whole'}" for i, o, r in CASES])
def test_cluster_invariant_every_position(impl, order, rows):
    log = cluster_log(order, seed=ORDERS.index(order), rows=rows)
    for batch in (1, 7):
        got = run_log(log, {"quantiles": impl}, batch=batch, cut=60)
        assert not [r for r in got if r["event"] == "rejected" and "not alive" not in r["reason"]], got
        assert not [r for r in got if r["event"] == "update"]
        check_quantile_updates(log, got)
        _lookups_show_the_cluster_value(log, got)
        assert [r for r in got if r["event"] == "cluster_update"]


def test_merges_move_members_and_numbers_are_never_reused():
    # at the operator level, queries issued later over the whole stream (start 0, the paper's
    # dynamic queries) join the running clusters through OQC: merges absorb clusters whose members
    # already show values, and those members move (a cluster event) at the next element
    # (CSU: its summary runs at eps, so a query asking for eps has a point interval, which can lie
    # where two of QC_A's clusters overlap: OQC then merges them; CASU's wider intervals rarely do)
    eps = 0.01
    op = CSU(eps, None)
    rng = np.random.default_rng(4)
    nq = 600
    phi = rng.choice([0.3, 0.45, 0.5, 0.55, 0.7], nq) + rng.uniform(-0.02, 0.02, nq)
    eq = np.where(np.arange(nq) < 100, rng.uniform(eps, 4 * eps, nq), eps)
    x = stream("semisort", 3000, 1).astype(np.float64)
    shows: dict[int, int] = {}
    value: dict[int, float] = {}
    alive = np.zeros(nq, bool)
    moves = 0
    srt: list[float] = []
    for p in range(0, len(x), 250):
        if p < 1500:  # a batch of 100 more queries every 250 elements, over the whole stream
            b = np.arange(p // 250 * 100, p // 250 * 100 + 100)
            if p == 250:  # some at points where two of QC_A's clusters overlap: OQC merges those
                o = op.epochs[0].clus
                mids = [(x1 + y0) / 2 for y0, x1 in zip(o.right, o.left[1:], strict=False) if x1 < y0]
                phi[b[:len(mids)]] = mids
            op.register_many(b, phi[b], eq[b], 0, notify="cluster")
            alive[b] = True
        if p == 2000:
            for q in range(0, nq, 3):
                op.terminate(q)
                alive[q] = False
        chunk = x[p:p + 250]
        op.push(chunk, np.arange(p + 1, p + 1 + len(chunk)))
        (mq, mo, mc), (cq, co, cv) = op.cluster_events()
        for q, c in zip(mq.tolist(), mc.tolist(), strict=True):
            assert shows.get(q) != c
            if q in shows:
                moves += 1
                assert c in value  # a move is to a running cluster (it has a value)
            else:  # a cluster's number is the qid of a query that founded it (registered no later)
                assert c <= q
            shows[q] = c
        j = 0
        for i in range(len(chunk)):
            srt.insert(int(np.searchsorted(srt, chunk[i])), float(chunk[i]))
            while j < len(co) and co[j] == i:
                value[int(cq[j])] = float(cv[j])
                j += 1
            n = p + i + 1
            live = np.flatnonzero(alive)
            cur = np.array([value[shows[q]] for q in live.tolist()])
            a = np.asarray(srt)
            lo = np.searchsorted(a, cur, "left") + 1
            hi = np.searchsorted(a, cur, "right")
            t = np.maximum(1, np.ceil(phi[live] * n - 1e-9))
            err = np.maximum(0, np.maximum(lo - t, t - hi))
            assert (hi >= lo).all() and (err <= np.maximum(eq[live], eps) * n + 1 + 1e-9).all(), n
        got = op.lookup(np.flatnonzero(alive), len(srt))
        assert got.tolist() == [value[shows[q]] for q in np.flatnonzero(alive).tolist()]
    assert moves > 0 and op.stats["memberships"] == nq + moves


BATCH_CASES = [(i, o) for i in ("casu", "csu", "su", "naive") for o in ("semisort", "random")]


@pytest.mark.parametrize(("impl", "order"), BATCH_CASES, ids=[f"{i}-{o}" for i, o in BATCH_CASES])
def test_batch_split_never_changes_cluster_events(impl, order):
    log = cluster_log(order, n=400, seed=3 + ORDERS.index(order))
    want = run_log(log, {"quantiles": impl}, batch=1)
    assert [r for r in want if r["event"] == "cluster_update"]
    for batch, cut in ((3, None), (64, 130), (10**6, None), (10**6, 250)):
        assert run_log(log, {"quantiles": impl}, batch=batch, cut=cut) == want, (batch, cut)


def test_checker_rejects_wrong_cluster_events():
    log = cluster_log("random", seed=2)
    got = run_log(log, {"quantiles": "casu"})
    check_quantile_updates(log, got)
    cu = [i for i, r in enumerate(got) if r["event"] == "cluster_update"]
    ce = [i for i, r in enumerate(got) if r["event"] == "cluster"]
    bad = [dict(r) for r in got]
    bad[cu[0]]["value"] = 10**9  # not an element
    with pytest.raises(AssertionError):
        check_quantile_updates(log, bad)
    bad = [dict(r) for r in got]
    del bad[ce[0]]  # a query without its first cluster event
    with pytest.raises(AssertionError):
        check_quantile_updates(log, bad)
    bad = [dict(r) for r in got]
    bad[ce[0]]["cluster"] = 10**6  # a cluster that has no value
    with pytest.raises(AssertionError):
        check_quantile_updates(log, bad)
    bad = [dict(r) for r in got]
    bad.insert(cu[0] + 1, dict(bad[cu[0]]))  # the same cluster twice at one position
    with pytest.raises(AssertionError):
        check_quantile_updates(log, bad)


def test_sharded_home_shard_serves_cluster_notify_as_one_engine():
    """A shard engine (Engine.partial set; a column's quantile queries live on one home shard that
    receives every element) serves cluster notify queries with the events of one engine."""
    x = pa.table({"v": pa.array(np.random.default_rng(3).normal(size=400))})
    reg = [{"op": "register", "at": 0, "query": {"type": "quantile", "id": f"q{i}", "column": "v", "phi": phi,
                                                 "epsilon": 0.1, "notify": "cluster"}}
           for i, phi in enumerate((0.5, 0.52, 0.9))]
    outs = []
    for partial in (None, Partial()):
        eng = Engine({"quantiles": "casu"}, 0.02, "pairs", columns={"v"})
        eng.partial = partial
        eng.add_operations(reg)
        outs.append(output_rows(eng.process(x)))
    assert outs[0] == outs[1] and {r["event"] for r in outs[0]} >= {"cluster", "cluster_update"}


def test_operator_cluster_mode_walks_no_member_and_answers_in_o1():
    op = CASU(0.01, None)
    rng = np.random.default_rng(1)
    nq = 2000
    phi = rng.uniform(0.01, 1.0, nq)
    eq = rng.uniform(0.01, 0.05, nq)
    op.register_many(np.arange(nq), phi, eq, 0, notify="cluster")
    with pytest.raises(ValueError):
        op.register(nq, 0.5, 0.1, 0, notify=True)
    x = rng.normal(size=5000)
    op.push(x[:10], np.arange(1, 11))
    (mq, mo, mc), (cq, co, cv) = op.cluster_events()
    assert sorted(mq.tolist()) == list(range(nq)) and not mo.any()
    assert len(np.unique(mc)) == op.cluster_count() == len(np.unique(cq[co == 0]))
    shown = dict(zip(cq.tolist(), cv.tolist(), strict=True))
    for p in range(10, 5000, 700):
        op.push(x[p:p + 700], np.arange(p + 1, p + 1 + len(x[p:p + 700])))
        _, (cq, _, cv) = op.cluster_events()
        shown.update(zip(cq.tolist(), cv.tolist(), strict=True))
    member = dict(zip(mq.tolist(), mc.tolist(), strict=True))
    got = op.lookup(np.arange(nq), 5000)
    assert got.tolist() == [shown[member[q]] for q in range(nq)]
    assert op.stats["walks"] == 0 and op.stats["cluster_updates"] == op.stats["changes"]
    restored = CASU.from_state(op.state())
    assert restored.lookup(np.arange(nq), 5000).tolist() == got.tolist()
