"""The engine-path column of the family benchmarks: a preset's workload (its elements, its queries,
its lookups, registrations and terminations at their positions) run through ``vigil replay``'s path
(:func:`vigil.bench.engine.run_engine`: :class:`vigil.engine.Engine` ``process`` over batches of
rows, ``finish``, the outputs written as replay writes them, JSONL), beside the *operator path*:
the same workload through the same implementation the engine picks (the family's default in
:mod:`vigil.registry`), called directly, as the paper's experiments call it.

Both are CPU seconds (``time.process_time``) of the whole workload, from the registrations to the
last answer: the engine's figure includes parsing the operation lines, validating and routing
rows, cutting segments at operations, building and writing the outputs; the operator's figure
only the operator calls. ``ratio`` = engine / operator. The answers are compared: counts always,
values where cheap (window aggregates: every value; substream filters: the number of keys
reported; threshold: the number of maturities and each query's maturity position).
"""

from __future__ import annotations

import gc
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ENGINE_BATCH = 10_000  # rows per Engine.process call (the target: batches of >= 1,000 rows)


def run(table: pa.Table, ops: list[dict], batch: int = ENGINE_BATCH) -> tuple[float, pa.Table]:
    """One timed run of replay's path (outputs written to a temporary JSONL file): (CPU s, outputs)."""
    from .engine import run_engine

    with tempfile.TemporaryDirectory(prefix="vigil-engine-path-") as d:
        gc.collect()
        return run_engine(table, ops, Path(d) / "out.jsonl", max(1, int(batch)))


def events(outputs: pa.Table, event: str) -> pa.Table:
    return outputs.filter(pc.equal(outputs.column("event"), event))


def summary(engine_s: float, operator_s: float, n_eng: int, n_op: int, ok: bool, **kw: Any) -> dict[str, Any]:
    return {"engine_cpu_s": engine_s, "operator_cpu_s": operator_s,
            "ratio": engine_s / operator_s if operator_s > 0 else None,
            "engine_outputs": n_eng, "operator_outputs": n_op, "verified": bool(ok and n_eng == n_op), **kw}


# ----------------------------------------------------------------------------- windows


def windows_workload(vals: np.ndarray, windows: np.ndarray, qids: np.ndarray, warm: int,
                     blocks: list[tuple[int, int]], agg: str = "sum") -> tuple[pa.Table, list[dict], list]:
    """fig9/fig11 as an event log: ``warm`` elements, then per block ``u`` elements and ``lk``
    lookups at the position reached. Returns the stream, the operations and the query specs."""
    specs = []
    for q, (nl, nr) in enumerate(windows.tolist()):
        d = {"type": "window_aggregate", "id": f"q{q}", "agg": agg, "column": "v", "rows": [int(nl), int(nr)]}
        if agg == "quantile":
            d["phi"] = 0.5
        specs.append(d)
    ops: list[dict] = [{"op": "register", "at": 0, "query": d} for d in specs]
    pos, qi = warm, 0
    for u, lk in blocks:
        pos += u
        ops.extend({"op": "lookup", "at": pos, "id": f"q{q}"} for q in qids[qi:qi + lk].tolist())
        qi += lk
    table = pa.table({"v": np.asarray(vals[:pos], np.float64)})
    return table, ops, specs


def windows_operator(vals: np.ndarray, specs: list[dict], warm: int, plan: list) -> tuple[float, np.ndarray]:
    """The same workload through the engine's windows implementation, called directly."""
    from .. import registry
    from ..specs import parse_query

    cls = registry.resolve("windows", registry.DEFAULTS["windows"])
    seqs = np.arange(1, len(vals) + 1, dtype=np.int64)
    answers = []
    gc.collect()
    t0 = time.process_time()
    op = cls(specs[0]["agg"], False)
    for q, d in enumerate(specs):
        op.register(q, parse_query(d), 0)
    if warm:
        op.push(vals[:warm], seqs[:warm], None)
    prev = warm
    for pos, _u, qs in plan:
        if pos > prev:
            op.push(vals[prev:pos], seqs[prev:pos], None)
            prev = pos
        if len(qs):
            answers.append(op.lookup(qs, pos, np.nan))
    secs = time.process_time() - t0
    return secs, (np.concatenate(answers) if answers else np.empty(0))


