"""Shared helpers of the pipeline tests: reference outputs from the in-process engine."""

from __future__ import annotations

import pyarrow as pa

from vigil.engine import Engine


def canon(rows) -> list[tuple]:
    """Events as comparable tuples, in a canonical order (the engine's order inside a batch is
    kept by driver mode, but sharded mode merges shards)."""
    out = []
    for r in rows:
        keys = tuple(r["keys"]) if r.get("keys") is not None else None
        v = r.get("value")
        out.append((r["at"] if r["at"] is not None else -1, r["event"], r["id"] or "", r.get("r") or 0,
                    r.get("s") or 0, v if v is not None else float("-inf"), keys or (), r.get("reason") or ""))
    return sorted(out)


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
