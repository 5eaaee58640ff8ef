"""A SparkSession with defaults that suit vigil's micro-batch jobs.

vigil's Spark jobs move a few large Arrow batches per trigger, so the defaults favour low
per-batch overhead over parallel shuffles: few shuffle partitions, no UI, no console progress
bar, Arrow transfers on, WARN logging. File scans are configured so that **each input file is
read whole by exactly one task** (``maxPartitionBytes`` and ``openCostInBytes`` huge): the row
order inside a JSON/CSV file is then the order of ``monotonically_increasing_id()`` inside its
partition, which is what makes the arrival order of elements deterministic (Parquet and
operation files travel whole anyway, see :mod:`.sources`).

Starting a session costs 4-12 s on this machine; tests share one session per module.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_HUGE = str(1 << 40)

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
    master: str | None = None, app_name: str = "vigil", conf: dict[str, Any] | None = None, shards: int = 0
):
    """Get or create the SparkSession. ``master`` defaults to ``local[*]`` unless the job was
    launched by ``spark-submit`` (which sets ``spark.master``)."""
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    # Python workers (sharded mode) must run this interpreter, where vigil is installed
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    b = SparkSession.builder.appName(app_name)
    if master:
        b = b.master(master)
    elif "SPARK_SUBMIT_OPTS" not in os.environ and not os.environ.get("SPARK_ENV_LOADED"):
        b = b.master("local[*]")
    settings = dict(DEFAULTS)
    if shards:
        settings["spark.sql.shuffle.partitions"] = str(max(1, shards))
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
