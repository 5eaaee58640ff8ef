"""vigil for PySpark users: ``vigil.spark.watch(stream_df, queries=..., checkpoint=...)`` watches the
streaming DataFrame you already have (Kafka, Delta, ``rate``, files) and gives the events back as a
streaming DataFrame for any sink::

    w = vigil.spark.watch(spark.readStream.format("rate").load().withColumn("seq", F.col("value") + 1),
                          queries=[{"op": "register", "at": 0, "query": {...}}],
                          checkpoint="/ck/alerts", mode="sharded", shards=4)
    w.events().writeStream.format("memory").queryName("alerts").start()

See :mod:`vigil.pipeline.watch` for the order rules and the exactly-once protocol; ``vigil run``
starts the same streaming query over its file sources.
"""

from vigil.pipeline.watch import Watch, watch

__all__ = ["Watch", "watch"]