def windows_compare(vals, windows, qids, warm, blocks, agg="sum", batch=ENGINE_BATCH,
                    warm_up: bool = True) -> dict[str, Any]:
    if warm_up:  # both paths once on a short prefix, untimed: kernels compiled / loaded, caches filled
        k = int(np.searchsorted(np.cumsum([u + lk for u, lk in blocks]), 20_000)) + 1
        windows_compare(vals, windows, qids, warm, [(u, min(lk, 1000)) for u, lk in blocks[:k]], agg, batch, False)
    table, ops, specs = windows_workload(vals, windows, qids, warm, blocks, agg)
    plan = []
    pos, qi = warm, 0
    for u, lk in blocks:
        pos += u
        plan.append((pos, u, qids[qi:qi + lk]))
        qi += lk
    op_s, op_ans = windows_operator(np.asarray(vals, np.float64), specs, warm, plan)
    eng_s, out = run(table, ops, batch)
    ans = events(out, "answer")
    ev = np.asarray(ans.column("value").to_pylist(), dtype=np.float64) if ans.num_rows else np.empty(0)
    ok = ev.shape == op_ans.shape and bool(np.allclose(ev, op_ans, rtol=1e-9, atol=1e-6, equal_nan=True))
    return summary(eng_s, op_s, ans.num_rows, int(op_ans.shape[0]), ok, rows=table.num_rows,
                   lookups=int(sum(lk for _, lk in blocks)), engine_batch=batch,
                   operator_impl=_default("windows"))


def _default(family: str) -> str:
    from .. import registry

    return registry.DEFAULTS[family]


# ----------------------------------------------------------------------------- substream


def substream_compare(times: np.ndarray, keys: np.ndarray, T: np.ndarray, v: np.ndarray, warm: int,
                      picks: np.ndarray, block: int, batch: int = ENGINE_BATCH) -> dict[str, Any]:
    """fig12's trace (trades, COUNT filters, after the warm-up ``block`` elements then ``block``
    lookups at that position) through the engine and through the engine's substream
    implementation called directly."""
    from .. import registry
    from ..specs import SubstreamFilterSpec

    n = len(keys)
    qdefs = [{"type": "substream_filter", "id": f"q{i}", "agg": "count", "key": "symbol", "time": float(t),
              "range": [float(x), None]} for i, (t, x) in enumerate(zip(T.tolist(), v.tolist(), strict=True))]
    ops: list[dict] = [{"op": "register", "at": 0, "query": d} for d in qdefs]
    for a in range(warm, n, block):
        b = min(n, a + block)
        ops.extend({"op": "lookup", "at": b, "id": f"q{q}"} for q in picks[a - warm: b - warm].tolist())
    table = pa.table({"ts": np.asarray(times, np.float64), "symbol": np.asarray(keys)})
    # operator path
    cls = registry.resolve("substream", registry.DEFAULTS["substream"])
    seqs = np.arange(1, n + 1, dtype=np.int64)
    ones = np.ones(n)
    reported = 0
    gc.collect()
    t0 = time.process_time()
    op = cls("count")
    for i, d in enumerate(qdefs):
        op.register(i, SubstreamFilterSpec(**d), 0)
    for a in range(0, warm, 200_000):
        b = min(warm, a + 200_000)
        op.push(ones[a:b], times[a:b], keys[a:b], seqs[a:b])
    n_ans = 0
    for a in range(warm, n, block):
        b = min(n, a + block)
        op.push(ones[a:b], times[a:b], keys[a:b], seqs[a:b])
        res = op.lookup(picks[a - warm: b - warm], b, float(times[b - 1]))
        n_ans += len(res)
        reported += sum(len(r) for r in res)
    op_s = time.process_time() - t0
    eng_s, out = run(table, ops, batch)
    ans = events(out, "answer")
    eng_reported = int(pc.sum(pc.list_value_length(ans.column("keys"))).as_py() or 0) if ans.num_rows else 0
    return summary(eng_s, op_s, ans.num_rows, n_ans, eng_reported == reported, rows=n, lookups=n - warm,
                   engine_batch=batch, keys_reported=eng_reported, operator_keys_reported=reported,
                   operator_impl=_default("substream"))


