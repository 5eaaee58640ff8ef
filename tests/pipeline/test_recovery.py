"""kill -9 at random points of a `vigil run` (driver mode, and sharded mode with 2 shards; two
kills with seq, one without, then a restart), and the outputs are exactly those of an uninterrupted run (= the
in-process engine over the same rows and operations, then finish()); stream files arrive out of
name order (shuffled modification times), with and without seq."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pipeline_helpers import canon, replay, run_outputs

from vigil.pipeline import sinks
from vigil.workloads.trades import trade_queries, trades, write_files

pytestmark = pytest.mark.slow

RUN = "import typer; from vigil.pipeline.cli import run; typer.run(run)"


def start(tmp: Path, mode: str = "driver") -> subprocess.Popen:
    args = [sys.executable, "-c", RUN, "--stream", str(tmp / "s"), "--queries", str(tmp / "q"),
            "--out", str(tmp / "out"), "--checkpoint", str(tmp / "ck"), "--max-files-per-batch", "1",
            "--master", "local[1]", "--algo", "threshold=scan", "--quiet", "--mode", mode, "--shards", "2"]
    env = {**os.environ, "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", "/tmp/vigil-numba")}
    return subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                            start_new_session=True)


def done(tmp: Path) -> int:
    d = tmp / "out" / "_metrics"
    return len(list(d.glob("batch=*.json"))) if d.is_dir() else 0


@pytest.mark.parametrize("mode,seq", [("driver", True), ("sharded", True), ("driver", False)])
def test_kill_minus_9_and_restart_gives_the_uninterrupted_events(tmp_path, mode, seq):
    """Stream files with shuffled modification times (Spark takes them in that order): with seq,
    rows held by the reorder buffer at the kill come back from the snapshot and the outputs equal
    replay on the stream in seq order; without seq, the arrival order (by time) is the stream's,
    and a restart reproduces it."""
    rng = random.Random(7)
    n, files = 6000, 10
    t = trades(n, n_symbols=10, with_rel=False, seed=5)
    if seq:
        t = t.append_column("seq", pa.array(np.arange(1, n + 1), pa.int64()))
    ops = trade_queries(n, 150, n_symbols=10, families=("threshold",), seed=9)
    paths = write_files(t, ops, tmp_path / "s", tmp_path / "q", n_files=files)
    perm = list(range(files))
    rng.shuffle(perm)
    t0 = int(time.time() * 1000)  # ms: Spark compares modification times in milliseconds
    for i, p in enumerate(paths):  # file i is the perm[i]-th to arrive
        os.utime(p, ns=((t0 + 10 * perm[i]) * 1_000_000,) * 2)
    kills = []
    for target in sorted(rng.sample(range(1, files - 1), 2 if seq else 1)):  # (test time: Spark starts)
        p = start(tmp_path, mode)
        deadline = time.time() + 120
        while done(tmp_path) < target and p.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.5))  # land anywhere inside the next batch
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        kills.append(done(tmp_path))
    p = start(tmp_path, mode)
    _, err = p.communicate(timeout=300)
    assert p.returncode == 0, err.decode()[-2000:]
    assert any(0 < k < files for k in kills), kills  # at least one kill landed mid-run
    bounds = np.linspace(0, n, files + 1).astype(int)
    arrival = sorted(range(files), key=perm.__getitem__)
    stream = t if seq else pa.concat_tables([t.slice(bounds[i], bounds[i + 1] - bounds[i]) for i in arrival])
    ref = replay([(ops, stream)], columns=set(t.column_names), algos={"threshold": "scan"})
    got = run_outputs(tmp_path / "out")
    assert canon(got) == canon(ref.to_pylist())
    # counts reconcile over the batches that finally stand; with seq nothing is rejected
    m = sinks.read_metrics(tmp_path / "out")
    assert sum(x["rows_in"] for x in m) == n
    assert sum(x["ops_in"] for x in m) == len(ops)
    assert all(x["rows_in"] == x["rows_applied"] + x["rows_rejected"] for x in m)
    if seq:
        assert sum(x["rows_rejected"] for x in m) == 0 and any(x.get("rows_held", 0) > 0 for x in m)
