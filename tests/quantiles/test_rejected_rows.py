"""Rejected rows keep their position (docs/contract.md): a row whose value is null reaches no
operator, but its seq still moves a rows window. A notify quantile query (``"notify": true`` and
``"notify": "cluster"``) over a rows window must therefore show, at the position of a rejected row,
a valid answer for the window there (null when the window is empty), and a lookup there returns
it. Checked on the issue's example stream, exactly, for the default implementation (windows:
the bucket summary) and the oracle, and on streams with 20% null rows against the exact window
contents at every position (:func:`vigil.checks.check_quantile_updates`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, check_quantile_updates, run_log

from .test_notify import ORDERS, stream

EXAMPLE = [5, None, 7, 1, None, None, 3]
# (rows, phi) -> the exact answer after each element 1..7 (the windows are tiny: every answer is exact)
WANT = {(1, 0.5): [5, None, 7, 1, None, None, 3],  # position 2: window {seq 2} holds no element
        (2, 1.0): [5, 5, 7, 7, 1, None, 3]}  # position 5: window {seq 4, 5} = {1}; 6: empty


def shown(got: list[dict], qid: str) -> dict[int, float | None]:
    """The value query ``qid`` shows after each position, from its pushed events (per-query
    ``update`` events or its ``cluster`` / ``cluster_update`` events)."""
    out: dict[int, float | None] = {}
    cur = None
    of = None
    val: dict[int, float | None] = {}
    for r in got:
        if r["event"] == "update" and r["id"] == qid:
            cur = r["value"]
        elif r["event"] == "cluster" and r["id"] == qid:
            of = r["cluster"]
        elif r["event"] == "cluster_update":
            val[r["cluster"]] = r["value"]
        if of is not None:
            cur = val.get(of)
        if r["at"] is not None:
            out[r["at"]] = cur
    return out


@pytest.mark.parametrize("impl", ["casu", "oracle"])
@pytest.mark.parametrize("notify", [True, "cluster", False])
@pytest.mark.parametrize(("rows", "phi"), list(WANT))
@pytest.mark.timeout(300)
def test_example_stream_at_rejected_rows(impl, notify, rows, phi):
    ops = [{"op": "register", "at": 0, "query": {"type": "quantile", "id": "q", "column": "v", "phi": phi,
                                                  "epsilon": 0.01, "rows": rows, "notify": notify}}]
    ops += [{"op": "lookup", "at": a, "id": "q"} for a in range(1, 8)]
    log = Log(pa.table({"v": pa.array(EXAMPLE, pa.float64())}), ops, quantile_epsilon=0.01)
    want = WANT[(rows, phi)]
    for batch in (1, 2, 7):
        got = run_log(log, {"quantiles": impl}, batch=batch)
        assert [r["at"] for r in got if r["event"] == "rejected"] == [2, 5, 6]
        answers = [r["value"] for r in got if r["event"] == "answer"]
        assert answers == want, (batch, answers)
        if notify:
            s = shown(got, "q")
            assert [s.get(n) for n in range(1, 8)] == want, (batch, got)
            check_quantile_updates(log, got)


def null_log(order: str, n: int, seed: int, notify, rows_choices=(1, 2, 3, 7, 40), frac: float = 0.2,
             eps: float = 0.02) -> Log:
    """Notify queries over rows windows (and a few whole-stream and lookup-only ones) on a stream
    whose rows are null with probability ``frac``, some of them in runs (windows that empty)."""
    rng = np.random.default_rng(seed)
    v = stream(order, n, seed).astype(np.float64)
    null = rng.random(n) < frac
    for s in rng.integers(0, n, max(1, n // 60)):  # runs of null rows
        null[s:s + int(rng.integers(2, 9))] = True
    vals = pa.array(v, pa.float64(), mask=null)
    ops = []
    for i in range(12):
        at = int(rng.choice([0, 0, rng.integers(0, n)]))
        q = {"type": "quantile", "id": f"q{i}", "column": "v", "phi": float(rng.choice([0.01, 0.25, 0.5, 0.77, 0.99, 1.0])),
             "epsilon": float(rng.choice([eps, 2 * eps, 0.05, 0.1])), "notify": notify if i % 6 != 5 else False}
        if i % 4 != 3:
            q["rows"] = int(rng.choice(rows_choices))
        ops.append({"op": "register", "at": at, "query": q})
        if i % 5 == 2:
            ops.append({"op": "terminate", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
        for a in rng.integers(at, n + 1, 4).tolist():
            ops.append({"op": "lookup", "at": int(a), "id": q["id"]})
    ops.sort(key=lambda o: o["at"])
    return Log(pa.table({"v": vals}), ops, quantile_epsilon=eps)


def lookups_show_pushed_value(log: Log, got: list[dict]) -> None:
    specs = {o["query"]["id"]: o["query"] for o in log.ops if o["op"] == "register"}
    for qid, q in specs.items():
        if not q.get("notify"):
            continue
        s = shown(got, qid)
        for r in got:
            if r["event"] == "answer" and r["id"] == qid:
                assert r["value"] == s.get(r["at"]), r


NULL_CASES = [(impl, o, nt) for impl in ("casu", "oracle") for o in ("semisort", "duplicates", "random")
              for nt in (True, "cluster")]


@pytest.mark.parametrize(("impl", "order", "notify"), NULL_CASES,
                         ids=[f"{i}-{o}-{'cluster' if nt == 'cluster' else 'query'}" for i, o, nt in NULL_CASES])
@pytest.mark.timeout(600)
def test_null_rows_every_position(impl, order, notify):
    log = null_log(order, 300, ORDERS.index(order), notify)
    for batch, cut in ((1, None), (7, 150), (10**6, None)):
        got = run_log(log, {"quantiles": impl}, batch=batch, cut=cut)
        assert [r for r in got if r["event"] == "rejected" and r["id"] is None]
        check_quantile_updates(log, got)
        lookups_show_pushed_value(log, got)


SPLIT_CASES = [(impl, o, nt) for impl in ("casu", "oracle") for o in ("semisort", "random") for nt in (True, "cluster")]


@pytest.mark.parametrize(("impl", "order", "notify"), SPLIT_CASES,
                         ids=[f"{i}-{o}-{'cluster' if nt == 'cluster' else 'query'}" for i, o, nt in SPLIT_CASES])
@pytest.mark.timeout(600)
def test_null_rows_batch_split_never_changes_events(impl, order, notify):
    # positions without element must not make the buckets (or triggers) depend on the batches
    log = null_log(order, 400, 7 + ORDERS.index(order), notify, rows_choices=(3, 40, 150, 300), eps=0.1)
    want = run_log(log, {"quantiles": impl}, batch=1)
    assert [r for r in want if r["event"] in ("update", "cluster_update")]
    for batch, cut in ((3, None), (64, 130), (10**6, None), (10**6, 250)):
        assert run_log(log, {"quantiles": impl}, batch=batch, cut=cut) == want, (batch, cut)


@pytest.mark.parametrize("notify", [True, "cluster"])
@pytest.mark.timeout(300)
def test_a_long_run_of_rejected_rows_empties_the_window_element_by_element(notify):
    # rows 100 at eps 0.1: buckets of 2 seqs; after element 100 come 120 rejected rows: the
    # window keeps fewer and fewer elements (exactly known: positions without element close no
    # bucket, so no bucket is left partly inside the window with unknown contents), then none
    v = list(range(1, 101)) + [None] * 120
    ops = [{"op": "register", "at": 0, "query": {"type": "quantile", "id": "q", "column": "v", "phi": 0.5,
                                                  "epsilon": 0.1, "rows": 100, "notify": notify}}]
    ops += [{"op": "lookup", "at": a, "id": "q"} for a in range(190, 203)]
    log = Log(pa.table({"v": pa.array(v, pa.float64())}), ops, quantile_epsilon=0.1)
    for batch in (1, 50, 1000):
        got = run_log(log, batch=batch)
        check_quantile_updates(log, got)
        s = shown(got, "q")
        assert [s[n] for n in (199, 200, 201)] == [100, None, None], batch
        lookups_show_pushed_value(log, got)