# ----------------------------------------------------------------------------- threshold


def threshold_workload(trace) -> tuple[pa.Table, list[dict]]:
    """A threshold trace as an event log: the pushed elements (columns x0.., w), every
    registration and termination at the position it happens (the elements pushed before it)."""
    pts, ws, ops = [], [], []
    pos = 0
    ids: dict[int, str] = {}
    used: set[str] = set()  # the values of ``ids`` (distinct), kept beside it: a scan of
    gen = 0  # ids.values() per registration made building fig3's log quadratic (~160 s at scale 0.1)
    for s in trace.steps:
        kind = s[0]
        if kind == "push":
            pts.append(s[1])
            ws.append(s[2])
            pos += s[1].shape[0]
        elif kind == "register":
            qids, lo, hi, tau = s[1], s[2], s[3], s[4]
            for j, q in enumerate(qids.tolist()):
                gen += 1
                name = f"q{q}" if f"q{q}" not in used else f"q{q}_{gen}"
                if q in ids:
                    used.discard(ids[q])
                ids[q] = name
                used.add(name)
                where = {f"x{k}": [float(lo[j, k]), float(hi[j, k])] for k in range(lo.shape[1])}
                ops.append({"op": "register", "at": pos, "query": {
                    "type": "threshold", "id": ids[q], "where": where, "weight": "w", "threshold": int(tau[j])}})
        else:
            ops.extend({"op": "terminate", "at": pos, "id": ids[q]} for q in s[1].tolist())
    p = np.concatenate(pts) if pts else np.empty((0, trace.params.dim))
    cols = {f"x{k}": p[:, k] for k in range(p.shape[1])}
    cols["w"] = np.concatenate(ws) if ws else np.empty(0, np.int64)
    return pa.table(cols), ops


def threshold_compare(trace, batch: int, run_operator) -> dict[str, Any]:
    """The trace through the engine (``batch`` rows per process call) beside ``run_operator()``
    -> (CPU s of the operator path on the same trace, its outputs verified); the engine's matured
    events must equal the trace's maturities."""
    table, ops = threshold_workload(trace)
    op_s, op_ok = run_operator()
    eng_s, out = run(table, ops, batch)
    mat = events(out, "matured")
    expected = []  # (query, position) of every maturity of the trace
    pos = 0
    for s, o in zip(trace.steps, trace.outputs, strict=True):
        if s[0] == "push":
            expected.extend(zip(o[0].tolist(), (pos + 1 + np.asarray(o[1])).tolist(), strict=True))
            pos += s[1].shape[0]
    got = sorted(zip([int(i.split("_")[0][1:]) for i in mat.column("id").to_pylist()],
                     mat.column("at").to_pylist(), strict=True))
    same = got == sorted(expected)
    return summary(eng_s, op_s, mat.num_rows, len(expected), op_ok and same, rows=table.num_rows,
                   operations=len(ops), engine_batch=batch, operator_impl=_default("threshold"),
                   rejected=int(pc.sum(pc.equal(out.column("event"), "rejected")).as_py() or 0))


# ----------------------------------------------------------------------------- the presets' columns


def result(point: dict, s: dict[str, Any], operations: int):
    """The engine column of one point as a bench Result: seconds = the engine path's CPU seconds,
    ``extra`` holds the operator path's beside it and the ratio (also in the table's note)."""
    from .common import Result

    note = (f"engine/operator {s['ratio']:.2f}x (operator {s['operator_cpu_s']:.3g} s)"
            + ("" if s["verified"] else ", ANSWERS DIFFER"))
    return Result("engine", s["engine_cpu_s"], operations,
                  extra={"point": point, **s, "cpu_seconds": s["engine_cpu_s"], "note": note,
                         "rate_per_s": operations / s["engine_cpu_s"] if s["engine_cpu_s"] > 0 else None})


