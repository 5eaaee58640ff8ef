"""Sharded mode's shard jobs, kept on the executors that hold the shards' live engines.

A shard's engine lives in the Python worker that ran its last task (:mod:`.shard_store`). Spark
places a task without a locality preference on any free executor (its resource offers are
shuffled), so a plain job per batch moves a shard between executors about every other batch, and
each move restores the engine from its durable log (its snapshot plus every input logged since).

:class:`PinnedJobs` runs ``task(shard)`` for every shard as one Spark job over a cached RDD of
one element per shard. Spark's delay scheduling keeps the task of shard i on the executor
holding cached partition i (PROCESS_LOCAL, waiting up to ``spark.locality.wait.process``, set
by :func:`.session.get_session` for sharded runs), the task has no other Python stage, and the
executor's Python worker is reused (``spark.python.worker.reuse``), so the task finds the engine
it left. The first job caches partition i wherever its task ran, which is where shard i's engine
is created. A task that runs elsewhere (executor lost, locality wait expired, another Python
worker of a multi-core executor, a worker Spark stopped after a minute idle) restores the
engine: the cache is a hint, the log is the truth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class PinnedJobs:
    def __init__(self, spark, shards: int) -> None:
        self.spark = spark
        self.S = shards
        self._anchor = None  # the cached RDD: one element per shard

    def run(self, task: Callable[[int], Any]) -> list:
        """``task(shard)`` for every shard in one job; results sorted by their first item (the shard)."""
        from pyspark import StorageLevel

        if self._anchor is None:
            self._anchor = self.spark.sparkContext.parallelize(list(range(self.S)), self.S).persist(
                StorageLevel.MEMORY_ONLY)

        def each(i, it):
            for _ in it:
                pass
            yield task(i)

        return sorted(self._anchor.mapPartitionsWithIndex(each).collect(), key=lambda r: r[0])

    def run_items(self, items: list, fn: Callable[[Any], Any], broadcast: bool = False) -> list:
        """``fn(items[shard])`` for every shard; ``broadcast``: the items travel as one broadcast
        (large items: each executor fetches them once) rather than inside every task."""
        if not broadcast:
            return self.run(lambda i: fn(items[i]))
        share = self.spark.sparkContext.broadcast(items)
        try:
            return self.run(lambda i: fn(share.value[i]))
        finally:
            share.unpersist()
