"""The cheap paths of driver mode: whole Parquet files decoded on the driver in path order,
JSON/CSV rows ordered by (path, position), and snapshots that leave the per-query bookkeeping to
the append-only query log."""

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_helpers import canon, replay, run_outputs

from vigil.engine import Engine
from vigil.events import ERROR_COLUMN
from vigil.pipeline.config import CheckpointError, RunConfig
from vigil.pipeline.driver import SNAP_MAGIC2, DriverProcessor, run
from vigil.pipeline.sources import split_batch
from vigil.workloads.trades import trade_queries, trades, write_files


def _parquet(t: pa.Table, row_group_size: int | None = None) -> bytes:
    buf = io.BytesIO()
    pq.write_table(t, buf, row_group_size=row_group_size)
    return buf.getvalue()


def collected(files: list[tuple[str, int]], arrival: list[int], ops: list[tuple[str, list[str]]],
              ops_at: int) -> pa.Table:
    """A table shaped like driver mode's toArrow() of a Parquet batch: one row per stream file
    (``_file``, ``_content`` = its bytes; value = file index * 1000 + position) in ``arrival``
    order, the operation files (``_op`` = their bytes) inserted before file ``ops_at``."""
    parts = []
    for i in arrival:
        name, n = files[i]
        data = _parquet(pa.table({"v": pa.array(np.arange(n, dtype=np.int64) + 1000 * i)}), row_group_size=7)
        parts.append(pa.table({"_file": [name], "_content": pa.array([data], pa.binary()),
                               "_op": pa.nulls(1, pa.binary())}))
    op_tbl = pa.table({  # whole operation files (a blank line and no final newline are fine)
        "_file": pa.array([f for f, _ in ops], pa.string()),
        "_content": pa.nulls(len(ops), pa.binary()),
        "_op": pa.array([("\n".join(lines[:1] + [""] + lines[1:])).encode() for _, lines in ops], pa.binary()),
    })
    parts.insert(min(ops_at, len(parts)), op_tbl)
    return pa.concat_tables(parts)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=6), st.randoms(use_true_random=False),
       st.integers(0, 6), st.integers(0, 3))
def test_whole_files_are_decoded_in_path_order(sizes, rnd, ops_at, n_op_files):
    files = [(f"file:/s/part-{i:03d}.parquet", n) for i, n in enumerate(sizes)]
    arrival = list(range(len(files)))
    rnd.shuffle(arrival)
    ops = [(f"file:/q/ops-{j}.jsonl", [f'{{"op":"lookup","at":{j},"id":"q{j}-{k}"}}' for k in range(3)])
           for j in range(n_op_files)]
    tbl = collected(files, arrival, list(reversed(ops)), ops_at)
    got_ops, rows, names = split_batch(tbl)
    want = np.concatenate([np.arange(n) + 1000 * i for i, (_, n) in enumerate(files)])
    assert rows.column_names == ["v"]
    assert rows.column("v").to_numpy().tolist() == want.tolist()
    assert got_ops == [line for _, lines in ops for line in lines]
    assert names == sorted([f for f, _ in files] + [f for f, _ in ops])


def test_a_file_that_is_not_parquet_becomes_one_rejected_row_naming_it():
    good = _parquet(pa.table({"v": [1, 2]}))
    tbl = pa.table({"_file": ["file:/s/a.parquet", "file:/s/bad.parquet"],
                    "_content": pa.array([good, b"not parquet"], pa.binary())})
    _, rows, _ = split_batch(tbl)
    assert rows.column("v").to_pylist() == [1, 2, None]
    assert rows.column(ERROR_COLUMN).to_pylist()[:2] == [None, None]
    assert "bad.parquet is not a readable Parquet file" in rows.column(ERROR_COLUMN)[2].as_py()
    eng = Engine(columns={"v"})
    eng.process(rows)
    assert eng.counts["rows_rejected"] == 1 and eng.counts["rows_applied"] == 2


def test_a_file_whose_columns_clash_becomes_one_rejected_row_naming_it():
    a, b = _parquet(pa.table({"v": [1.5]})), _parquet(pa.table({"v": ["text"]}))
    tbl = pa.table({"_file": ["file:/s/a.parquet", "file:/s/b.parquet"], "_content": pa.array([a, b], pa.binary())})
    _, rows, names = split_batch(tbl)
    assert rows.column("v").to_pylist() == [1.5, None] and names == ["file:/s/a.parquet", "file:/s/b.parquet"]
    assert "b.parquet: columns clash" in rows.column(ERROR_COLUMN)[1].as_py()


def test_full_paths_order_split_files_by_position():
    # JSON/CSV rows: the path on every row, _row = position in the file (file A split in two)
    tbl = pa.table({"v": pa.array([13, 14, 20, 21, 10, 11, 12], pa.int64()),
                    "_row": pa.array([3, 4, 0, 1, 0, 1, 2], pa.int64()),
                    "_file": pa.array(["A", "A", "B", "B", "A", "A", "A"], pa.string()),
                    "_op": pa.nulls(7, pa.string())})
    _, rows, names = split_batch(tbl)
    assert rows.column("v").to_pylist() == [10, 11, 12, 13, 14, 20, 21] and names == ["A", "B"]


# ----------------------------------------------------------------------------- query log


def _cfg(tmp_path):
    return RunConfig(stream=str(tmp_path / "s"), queries=str(tmp_path / "q"), out=str(tmp_path / "out"),
                     checkpoint=str(tmp_path / "ck"), quiet=True)