#: fig9's engine column: the update fraction 0.9 (one lookup per 10 events), in blocks of 10
#: events (9 elements then a lookup: a lookup every 9 rows) and of 10,000 (9,000 elements then
#: 1,000 lookups at one position); the stream reaches the engine in 10,000-row batches
FIG9_ENGINE = {"update_fraction": 0.9, "blocks": (10, 10_000)}
#: fig11's engine column: SUM windows at two widths, at most 100,000 lookups (each one operation
#: line), all at position N_max as in the figure
FIG11_ENGINE = {"W": (1_000, 100_000), "lookups": 100_000}


def windows_column(preset: str, scale: float, seed: int, console=None) -> list:
    from ..workloads.windows import fig9_windows, lookup_qids, mixed_blocks, spread_windows, stream

    out = []
    if preset == "fig9":
        n_events = max(10_000, int(2_000_000 * scale))
        vals, _, _ = stream(n_events + 2000, seed)
        windows = fig9_windows(1000)
        qids = lookup_qids(n_events, 1000, seed)
        frac = FIG9_ENGINE["update_fraction"]
        for blk in FIG9_ENGINE["blocks"]:
            s = windows_compare(vals, windows, qids, 1000, mixed_blocks(n_events, frac, blk))
            out.append(result({"update_fraction": frac, "batch": blk}, s, n_events))
    elif preset == "fig11":
        for W in FIG11_ENGINE["W"]:
            n_max = max(100_000, 2 * int(W))  # windows.fig11_nmax
            n_look = FIG11_ENGINE["lookups"]
            vals, _, _ = stream(n_max + 10, seed)
            qids = lookup_qids(n_look, 1000, seed)
            s = windows_compare(vals, spread_windows(1000, W, n_max, seed), qids, 0, [(n_max, n_look)])
            out.append(result({"W": W, "batch": n_look}, s, n_look))
    for r in out:
        if console is not None:
            console.log(f"{preset} engine {r.extra['point']}: {r.extra['note']}")
    return out


def engine_table(doc: dict[str, Any]):
    """The engine rows of a result document: operator path, engine path, ratio, answers."""
    from rich.table import Table

    t = Table(title=f"{doc['family']} / {doc['preset']}: engine path (Engine.process, outputs written) vs "
                    f"operator path (the same implementation called directly), CPU s", title_justify="left")
    for c in ("point", "rows", "operator", "operator s", "engine s", "engine/operator", "outputs", "verified"):
        t.add_column(c, justify="left" if c in ("point", "operator") else "right")
    for r in doc["results"]:
        e = r["extra"]
        if r["algo"] != "engine":
            continue
        t.add_row(", ".join(f"{k}={v:g}" for k, v in e["point"].items()), f"{e['rows']:,}", e["operator_impl"],
                  f"{e['operator_cpu_s']:.3g}", f"{e['engine_cpu_s']:.3g}", f"{e['ratio']:.2f}x",
                  f"{e['engine_outputs']:,} / {e['operator_outputs']:,}", "yes" if e["verified"] else "NO")
    return t


#: fig12's engine column: batch 1,000 (1,000 trades then 1,000 lookups at that position), over the
#: warm-up and the first 30,000 timed trades (each lookup answers ~200 keys: the outputs are large)
FIG12_ENGINE = {"batch": 1000, "timed_trades": 30_000}


def substream_column(tr, console=None) -> list:
    blk, m = FIG12_ENGINE["batch"], FIG12_ENGINE["timed_trades"]
    n = min(len(tr.keys), tr.warm + m)
    w = min(tr.warm, 20_000)  # warm-up run (untimed): kernels compiled / loaded
    substream_compare(tr.times[:w + 2 * blk], tr.keys[:w + 2 * blk], tr.T, tr.v, w, tr.picks, blk)
    s = substream_compare(tr.times[:n], tr.keys[:n], tr.T, tr.v, tr.warm, tr.picks, blk)
    s["lookups"] = n - tr.warm
    r = result({"batch": blk}, s, 2 * (n - tr.warm))
    r.extra.update(prefix_timed_trades=n - tr.warm,
                   selectivity=s["keys_reported"] / max(1, s["lookups"]) / tr.n_symbols)
    if console is not None:
        console.log(f"fig12 engine {r.extra['point']}: {r.extra['note']}")
    return [r]


