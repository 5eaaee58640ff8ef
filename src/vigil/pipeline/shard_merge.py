"""Sharded mode: the shards' outputs of one batch merged into one output (see :mod:`.sharded`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from vigil.engine import REFUSALS as _REFUSED  # engine reasons that refuse a valid register
from vigil.events import OUTPUT_SCHEMA

from .shard_task import ALL, _ev, _unipc


def touch(st: dict, ident: str) -> None:
    """Mark a query whose routing entries changed (persisted by :mod:`.routing_log`)."""
    st.setdefault("_dirty", set()).add(ident)


def merge_outputs(results: list[tuple], driver_events: list[dict], st: dict,
                  shards: int) -> tuple[pa.Table, dict, dict[str, int]]:
    """Shard outputs + driver events -> one batch output (columnar: a batch may carry millions
    of join pairs). Shard 'late' events are dropped (the driver reports lateness globally); a
    row rejected by several shards is kept once; for shared queries, rejections are taken
    from shard 0, substream lookup answers are merged (union of keys) and join pairs / affected
    events found on several shards are kept once (only possible when a relation has several
    placements: its rows then go to several shards). Quantile cluster numbers (a shard engine's
    own numbering) become number * shards + shard: unique in the run, as the contract asks."""
    alive: dict[str, int] = {}
    tabs: list[pa.Table] = []
    for shard, out_b, _written, al, _dt in results:
        for k, v in al.items():
            alive[k] = max(alive.get(k, 0), v) if k.startswith("shared:") else alive.get(k, 0) + v
        t = _unipc(out_b)
        if t.num_rows:
            tabs.append(t.append_column("_shard", pa.array(np.full(t.num_rows, shard, np.int64))))
    per_family: dict[str, int] = {}
    for k, v in alive.items():
        fam = k.removeprefix("shared:")
        per_family[fam] = per_family.get(fam, 0) + v
    extra: list[dict] = list(driver_events)
    rows_rej = ops_rej = 0
    if tabs:
        t = pa.concat_tables(tabs)
        n = t.num_rows
        ev = np.asarray(t.column("event").to_numpy(zero_copy_only=False), object)
        has_id = np.asarray(t.column("id").is_valid().to_numpy(zero_copy_only=False), bool)
        shared_ids = [i for i, h in st["home"].items() if h == ALL]
        shared = (np.asarray(pc.fill_null(pc.is_in(t.column("id"), value_set=pa.array(shared_ids, pa.string())),
                                          False).to_numpy(zero_copy_only=False), bool)
                  if shared_ids else np.zeros(n, bool))
        shard = np.asarray(t.column("_shard").to_numpy(), np.int64)
        clu = (ev == "cluster") | (ev == "cluster_update")
        if clu.any():
            r = np.asarray(pc.fill_null(t.column("r"), 0).to_numpy(zero_copy_only=False), np.int64)
            r = np.where(clu, r * shards + shard, r)
            t = t.set_column(t.column_names.index("r"), "r",
                             pa.array(r, t.schema.field("r").type, mask=~clu & ~np.asarray(
                                 t.column("r").is_valid().to_numpy(zero_copy_only=False), bool)))
        at = np.asarray(pc.fill_null(t.column("at"), -1).to_numpy(zero_copy_only=False), np.int64)
        keep = ev != "late"
        rej = ev == "rejected"
        row_rej = rej & ~has_id  # shards only see operations with an id: these are rows
        if row_rej.any():
            idx = np.flatnonzero(row_rej)
            _, first = np.unique(at[idx], return_index=True)
            keep[idx] = False
            keep[idx[first]] = True
        keep &= ~(rej & has_id & shared & (shard != 0))
        # an operation routed to several shards while its id was shared, whose id was freed since
        # (a refused register), is rejected by each of them: keep the lowest shard's rejection
        multi = np.flatnonzero(keep & rej & has_id & ~shared)
        if len(multi):
            sub = t.take(pa.array(multi)).select(["id", "at", "reason"]).to_pylist()
            low: dict[tuple, int] = {}
            for i, r in zip(multi.tolist(), sub, strict=True):
                k = (r["id"], r["at"], r["reason"])
                low[k] = min(low.get(k, shard[i]), shard[i])
            for i, r in zip(multi.tolist(), sub, strict=True):
                if shard[i] != low[(r["id"], r["at"], r["reason"])]:
                    keep[i] = False
        answers = (ev == "answer") & shared
        if answers.any():  # substream filters: union of the shards' keys, per lookup
            keys: dict[tuple, set] = {}
            nth = {}
            sub = t.filter(pa.array(answers)).select(["id", "at", "keys", "_shard", "asked_at"]).to_pylist()
            for r in sub:
                k = (r["_shard"], r["at"], r["id"])
                nth[k] = nth.get(k, -1) + 1
                keys.setdefault((r["at"], r["id"], nth[k], r["asked_at"]), set()).update(r["keys"] or [])
            extra.extend(_ev("answer", i, a, keys=sorted(ks), asked_at=asked) for (a, i, _, asked), ks in keys.items())
            keep &= ~answers
        rels = [p[0] for p in st.get("place", [])]  # a pair is found twice only if a relation's rows
        twice = len(rels) != len(set(rels))  # go to several shards (two placements of one relation)
        pairs = np.flatnonzero(keep & ((ev == "join") | (ev == "affected"))) if twice else []
        if len(pairs):
            sub = t.take(pa.array(pairs))
            code = np.asarray(pc.dictionary_encode(sub.column("id")).combine_chunks().indices.to_numpy(
                zero_copy_only=False), np.int64)
            key = np.stack([(ev[pairs] == "join").astype(np.int64), code, at[pairs],
                            np.asarray(pc.fill_null(sub.column("r"), 0).to_numpy(zero_copy_only=False), np.int64),
                            np.asarray(pc.fill_null(sub.column("s"), 0).to_numpy(zero_copy_only=False), np.int64)],
                           axis=1)
            _, first = np.unique(key, axis=0, return_index=True)
            keep[pairs] = False
            keep[pairs[first]] = True
        matured = keep & (ev == "matured")
        rep = st.get("rep", {})  # re-arming queries stay alive after a maturity
        for ident in t.column("id").filter(pa.array(matured)).to_pylist():
            if ident not in rep:
                st["alive"].pop(ident, None)
                touch(st, ident)
        op_rej = keep & rej & has_id
        if op_rej.any():  # a register the engines refused (after a valid spec): the id is free again
            for r in t.filter(pa.array(op_rej)).select(["id", "reason"]).to_pylist():
                if (r["reason"] or "").startswith(_REFUSED):
                    for k in ("home", "kind", "fam", "alive", "keysig", "sub"):
                        st[k].pop(r["id"], None)
                    touch(st, r["id"])
        rows_rej = int((keep & row_rej).sum())
        ops_rej = int((keep & rej & has_id).sum())
        kept = t.filter(pa.array(keep)).drop_columns(["_shard"])
    else:
        kept = OUTPUT_SCHEMA.empty_table()
    out = pa.concat_tables([kept.cast(OUTPUT_SCHEMA), pa.Table.from_pylist(extra, schema=OUTPUT_SCHEMA)])
    order = pc.sort_indices(out, sort_keys=[(c, "ascending", "at_start")
                                            for c in ("at", "event", "id", "r", "s", "reason")])
    out = out.take(order)
    c = {"rows_rejected": rows_rej, "ops_rejected": ops_rej,
         "outputs": out.num_rows - int(pc.sum(pc.equal(out.column("event"), "rejected")).as_py() or 0)}
    return out, c, per_family
