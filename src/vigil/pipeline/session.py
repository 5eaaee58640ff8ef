"""A SparkSession with defaults that suit vigil's micro-batch jobs.

vigil's Spark jobs move a few large Arrow batches per trigger, so the defaults favour low
per-batch overhead over parallel shuffles: few shuffle partitions, no UI, no console progress
bar, Arrow transfers on, WARN logging. File scans are configured so that **each input file is
read whole by exactly one task** (``maxPartitionBytes`` and ``openCostInBytes`` huge): the row
order inside a JSON/CSV file is then the order of ``monotonically_increasing_id()`` inside its
partition, which is what makes the arrival order of elements deterministic (Parquet and
operation files travel whole anyway, see :mod:`.sources`).

Starting a session costs 4-12 s on this machine; tests share one session per module.

JIT. In driver mode with Parquet the JVM moves whole files (``binaryFile``) and plans one small
job per micro-batch: no per-row work. Its C2 compiler then spends more CPU than it saves: in a
fresh JVM ~1-2 s of compiler CPU over the first dozens of micro-batches (Spark's planner and
analyzer warming up), taken from the engine's cores. ``get_session(whole_files=True)`` starts the
JVM with ``-XX:TieredStopAtLevel=1`` (C1 only). Measured 2026-11-26 (2 cores, load 4-7, the
pipeline bench's threshold point, 3 x 1M rows, runs 2-3 of a session): JVM CPU 1.50-2.15 ->
0.79-1.03 s per run; 6 x 1M rows, Spark alone, runs 2-4: 1.76-2.67 -> 1.24-1.34 s. Not for
JSON/CSV (or Kafka), where the JVM parses every row: C1 code doubles that (500k JSON rows:
0.84-1.32 -> 2.09-2.32 s JVM CPU), so the default JIT stays there. Only a JVM this call starts
is affected; ``conf`` may set ``spark.driver.extraJavaOptions`` itself.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_HUGE = str(1 << 40)

WHOLE_FILE_CONF: dict[str, str] = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1"}

DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.files.maxPartitionBytes": _HUGE,
    "spark.sql.files.openCostInBytes": _HUGE,
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.maxRecordsPerBatch": "1000000",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.python.worker.reuse": "true",
    "spark.driver.memory": "4g",
    "spark.driver.maxResultSize": "0",
    "spark.sql.session.timeZone": "UTC",
    "spark.log.level": "WARN",
}


def get_session(
    master: str | None = None, app_name: str = "vigil", conf: dict[str, Any] | None = None, shards: int = 0,
    whole_files: bool = False,
):
    """Get or create the SparkSession. ``master`` defaults to ``local[*]`` unless the job was
    launched by ``spark-submit`` (which sets ``spark.master`` and starts the Python driver with
    ``PYSPARK_GATEWAY_PORT``). ``whole_files``: the session moves
    whole files only (driver mode with Parquet): C1-only JIT, see the module doc."""
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    # Python workers (sharded mode) must run this interpreter, where vigil is installed
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(app_name)
    if master:
        b = b.master(master)
    elif not ({"SPARK_SUBMIT_OPTS", "PYSPARK_GATEWAY_PORT"} & set(os.environ) or os.environ.get("SPARK_ENV_LOADED")):
        b = b.master("local[*]")
    settings = dict(DEFAULTS)
    if whole_files:
        settings.update(WHOLE_FILE_CONF)
    if shards:
        settings["spark.sql.shuffle.partitions"] = str(max(1, shards))
        # a shard task waits this long for the executor holding its live engine before it runs
        # elsewhere and restores the engine from its log (pinned.PinnedJobs)
        settings["spark.locality.wait.process"] = "30s"
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    for k, v in settings.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    # getOrCreate() may return an existing session: make the SQL settings hold anyway
    for k, v in settings.items():
        if k.startswith("spark.sql."):
            spark.conf.set(k, v)
    return spark