def threshold_column(trace, batch: int, dim: int, point: dict, operator, console=None):
    """One threshold point's engine column: the trace through the engine beside ``operator()`` ->
    (CPU s, outputs verified): the engine's threshold implementation replaying the same trace."""
    rng = np.random.default_rng(0)  # engine warm-up (untimed): a small log through the same path
    cols = {f"x{k}": rng.integers(0, 100, 3000).astype(np.float64) for k in range(dim)}
    cols["w"] = np.ones(3000, np.int64)
    run(pa.table(cols), [{"op": "register", "at": 0, "query": {
        "type": "threshold", "id": f"w{i}", "where": {f"x{k}": [i, i + 30] for k in range(dim)},
        "weight": "w", "threshold": 20}} for i in range(50)], batch)
    s = threshold_compare(trace, batch, operator)
    r = result(point, s, trace.stats()["operations"])
    if console is not None:
        console.print(f"engine {point or ''}: {r.extra['note']}")
    return r


# ----------------------------------------------------------------------------- joins


#: the joins presets' engine column (fig7, fig7c, fig8: select joins on Table I): S and R stored,
#: the queries registered, the first arriving R tuple, then the others in batches of ``batch``
#: rows (the operator path pushes the same batches); at most ``arrivals`` tuples, fewer when the
#: operator path's result pairs reach ``max_pairs`` first (every pair is a `join` line of the
#: engine's JSONL)
JOINS_ENGINE = {"batch": 1000, "arrivals": 10_000, "max_pairs": 1_000_000}


def joins_workload(w: dict, n_arr: int) -> tuple[pa.Table, list[dict]]:
    """A Table I select-join workload (:func:`vigil.workloads.joins.select_workload`) as an event
    log: the stored S tuples (``rel`` = S, ``b``, ``c``), the stored R tuples (``rel`` = R, ``b``,
    ``a``), then ``n_arr`` arriving R tuples; every query a ``select_join`` (R.b = S.b, rangeA on
    ``a``, rangeC on ``c``) registered after the stored tuples (at 2n). Seqs are the positions."""
    n = len(w["s_key"])
    rows = w["rows"]
    rel = np.array(["S"] * n + ["R"] * (n + n_arr), dtype=object)
    b = np.concatenate([w["s_key"], w["r_key"], w["in_key"][:n_arr]]).astype(np.int64)
    zeros = np.zeros(n + n_arr)
    a = np.concatenate([np.zeros(n), w["r_x"], w["in_x"][:n_arr]]).astype(np.float64)
    c = np.concatenate([w["s_x"], zeros]).astype(np.float64)
    table = pa.table({"rel": pa.array(rel, pa.string()), "b": b, "a": a, "c": c})
    ops = [{"op": "register", "at": 2 * n, "query": {
        "type": "select_join", "id": f"q{i}", "left": "R", "right": "S", "left_on": "b", "right_on": "b",
        "left_range": {"a": [r[0], r[1]]}, "right_range": {"c": [r[2], r[3]]}}} for i, r in enumerate(rows.tolist())]
    return table, ops


