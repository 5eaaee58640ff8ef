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


def assert_same_events(got, ref, stream: pa.Table, ops: list, quantile_epsilon: float = 0.005) -> None:
    """Sharded mode vs one engine: every event equal, except the values of quantile answers and
    updates, which come from merged per-shard summaries (vigil.quantiles.merge_summaries) and
    differ from one engine's: those must be valid answers, each within its rank bound over its
    window (vigil.checks), at the same positions as the reference's."""
    from vigil.checks import Log, _check_quantiles

    # each id's applied registration: the first one the reference did not reject at its position
    refused = {(r["id"], r["at"]) for r in ref if r["event"] == "rejected" and r["id"]}
    applied: dict[str, dict] = {}
    for o in ops:
        if isinstance(o, dict) and o.get("op") == "register" and isinstance(o.get("query"), dict):
            ident = o["query"].get("id")
            if ident not in applied and (ident, o.get("at", 0)) not in refused:
                applied[ident] = o
    qids = {i for i, o in applied.items() if o["query"].get("type") == "quantile"}

    def split(rows):
        rows = [dict(r) for r in rows]
        is_q = [r["event"] in ("answer", "update") and r["id"] in qids for r in rows]
        quant = [r for r, q in zip(rows, is_q, strict=True) if q]
        return sorted(quant, key=lambda r: (r["at"], r["event"], r["id"])), [r for r, q in zip(rows, is_q, strict=True) if not q]

    gq, grest = split(got)
    rq, rrest = split(ref)
    a, b = canon(grest), canon(rrest)
    assert a == b, (sorted(set(a) - set(b))[:5], sorted(set(b) - set(a))[:5])
    log_ops = list(applied.values()) + [o for o in ops if isinstance(o, dict) and o.get("op") == "terminate"]
    _check_quantiles(Log(stream, log_ops, quantile_epsilon), rq, gq)


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
