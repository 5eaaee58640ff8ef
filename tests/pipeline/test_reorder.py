"""The reorder buffer (:mod:`vigil.pipeline.reorder`) and the order of a batch's files, without
Spark: rows with ``seq`` reach the engine in seq order whatever batch they arrive in; past the
bound a gap is accepted and a row arriving after its position was passed is rejected as late;
the buffer's memory stays under its bound; driver and sharded processors (in-process) equal
``vigil replay`` on the stream in seq order, also across a restart."""

import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_helpers import canon, replay, run_outputs

from vigil.pipeline import sinks
from vigil.pipeline.config import RunConfig
from vigil.pipeline.driver import DriverProcessor
from vigil.pipeline.reorder import DEFAULT_MAX_REORDER_ROWS, ReorderBuffer
from vigil.pipeline.sharded import ShardedProcessor
from vigil.pipeline.sources import split_batch
from vigil.workloads.trades import trade_queries, trades


def _rows(seqs, **cols) -> pa.Table:
    s = pa.array(seqs, pa.int64())
    return pa.table({"seq": s, "v": pa.array([None if x is None else 10 * x for x in seqs], pa.int64()), **cols})


def _seqs(t: pa.Table | None) -> list[int]:
    return [] if t is None else t.column("seq").to_pylist()