@pytest.mark.slow  # ~23 s (3,000 rows, every family, two processors): make test-all
def test_snapshots_keep_queries_in_the_log_and_a_crashed_attempt_is_cut_off(tmp_path):
    n = 3000
    t = trades(n, n_symbols=6, with_rel=False, seed=2)
    ops = [json.dumps(o) for o in trade_queries(n, 80, n_symbols=6, seed=4, joins=False)]
    cols = set(t.column_names)
    batches = [(ops[:30], t.slice(0, 1000)), (ops[30:60], t.slice(1000, 1000)), (ops[60:], t.slice(2000))]
    proc = DriverProcessor(_cfg(tmp_path), cols)
    eng = proc.engine_before(0)
    outs = []
    for k in range(2):
        eng.add_operations(batches[k][0])
        outs.append(eng.process(batches[k][1]))
        snap = proc.snapshot(eng)
        assert snap.startswith(SNAP_MAGIC2)
        proc.store.save(k, snap)
    n_after_1 = len(eng.ids)
    size_after_1 = proc.qlog.size()
    # an attempt of batch 2 registers more and appends them to the log, then the process dies
    eng.add_operations(batches[2][0])
    eng.process(batches[2][1])
    proc.snapshot(eng)  # log appended; the snapshot itself never reaches the store
    assert proc.qlog.size() > size_after_1
    # restart: a new processor restores snapshot 1, the log is cut back, batch 2 runs again
    proc2 = DriverProcessor(_cfg(tmp_path), cols)
    eng2 = proc2.engine_before(2)
    assert proc2.qlog.size() == size_after_1 and len(eng2.ids) == n_after_1
    assert eng2.by_id == {i: q for q, i in enumerate(eng2.ids)}
    eng2.add_operations(batches[2][0])
    outs.append(eng2.process(batches[2][1]))
    proc2.store.save(2, proc2.snapshot(eng2))
    outs.append(proc2.restore(2).finish())
    ref = replay([(o, r) for o, r in batches], columns=cols)
    assert canon(pa.concat_tables(outs).to_pylist()) == canon(ref.to_pylist())
    # a log shorter than a snapshot says is refused, not silently misread
    proc2.qlog.path.write_bytes(b"")
    with pytest.raises(CheckpointError):
        DriverProcessor(_cfg(tmp_path), cols).restore(2)


def test_whole_engine_snapshots_of_older_checkpoints_still_restore(tmp_path):
    t = trades(500, n_symbols=4, with_rel=False, seed=1)
    ops = [json.dumps(o) for o in trade_queries(500, 20, n_symbols=4, seed=2, joins=False)]
    eng = Engine(columns=set(t.column_names))
    eng.add_operations(ops)
    eng.process(t)
    proc = DriverProcessor(_cfg(tmp_path), set(t.column_names))
    proc.store.save(0, eng.snapshot())
    back = proc.restore(0)
    # a snapshot keeps the specs of alive queries (a dead query's spec is never read again: null)
    assert back.ids == eng.ids and list(map(json.loads, back.specs)) == [
        json.loads(sp) if q in eng.where else None for q, sp in enumerate(eng.specs)]
    proc.store.save(1, proc.snapshot(back))  # the next snapshot logs every query
    assert proc.restore(1).ids == eng.ids


# ----------------------------------------------------------------------------- through Spark


@pytest.mark.slow
def test_files_with_many_row_groups_and_several_tasks_stay_exact(spark, tmp_path):
    n = 4000
    t = trades(n, n_symbols=6, with_rel=False, seed=8)
    ops = trade_queries(n, 40, n_symbols=6, families=("threshold",), seed=6)
    write_files(t, [], tmp_path / "s", tmp_path / "q", n_files=2, op_files=1)
    for p in sorted((tmp_path / "s").glob("*.parquet")):  # many row groups
        pq.write_table(pq.read_table(p), p, row_group_size=200)
    (tmp_path / "q" / "ops.jsonl").write_text("".join(json.dumps(o) + "\n" for o in ops[:8]))  # one small file
    ref = canon(replay([(ops[:8], t)], columns=set(t.column_names)).to_pylist())
    old = {k: spark.conf.get(k) for k in ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")}
    spark.conf.set("spark.sql.files.maxPartitionBytes", "8192")  # would split files, were they rows
    spark.conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        run(_cfg(tmp_path), spark)
    finally:
        for k, v in old.items():
            spark.conf.set(k, v)
    assert canon(run_outputs(tmp_path / "out")) == ref


@pytest.mark.slow
def test_throughput_preset_runs_both_sides_to_the_same_outputs(spark, tmp_path):
    from vigil.bench.pipeline import run_preset

    doc = run_preset("throughput", scale=0.01, out=tmp_path / "thr.json", workdir=tmp_path / "work",
                     workloads=("threshold",), batches=(100_000,))
    (r,) = doc["results"]
    ex = r["extra"]
    assert ex["point"] == {"workload": "threshold", "batch": 1000} and r["operations"] == 3000
    assert ex["outputs_equal"] and ex["outputs"] > 0
    assert ex["overhead_ratio"] == pytest.approx(ex["spark_seconds"] / ex["engine_seconds"])
    assert 0 < ex["collect_seconds"] < ex["spark_seconds"]
    assert (tmp_path / "thr.png").exists()
