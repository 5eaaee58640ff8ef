"""A shard reports its alive queries per family from its groups (O(groups)), the same counts as
decoding every alive query's group key."""

import json

import numpy as np
import pyarrow as pa

from vigil.engine import Engine
from vigil.pipeline.shard_task import _alive_split
from vigil.workloads.trades import trade_queries, trades


def _per_query(eng) -> dict[str, int]:
    per: dict[str, int] = {}
    for key in eng.where.values():
        fam, params = json.loads(key)
        if fam == "substream" or (fam == "joins" and params.get("kind") != "band"):
            fam = "shared:" + fam
        per[fam] = per.get(fam, 0) + 1
    return per


def test_alive_split_counts_the_alive_queries_per_family():
    n = 4_000
    table = trades(n, seed=5)
    ops = trade_queries(n, 120, seed=6)
    eng = Engine({}, 0.005, "pairs", columns=set(table.column_names))
    eng.add_operations([json.dumps(o) for o in ops], list(range(len(ops))))
    for s in range(0, n, 1_000):
        eng.process(table.slice(s, 1_000))
        got = _alive_split(eng)
        assert got == _per_query(eng)
        assert sum(got.values()) == len(eng.where) > 0
    assert np.all(np.array(list(got.values())) > 0) and isinstance(table, pa.Table)