# ----------------------------------------------------------------------------- the buffer alone


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 60), st.randoms(use_true_random=False), st.integers(1, 6), st.booleans())
def test_any_arrival_order_is_released_in_seq_order(n, rnd, k, restart):
    """A permutation of 1..n cut into k batches: with a bound >= n nothing is rejected and the
    released rows are 1..n in order, each carrying its own values; a snapshot/restore between
    batches changes nothing."""
    perm = list(range(1, n + 1))
    rnd.shuffle(perm)
    cuts = sorted(rnd.randint(0, n) for _ in range(k - 1))
    parts = [perm[a:b] for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    buf = ReorderBuffer(max(n, 1))
    out: list[int] = []
    vals: list[int] = []
    for p in parts:
        r, rej = buf.push(_rows(p))
        assert rej == []
        out += _seqs(r)
        vals += r.column("v").to_pylist() if r.num_rows else []
        if restart:
            buf = ReorderBuffer.from_state(buf.state())
        assert len(buf) == n - len(out) or len(buf) <= n
    out += _seqs(buf.flush())
    assert out == list(range(1, n + 1))
    assert buf.position == n and len(buf) == 0


def test_contiguous_batches_pass_through_untouched():
    buf = ReorderBuffer(10)
    t = _rows([1, 2, 3])
    r, rej = buf.push(t)
    assert r is t and rej == [] and buf.position == 3


def test_past_the_bound_the_gap_is_accepted_and_a_late_row_is_rejected_naming_seq_and_position():
    buf = ReorderBuffer(3)
    r, _ = buf.push(_rows([1, 2]))
    assert _seqs(r) == [1, 2]
    r, _ = buf.push(_rows([4, 5, 6]))  # 3 is missing: held (3 rows, at the bound)
    assert _seqs(r) == [] and len(buf) == 3
    r, _ = buf.push(_rows([8, 7]))  # 5 held > 3: 4, 5 leave (gap 3 accepted), 6, 7, 8 stay? no: 6..8 run on
    assert _seqs(r) == [4, 5, 6, 7, 8] and len(buf) == 0 and buf.position == 8
    r, rej = buf.push(_rows([3, 9]))
    assert _seqs(r) == [9]
    assert rej == [(3, "late: seq 3 arrived after the stream had passed position 8 (a gap in seq is held "
                       "for at most 3 rows, --max-reorder-rows)")]
    assert buf.counts["late"] == 1 and buf.counts["gap_rows"] == 1


def test_duplicates_and_unusable_seqs_are_rejected_in_arrival_order():
    buf = ReorderBuffer(100)
    buf.push(_rows([1]))
    buf.push(_rows([5]))
    t = pa.table({"seq": pa.array([3, None, 5, 3, 0, 2], pa.int64()), "v": list(range(6))})
    r, rej = buf.push(t)
    assert _seqs(r) == [2, 3]
    assert [a for a, _ in rej] == [None, 5, 3, None]
    assert "null" in rej[0][1] and "duplicate" in rej[1][1] and "duplicate" in rej[2][1]
    assert "positive integer" in rej[3][1]
    assert buf.counts == {"late": 0, "duplicate": 2, "no_seq": 2, "gap_rows": 0, "released": 3}


def test_bound_zero_only_sorts_each_batch():
    buf = ReorderBuffer(0)
    assert _seqs(buf.push(_rows([3, 1, 7]))[0]) == [1, 3, 7]
    r, rej = buf.push(_rows([2, 8]))
    assert _seqs(r) == [8] and rej[0][0] == 2


def test_columns_of_another_type_in_a_later_batch_travel_as_text():
    buf = ReorderBuffer(10)
    buf.push(pa.table({"seq": pa.array([2], pa.int64()), "x": pa.array([1.5])}))
    r, _ = buf.push(pa.table({"seq": pa.array([1], pa.int64()), "x": pa.array(["abc"])}))
    assert _seqs(r) == [1, 2] and r.column("x").to_pylist() == ["abc", "1.5"]


def test_memory_stays_under_the_bound_while_a_gap_never_fills():
    """Every batch leaves a gap that never fills (its first seq never arrives): rows are held up
    to the bound, then the smallest are released with their gaps accepted; held rows, their
    Arrow bytes and the process's Arrow allocation stay flat over 200 batches."""
    bound, per = 5_000, 2_000
    buf = ReorderBuffer(bound)
    rng = np.random.default_rng(1)
    row_bytes = None
    alloc = []
    nxt = 1
    released = 0
    held = []
    for _ in range(200):
        seqs = np.arange(nxt + 1, nxt + per)  # seq nxt never arrives
        rng.shuffle(seqs)
        nxt += per
        m = len(seqs)
        t = pa.table({"seq": pa.array(seqs), "x": pa.array(rng.random(m)), "s": pa.array(["AAPL"] * m)})
        row_bytes = row_bytes or t.nbytes / t.num_rows
        r, rej = buf.push(t)
        released += r.num_rows
        del r, t
        assert rej == []
        assert len(buf) <= bound
        held.append(len(buf))
        assert buf.nbytes <= bound * row_bytes * 1.1 + 4096
        alloc.append(pa.total_allocated_bytes())
    assert released == 200 * (per - 1) - len(buf) and buf.counts["gap_rows"] >= 190
    assert bound - per <= min(held[10:]) and max(held) <= bound  # the buffer does hold, up to its bound
    assert max(alloc[50:]) <= max(alloc[:50]) * 1.2 + 1e6, (max(alloc[:50]), max(alloc[50:]))
    # the late row of the gap is rejected
    _, rej = buf.push(_rows([1]))
    assert rej[0][0] == 1 and "late" in rej[0][1]


def test_default_bound_matches_the_cli():
    from vigil.pipeline import cli

    assert cli.DEFAULT_MAX_REORDER_ROWS == DEFAULT_MAX_REORDER_ROWS == RunConfig("", "", "", "").max_reorder_rows


# ----------------------------------------------------------------------------- file order in a batch


def _collected(files: list[tuple[str, int, list[int]]]) -> pa.Table:
    """Like a Parquet batch's toArrow(): one row per file (path, mtime in ms, bytes of a table
    whose ``v`` holds the given values), in the given (listing) order."""
    import io

    import pyarrow.parquet as pq

    parts = []
    for name, mtime, vals in files:
        buf = io.BytesIO()
        pq.write_table(pa.table({"v": pa.array(vals, pa.int64())}), buf)
        parts.append(pa.table({"_file": [name], "_mtime": pa.array([mtime * 1000], pa.timestamp("us")),
                               "_content": pa.array([buf.getvalue()], pa.binary())}))
    return pa.concat_tables(parts)


def test_files_by_modification_time_then_path_never_listing_order():
    listing = [("file:/s/c", 5, [3]), ("file:/s/a", 7, [1]), ("file:/s/b", 5, [2]), ("file:/s/d", 1, [0])]
    _, rows, files = split_batch(_collected(listing))
    assert files == ["file:/s/d", "file:/s/b", "file:/s/c", "file:/s/a"]
    assert rows.column("v").to_pylist() == [0, 2, 3, 1]
    # equal times: by path, whatever the listing says
    same = [(n, 9, v) for n, _, v in listing]
    for perm in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]):
        _, rows, files = split_batch(_collected([same[i] for i in perm]))
        assert files == ["file:/s/a", "file:/s/b", "file:/s/c", "file:/s/d"]
    # a recorded order (manifest of a batch applied again) wins over the times
    _, rows, files = split_batch(_collected(listing), order=["file:/s/a", "file:/s/d", "file:/s/c", "file:/s/b"])
    assert files == ["file:/s/a", "file:/s/d", "file:/s/c", "file:/s/b"]
    assert rows.column("v").to_pylist() == [1, 0, 3, 2]


def test_json_rows_by_file_time_then_position():
    t = pa.table({"_file": ["file:/b", "file:/b", "file:/a", "file:/a"], "_row": [0, 1, 2, 3],
                  "_mtime": pa.array([1, 1, 2, 2], pa.timestamp("ms")), "x": [10, 11, 20, 21]})
    _, rows, files = split_batch(t, "json")
    assert files == ["file:/b", "file:/a"] and rows.column("x").to_pylist() == [10, 11, 20, 21]