def joins_operator(w: dict, ops: list[dict], n_arr: int, batch: int, max_pairs: int | None):
    """The workload through the engine's joins implementation (the registry default), called
    directly as the bench does, output mode ``pairs`` as the engine's. Setup: the stored sides
    inserted, the queries registered from their specs, the first arriving tuple pushed (its probe
    builds the query indexes); arrivals: the others in batches of ``batch``. Returns (CPU s of the
    setup, CPU s of the arrivals, arriving tuples pushed, (q, r, s) triples sorted). With
    ``max_pairs`` it stops after the batch where the pairs reach it."""
    from ..specs import parse_query

    n = len(w["s_key"])
    x = w["in_x"].reshape(-1, 1)
    gc.collect()
    t0 = time.process_time()
    op = registry_impl("joins")("select", "pairs")
    op.insert("right", np.arange(1, n + 1), w["s_key"], w["s_x"].reshape(-1, 1), None)
    op.insert("left", np.arange(n + 1, 2 * n + 1), w["r_key"], w["r_x"].reshape(-1, 1), None)
    for i, o in enumerate(ops):
        op.register(i, parse_query(o["query"]))
    out = [op.insert("left", np.array([2 * n + 1]), w["in_key"][:1], x[:1], None)]
    t1 = time.process_time()
    pairs, done = len(out[0][0]), 1
    for lo in range(1, n_arr, batch):
        hi = min(n_arr, lo + batch)
        out.append(op.insert("left", np.arange(2 * n + 1 + lo, 2 * n + 1 + hi), w["in_key"][lo:hi], x[lo:hi], None))
        pairs += len(out[-1][0])
        done = hi
        if max_pairs is not None and pairs >= max_pairs:
            break
    t2 = time.process_time()
    q, r, s = (np.concatenate([o[k] for o in out]) for k in range(3))
    o = np.lexsort((s, r, q))
    return t1 - t0, t2 - t1, done, (q[o], r[o], s[o])


def joins_engine(table: pa.Table, ops: list[dict], n: int, batch: int) -> tuple[float, float, pa.Table]:
    """``vigil replay``'s path (as :func:`vigil.bench.engine.run_engine`) over a
    :func:`joins_workload` log, timed in two parts as :func:`joins_operator`: setup (the stored
    rows in ``batch``-row slices, the registrations, the first arriving row), then the other
    arriving rows in ``batch``-row slices, ``finish`` and the outputs written (JSONL). Returns
    (CPU s of the setup, CPU s of the arrivals, outputs)."""
    import json

    from ..engine import Engine
    from ..events import write_outputs

    lines = [json.dumps(o) for o in ops]
    with tempfile.TemporaryDirectory(prefix="vigil-engine-path-") as d:
        gc.collect()
        t0 = time.process_time()
        eng = Engine({}, 0.005, "pairs", columns=set(table.column_names))
        eng.add_operations(lines, list(range(1, len(lines) + 1)))
        parts = [eng.process(table.slice(s, min(batch, 2 * n - s))) for s in range(0, 2 * n, batch)]
        parts.append(eng.process(table.slice(2 * n, 1)))
        t1 = time.process_time()
        parts += [eng.process(table.slice(s, batch)) for s in range(2 * n + 1, table.num_rows, batch)]
        parts.append(eng.finish())
        outputs = pa.concat_tables(parts)
        write_outputs(outputs, Path(d) / "out.jsonl")
        t2 = time.process_time()
    return t1 - t0, t2 - t1, outputs


def registry_impl(family: str):
    from .. import registry

    return registry.resolve(family, registry.DEFAULTS[family])


