"""kill -9 at random points of a `vigil run` (driver mode, and sharded mode with 2 shards), restart,
and the outputs are exactly those of an uninterrupted run (= the in-process engine over the same
rows and operations, then finish())."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

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


@pytest.mark.parametrize("mode", ["driver", "sharded"])
def test_kill_minus_9_and_restart_gives_the_uninterrupted_events(tmp_path, mode):
    rng = random.Random(7)
    n, files = 6000, 10
    t = trades(n, n_symbols=10, with_rel=False, seed=5)
    ops = trade_queries(n, 150, n_symbols=10, families=("threshold",), seed=9)
    write_files(t, ops, tmp_path / "s", tmp_path / "q", n_files=files)
    kills = []
    for target in sorted(rng.sample(range(1, files - 1), 3)):
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
    ref = replay([(ops, t)], columns=set(t.column_names), algos={"threshold": "scan"})
    got = run_outputs(tmp_path / "out")
    assert canon(got) == canon(ref.to_pylist())
    # counts reconcile over the batches that finally stand
    m = sinks.read_metrics(tmp_path / "out")
    assert sum(x["rows_in"] for x in m) == n
    assert sum(x["ops_in"] for x in m) == len(ops)