# ----------------------------------------------------------------------------- processors in-process


def _shuffled_batches(t: pa.Table, ops: list, n_files: int, per_batch: int, seed: int) -> list[tuple[list, pa.Table]]:
    """The stream (with seq) cut into n_files files applied in a shuffled order, per_batch files
    per batch; every operation arrives with the first batch."""
    rng = np.random.default_rng(seed)
    bounds = np.linspace(0, t.num_rows, n_files + 1).astype(int)
    files = [t.slice(bounds[i], bounds[i + 1] - bounds[i]) for i in range(n_files)]
    order = rng.permutation(n_files)
    out = []
    for b in range(0, n_files, per_batch):
        rows = pa.concat_tables([files[i] for i in order[b:b + per_batch]])
        out.append((list(ops) if b == 0 else [], rows))
    return out


def _with_seq(t: pa.Table) -> pa.Table:
    return t.append_column("seq", pa.array(np.arange(1, t.num_rows + 1), pa.int64()))


def _cfg(tmp, mode="driver", **kw) -> RunConfig:
    return RunConfig(stream="", queries="", out=str(tmp / "out"), checkpoint=str(tmp / "ck"), mode=mode, quiet=True,
                     **kw)


@pytest.mark.parametrize("mode", ["driver", "sharded"])
def test_processors_equal_replay_whatever_the_file_order_and_survive_a_restart(tmp_path, mode):
    n = 3000
    t = _with_seq(trades(n, n_symbols=8, with_rel=False, seed=3))
    ops = [json.dumps(o) for o in trade_queries(n, 60, n_symbols=8, seed=5, families=("threshold", "window"))]
    batches = _shuffled_batches(t, ops, n_files=12, per_batch=2, seed=1)
    cols = set(t.column_names)

    def proc():
        return DriverProcessor(_cfg(tmp_path), cols) if mode == "driver" else \
            ShardedProcessor(_cfg(tmp_path, "sharded", shards=2), cols, None)

    p = proc()
    for b, (o, rows) in enumerate(batches[:3]):
        p.process_batch(b, o, rows, [], 0.0, 0.0) if mode == "driver" else p.run_batch(b, o, rows)
    held = p.metrics[-1]["rows_held"]
    p = proc()  # a restarted driver: the held rows come back from the snapshot
    for b, (o, rows) in enumerate(batches[3:], start=3):
        p.process_batch(b, o, rows, [], 0.0, 0.0) if mode == "driver" else p.run_batch(b, o, rows)
    p.finish()
    got = run_outputs(tmp_path / "out")
    ref = replay([(ops, t)], columns=cols)
    assert canon(got) == canon(ref.to_pylist())
    m = sinks.read_metrics(tmp_path / "out")
    assert held > 0 and sum(x["rows_held"] > 0 for x in m) >= 2
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
    assert sum(x["rows_in"] for x in m) == n == sum(x["rows_arrived"] for x in m)
    assert sum(x["rows_rejected"] for x in m) == 0 and m[-1]["rows_held"] == 0


@pytest.mark.parametrize("mode", ["driver", "sharded"])
def test_a_row_older_than_the_bound_is_reported_late_and_counted(tmp_path, mode):
    n = 600
    t = _with_seq(trades(n, n_symbols=4, with_rel=False, seed=8))
    ops = [json.dumps({"op": "register", "at": 0, "query": {"id": "all", "type": "threshold",
                                                            "where": {"price": [0, None]}, "threshold": 10**9}})]
    # rows 1..100 arrive last; the bound (200) is exceeded before: their gap is accepted
    batches = [(ops, t.slice(100, 250)), ([], t.slice(350, 250)), ([], t.slice(0, 100))]
    cols = set(t.column_names)
    p = DriverProcessor(_cfg(tmp_path, max_reorder_rows=200), cols) if mode == "driver" else \
        ShardedProcessor(_cfg(tmp_path, "sharded", shards=2, max_reorder_rows=200), cols, None)
    for b, (o, rows) in enumerate(batches):
        p.process_batch(b, o, rows, [], 0.0, 0.0) if mode == "driver" else p.run_batch(b, o, rows)
    p.finish()
    rej = sinks.read_rejected(tmp_path / "out").to_pylist()
    assert sorted(r["at"] for r in rej) == list(range(1, 101))
    assert all(r["id"] is None and r["reason"].startswith(f"late: seq {r['at']} arrived after the stream had "
                                                          "passed position ") for r in rej)
    m = sinks.read_metrics(tmp_path / "out")
    assert [x["rows_late"] for x in m] == [0, 0, 100, 0]
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
    assert sum(x["rows_in"] for x in m) == n and sum(x["rows_applied"] for x in m) == 500
