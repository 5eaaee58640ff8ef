"""The substream filters' ring pool (CI and the naive filter, :mod:`vigil.windows.substream_naive`):
it grows or compacts correctly for any push size and any number of keys first seen in one push
(a compaction that skipped those keys lost them, or retried for ever), and positions are exact
int64 (seqs above 2^53 were rounded as float64). Every answer is compared with the oracle."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from vigil.checks import Log, run_log
from vigil.cli import app
from vigil.events import read_outputs
from vigil.specs import SubstreamFilterSpec
from vigil.windows.ci import CI
from vigil.windows.oracle import SubstreamOracle
from vigil.windows.substream_naive import SubstreamNaive

ALGOS = ["ci", "naive"]
OPS = {"ci": CI, "naive": SubstreamNaive}


def spec(i, agg, T, lo, hi):
    q = {"type": "substream_filter", "id": f"q{i}", "agg": agg, "key": "k", "time": T, "range": [lo, hi]}
    if agg == "sum":
        q["column"] = "v"
    return SubstreamFilterSpec(**q)


def _trades(n: int) -> pa.Table:
    """n trades of two symbols, 4 in 5 of them AAPL (AAPL: 560 of 700, 1,200 of 1,500)."""
    i = np.arange(n)
    return pa.table({"ts": i.astype(float), "symbol": np.where(i % 5 == 4, "MSFT", "AAPL"),
                     "shares": (i % 7 + 1).astype(float)})


def _ops(n: int) -> list[dict]:
    """COUNT over the whole stream > 500 (the issue's filter), a few more ranges, lookups at
    n/2 and n."""
    qs = [("count_gt_500", "count", [500, None]), ("count_gt_250", "count", [250, None]),
          ("count_lt_400", "count", [None, 400]), ("sum_between", "sum", [1000, 4000])]
    ops = []
    for qid, agg, rng in qs:
        q = {"type": "substream_filter", "id": qid, "agg": agg, "key": "symbol", "time": 1e9, "range": rng}
        if agg == "sum":
            q["column"] = "shares"
        ops.append({"op": "register", "at": 0, "query": q})
    for at in (n // 2, n):
        ops.extend({"op": "lookup", "at": at, "id": qid} for qid, _, _ in qs)
    return ops


@pytest.mark.timeout(300)
@pytest.mark.parametrize("n", [700, 1500])
@pytest.mark.parametrize("algo", ALGOS)
def test_replay_cli_one_push_of_two_new_keys_matches_the_oracle(tmp_path, algo, n):
    """``vigil replay`` with the defaults (one batch: every key is new in the push that fills the
    pool): was [] for COUNT > 500 at 700 rows, never returned at 1,500."""
    pq.write_table(_trades(n), tmp_path / "s.parquet")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(o) + "\n" for o in _ops(n)))
    out = {}
    for name in ("oracle", algo):
        path = tmp_path / f"{name}.jsonl"
        r = CliRunner().invoke(app, ["replay", "--stream", str(tmp_path / "s.parquet"), "--queries",
                                     str(tmp_path / "q.jsonl"), "--out", str(path), "--quiet",
                                     "--algo", f"substream={name}"])
        assert r.exit_code == 0, (r.output, r.exception)
        out[name] = read_outputs(path)
    assert out[algo] == out["oracle"]
    final = {e["id"]: e for e in out["oracle"] if e["event"] == "answer" and e["at"] == n}
    assert final["count_gt_500"]["value"] == ["AAPL"], final


@pytest.mark.timeout(300)
@pytest.mark.parametrize("n", [700, 1500])
@pytest.mark.parametrize("algo", ALGOS)
def test_engine_one_push_and_small_batches_match_the_oracle(algo, n):
    log = Log(_trades(n), _ops(n))
    want = run_log(log, {"substream": "oracle"}, batch=10**6)
    for batch, cut in ((10**6, None), (10**6, n // 2), (97, None)):
        assert run_log(log, {"substream": algo}, batch=batch, cut=cut) == want, (batch, cut)


def _compare(op, oracle, qids, n, t_now):
    got = [sorted(r.tolist()) for r in op.lookup(qids, n, t_now)]
    want = [r.tolist() for r in oracle.lookup(qids, n, t_now)]
    assert got == want, (type(op).__name__, got, want)
    return got


@pytest.mark.timeout(300)
@pytest.mark.parametrize("size", [400, 700, 5000])
@pytest.mark.parametrize("algo", ALGOS)
def test_steady_state_then_one_push_of_a_new_key(algo, size):
    """17 keys, then one push of ``size`` elements of key 17 (was [] at 400 and hung at 700)."""
    sps = [spec(0, "count", 1e9, 300, None), spec(1, "count", 1e9, 0, None), spec(2, "count", 1e9, None, 5),
           spec(3, "count", 50.0, 10, 60)]
    op, oracle = OPS[algo]("count"), SubstreamOracle("count")
    for i, sp in enumerate(sps):
        op.register(i, sp, 0)
        oracle.register(i, sp, 0)
    qids = np.arange(len(sps))
    keys = np.repeat(np.arange(17), 3)
    batches = [keys, np.full(size, 17)]
    seq = 0
    for b in batches:
        n = len(b)
        args = (np.ones(n), np.arange(seq, seq + n, dtype=float), b.astype(np.int64), np.arange(seq + 1, seq + n + 1))
        op.push(*args)
        oracle.push(*args)
        seq += n
        got = _compare(op, oracle, qids, seq, float(seq - 1))
    assert 17 in got[0] and 17 in got[1]


@pytest.mark.timeout(600)
@pytest.mark.parametrize("agg", ["count", "sum"])
@pytest.mark.parametrize("algo", ALGOS)
def test_thousands_of_new_keys_in_one_push(algo, agg):
    """2,501 keys (the key arrays grow to 5,000), then one push in which 2,499 keys are new and
    fit the key arrays (Zipf sizes: some rings grow to thousands of elements while others are
    created, the pool fills several times), then a push of 2,000 new keys that grow the key
    arrays; lookups of lower, upper and two-sided ranges, windows of the whole stream and of a
    part."""
    rng = np.random.default_rng(5)
    op, oracle = OPS[algo](agg), SubstreamOracle(agg)
    m = 10 if agg == "count" else 100
    sps = [spec(0, agg, 1e9, 40 * m, None), spec(1, agg, 1e9, 0, None), spec(2, agg, 1e9, None, 3 * m),
           spec(3, agg, 2000.0, 5 * m, 50 * m), spec(4, agg, 500.0, 2 * m, None)]
    for i, sp in enumerate(sps):
        op.register(i, sp, 0)
        oracle.register(i, sp, 0)
    qids = np.arange(len(sps))
    first = np.arange(2500)
    grow = np.array([2500])
    big = np.where(rng.random(60_000) < 0.1, rng.integers(0, 2501, 60_000),
                   np.minimum(rng.zipf(1.3, 60_000) - 1, 2498) + 2501)
    last = rng.permutation(np.arange(5000, 7000))
    seq = 0
    for keys in (first, grow, big, last):
        n = len(keys)
        vals = np.ones(n) if agg == "count" else rng.integers(1, 20, n).astype(float)
        args = (vals, seq + np.arange(n) * 0.05, keys.astype(np.int64), np.arange(seq + 1, seq + n + 1))
        op.push(*args)
        oracle.push(*args)
        seq += n
        _compare(op, oracle, qids, seq, float(args[1][-1]))
    assert len(np.unique(big[big > 2500])) > 1000
    back = type(op).from_state(op.state())
    _compare(back, oracle, qids, seq, float(args[1][-1]))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("algo", ALGOS)
def test_seqs_above_2_to_the_53_are_exact(algo):
    """seq = 2^60 + i (int64, as the contract allows): positions compare exactly (registration at
    2^60 + 5 counts 2^60 + 6..), in the rings, the level heaps and the query table."""
    base = 1 << 60
    n = 40
    keys = np.where(np.arange(n) % 4 == 0, 1, 0).astype(np.int64)
    seqs = base + np.arange(1, n + 1, dtype=np.int64)
    times = np.arange(n, dtype=float)
    sps = [spec(0, "count", 1e9, 3, None), spec(1, "count", 1e9, None, 12), spec(2, "count", 1e9, 20, 40)]
    op, oracle = OPS[algo]("count"), SubstreamOracle("count")
    for i, sp in enumerate(sps):
        start = base if i == 0 else base + 5
        op.register(i, sp, start)
        oracle.register(i, sp, start)
    qids = np.arange(len(sps))
    for a in range(0, n, 7):
        sl = slice(a, a + 7)
        op.push(np.ones(len(keys[sl])), times[sl], keys[sl], seqs[sl])
        oracle.push(np.ones(len(keys[sl])), times[sl], keys[sl], seqs[sl])
        last = int(seqs[sl][-1])
        _compare(op, oracle, qids, last, float(times[sl][-1]))
    got = _compare(op, oracle, qids, last, float(times[-1]))
    assert got[0] == [0, 1] and got[2] == [0]
    back = type(op).from_state(op.state())
    assert back.state()["seqs"].dtype == np.int64 and int(back.state()["seqs"].max()) == base + n
    _compare(back, oracle, qids, last, float(times[-1]))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("algo", ALGOS)
def test_engine_with_a_seq_column_above_2_to_the_53(algo):
    base = 1 << 60
    n = 30
    stream = pa.table({"seq": pa.array(base + np.arange(1, n + 1), pa.int64()), "ts": np.arange(n, dtype=float),
                       "symbol": ["a" if i % 3 else "b" for i in range(n)]})
    q = {"type": "substream_filter", "id": "q", "agg": "count", "key": "symbol", "time": 1e9, "range": [4, None]}
    ops = [{"op": "register", "at": base + 2, "query": q}, {"op": "lookup", "at": base + 10, "id": "q"},
           {"op": "lookup", "at": base + n, "id": "q"}]
    log = Log(stream, ops)
    want = run_log(log, {"substream": "oracle"}, batch=10**6)
    assert [r["value"] for r in want if r["event"] == "answer"] == [["a"], ["a", "b"]]
    assert run_log(log, {"substream": algo}, batch=10**6) == want
    assert run_log(log, {"substream": algo}, batch=4, cut=11) == want