def joins_compare(w: dict, batch: int | None = None, arrivals: int | None = None,
                  max_pairs: int | None = None, warm_up: bool = True) -> dict[str, Any]:
    """One point of a select-join preset through both paths, each timed as setup (the stored
    tuples, the registrations, the first arriving tuple, whose probe builds the query indexes) and
    arrivals (the other arriving tuples, in batches; the engine's figure includes writing every
    output). ``arrivals_ratio`` = engine / operator over the arrivals, ``ratio`` over the whole.
    The answers: every (query, r, s) of the engine's `join` events equals the operator's."""
    cfg = JOINS_ENGINE
    batch = int(batch or cfg["batch"])
    arrivals = min(int(arrivals or cfg["arrivals"]), len(w["in_key"]))
    max_pairs = int(max_pairs or cfg["max_pairs"])
    n = len(w["s_key"])
    if warm_up:  # both paths once on two batches, untimed: kernels compiled / loaded
        joins_compare(w, batch, min(arrivals, 2 * batch + 1), None, False)
    _, ops = joins_workload(w, 0)
    op_setup, op_arr, done, (oq, orr, os_) = joins_operator(w, ops, arrivals, batch, max_pairs)
    table, ops = joins_workload(w, done)
    eng_setup, eng_arr, out = joins_engine(table, ops, n, batch)
    js = events(out, "join")
    eq = np.array([int(v[1:]) for v in js.column("id").to_pylist()], np.int64)
    er = np.asarray(js.column("r").to_numpy(zero_copy_only=False), np.int64)
    es = np.asarray(js.column("s").to_numpy(zero_copy_only=False), np.int64)
    o = np.lexsort((es, er, eq))
    same = len(eq) == len(oq) and bool((eq[o] == oq).all() and (er[o] == orr).all() and (es[o] == os_).all())
    return summary(eng_setup + eng_arr, op_setup + op_arr, js.num_rows, len(oq), same, rows=table.num_rows,
                   stored=n, queries=len(ops), arrivals=done - 1, engine_batch=batch, engine_setup_s=eng_setup,
                   engine_arrivals_s=eng_arr, operator_arrivals_s=op_arr, operator_setup_s=op_setup,
                   arrivals_ratio=eng_arr / op_arr if op_arr > 0 else None,
                   pairs_per_tuple=len(oq) / max(done, 1), operator_impl=_default("joins"),
                   rejected=int(pc.sum(pc.equal(out.column("event"), "rejected")).as_py() or 0))


def joins_column(w: dict, point: dict, console=None):
    """The engine column of one select-join point (``w``: its workload) as a bench Result:
    seconds = the engine path's CPU seconds over the arriving batches (rate: arriving tuples per
    CPU second, as the strategies' rows); ``extra`` holds the whole runs, the operator path's
    figures and both ratios."""
    from .common import Result

    s = joins_compare(w)
    secs = s["engine_arrivals_s"]
    note = (f"arrivals engine/operator {s['arrivals_ratio']:.2f}x ({secs:.3g} / {s['operator_arrivals_s']:.3g} s), "
            f"whole {s['ratio']:.2f}x" + ("" if s["verified"] else ", ANSWERS DIFFER"))
    r = Result("engine", secs, s["arrivals"], extra={
        "point": {**point, "batch": s["engine_batch"]}, **s, "cpu_seconds": secs, "note": note,
        "rate_per_s": s["arrivals"] / secs if secs > 0 else None,
        "operator_rate_per_s": s["arrivals"] / s["operator_arrivals_s"] if s["operator_arrivals_s"] > 0 else None})
    if console is not None:
        console.log(f"engine {r.extra['point']}: {note}")
    return r


def joins_engine_table(doc: dict[str, Any]):
    """The engine rows of a joins result document: arriving tuples per CPU second of the engine
    path and of the operator path over the same batches, their ratio, the whole runs' ratio."""
    from rich.table import Table

    t = Table(title=f"joins / {doc['preset']}: engine path (Engine.process, outputs written) vs operator path "
                    f"(the same implementation called directly), arriving tuples per CPU s", title_justify="left")
    for c in ("point", "queries", "stored", "arrivals", "operator", "operator tuples/s", "engine tuples/s",
              "engine/operator", "whole runs", "pairs/tuple", "verified"):
        t.add_column(c, justify="left" if c in ("point", "operator") else "right")
    for r in doc["results"]:
        e = r["extra"]
        if r["algo"] != "engine":
            continue
        t.add_row(", ".join(f"{k}={v:g}" for k, v in e["point"].items()), f"{e['queries']:,}", f"{e['stored']:,}",
                  f"{e['arrivals']:,}", e["operator_impl"], f"{e['operator_rate_per_s']:,.0f}",
                  f"{e['rate_per_s']:,.0f}", f"{e['arrivals_ratio']:.2f}x",
                  f"{e['engine_cpu_s']:.3g} / {e['operator_cpu_s']:.3g} s", f"{e['pairs_per_tuple']:,.1f}",
                  "yes" if e["verified"] else "NO")
    return t
