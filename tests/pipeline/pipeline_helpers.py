"""Shared helpers of the pipeline tests: reference outputs from the in-process engine."""

from __future__ import annotations

import pyarrow as pa

from vigil.engine import Engine


def _cluster_names(rows) -> dict:
    """Quantile cluster numbers -> canonical names: a number is an engine's own (sharded mode
    renumbers each shard's to keep them unique), so two runs name a cluster by its history: the
    first (position, query) that joins it, else its first update's position and its values."""
    joins: dict[int, tuple] = {}
    ups: dict[int, list] = {}
    for r in rows:
        if r["event"] == "cluster":
            joins[r["r"]] = min(joins.get(r["r"], (r["at"], r["id"])), (r["at"], r["id"]))
        elif r["event"] == "cluster_update":
            ups.setdefault(r["r"], []).append((r["at"], r["value"]))
    keys = {c: (0, joins[c]) if c in joins else (1, tuple(sorted(ups[c]))) for c in {*joins, *ups}}
    return {c: i for i, c in enumerate(sorted(keys, key=lambda c: keys[c]))}


def canon(rows) -> list[tuple]:
    """Events as comparable tuples, in a canonical order (the engine's order inside a batch is
    kept by driver mode, but sharded mode merges shards); quantile cluster numbers by
    :func:`_cluster_names`."""
    rows = list(rows)
    names = _cluster_names(rows)
    out = []
    for r in rows:
        if r["event"] in ("cluster", "cluster_update"):
            r = {**r, "r": names[r["r"]]}
        keys = tuple(r["keys"]) if r.get("keys") is not None else None
        v = r.get("value")
        out.append((r["at"] if r["at"] is not None else -1, r["event"], r["id"] or "", r.get("r") or 0,
                    r.get("s") or 0, v if v is not None else float("-inf"), keys or (), r.get("reason") or ""))
    return sorted(out)


def assert_same_events(got, ref) -> None:
    """Sharded mode (or driver mode through Spark) vs one engine: every event equal, values
    included. Quantile queries of a column live on one shard that sees every element, so their
    answers, updates and alerts are those of one engine, not merely within the bound."""
    a, b = canon(got), canon(ref)
    assert a == b, (sorted(set(a) - set(b))[:5], sorted(set(b) - set(a))[:5], len(a), len(b))


def replay(batches: list[tuple[list, pa.Table]], columns=None, finish=True, **kw) -> pa.Table:
    """Engine in-process over (ops, rows) batches, then finish()."""
    eng = Engine(columns=columns, **kw)
    outs = []
    for ops, rows in batches:
        if ops:
            eng.add_operations(ops)
        outs.append(eng.process(rows))
    if finish:
        outs.append(eng.finish())
    return pa.concat_tables(outs)


def run_outputs(out_dir) -> list[dict]:
    from vigil.pipeline import sinks

    return [{k: v for k, v in r.items() if k != "batch"} for r in sinks.read_all(out_dir).to_pylist()]
