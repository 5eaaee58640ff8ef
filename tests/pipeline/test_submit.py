"""The cluster recipe of docs/pipeline.md ("Running on a real cluster"), run as written through
``spark-submit --master local[2]``: three substitutions only (the master, the Python, the shared
folder). The events equal the in-process engine's (= ``vigil replay``), and the run printed its
summary with the wall time since the command started."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline_helpers import canon, replay, run_outputs

from vigil.workloads.trades import trade_queries, trades, write_files

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "pipeline.md"
VENV_BIN = Path(sys.executable).parent


def recipe() -> str:
    text = DOC.read_text()
    section = text[text.index("## Running on a real cluster"):]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


def test_recipe_has_no_comment_after_a_line_continuation():
    for line in recipe().splitlines():
        assert not re.search(r"\\\s*#", line), line  # `\ # ...` ends the command at that line


@pytest.mark.timeout(900)
def test_cluster_recipe_runs_with_spark_submit(tmp_path):
    spark_submit = VENV_BIN / "spark-submit"
    if not spark_submit.exists():
        pytest.skip("spark-submit is not installed next to this Python")
    shared = tmp_path / "shared"
    n = 3000
    stream = trades(n, n_symbols=8, with_rel=False, seed=3)
    ops = trade_queries(n, 40, n_symbols=8, families=("threshold", "window"), seed=4)
    write_files(stream, ops, shared / "stream", shared / "queries", n_files=2)
    script = (recipe()
              .replace("spark://host:7077", "local[2]")
              .replace("/opt/vigil/venv/bin/python", sys.executable)
              .replace("/mnt/shared/vigil", str(shared)))
    assert "local[2]" in script and sys.executable in script and str(shared) in script
    env = {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "NUMBA_CACHE_DIR": os.environ.get("NUMBA_CACHE_DIR", "/tmp/vigil-numba")}
    p = subprocess.run(["bash", "-c", "set -e\n" + script], capture_output=True, text=True, env=env,
                       timeout=840, cwd=tmp_path)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "done" in out and re.search(r"time: [\d.]+ s since the command started", out), out[-3000:]
    assert "Spark start (local[2])" in out, out[-3000:]  # spark-submit's master, not local[*]
    ref = replay([(ops, stream)], columns=set(stream.column_names))
    got = run_outputs(shared / "out")
    assert got, "no events"
    assert canon(got) == canon(ref.to_pylist())  # no quantile queries: sharded = one engine, event for event
    print(out[-5000:])
