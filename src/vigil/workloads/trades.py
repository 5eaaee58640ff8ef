"""A realistic trade stream and a mix of standing queries of every family (the demo's workload).

Stream columns: ``ts`` (seconds, nondecreasing), ``symbol`` (Zipf popularity), ``price`` (a
geometric random walk per symbol, 2 decimals), ``shares`` (log-normal lot sizes, positive
integers), ``nasdaq`` (an index level, a random walk), ``rel`` (``"buy"`` / ``"sell"``: the side,
used as the relation name by join queries).

Queries (:func:`trade_queries`): threshold alerts ("shares traded in AAPL at 101-105 while the
index is below 4600 reach 50,000"), key-less threshold alerts over price x index rectangles,
sliding-window aggregates (rows and time), substream filters (symbols whose volume over the last
T seconds exceeds v), select/window/band joins between buys and sells, and quantiles; registered
and terminated over time, with lookups at regular positions.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

BASE_TS = 1_700_000_000.0


def symbols(k: int) -> list[str]:
    base = ["AAPL", "MSFT", "NVDA", "AMZN", "GOOG", "META", "TSLA", "AVGO", "COST", "NFLX", "AMD", "PEP",
            "ADBE", "CSCO", "TMUS", "INTC", "QCOM", "TXN", "AMGN", "HON"]
    out = base[:k]
    i = 0
    while len(out) < k:
        out.append(f"S{i:04d}")
        i += 1
    return out


def trades(n: int, n_symbols: int = 50, seed: int = 0, start: int = 0, zipf_a: float = 1.1,
           rate: float = 2000.0, with_rel: bool = True) -> pa.Table:
    """``n`` trades; ``start`` offsets the clock so that consecutive calls continue the stream.
    ``with_rel=False`` drops the ``rel`` column (the engine keeps every row that has a relation,
    for join queries registered later, so streams without joins should not carry one)."""
    rng = np.random.default_rng(seed)
    syms = symbols(n_symbols)
    ranks = np.arange(1, n_symbols + 1)
    p = ranks ** (-zipf_a)
    p /= p.sum()
    sym = rng.choice(n_symbols, size=n, p=p)
    base_price = 20 + 480 * np.random.default_rng(12345).random(n_symbols)
    steps = rng.normal(0, 0.0015, n)
    price = np.empty(n)
    for s in range(n_symbols):  # random walk per symbol (vectorized per symbol)
        idx = np.flatnonzero(sym == s)
        price[idx] = base_price[s] * np.exp(np.cumsum(steps[idx]))
    price = np.round(price, 2)
    shares = np.maximum(1, np.round(rng.lognormal(4.0, 1.2, n))).astype(np.int64)
    nasdaq = np.round(4500 + np.cumsum(rng.normal(0, 0.4, n)), 2)
    ts = BASE_TS + start / rate + np.cumsum(rng.exponential(1.0 / rate, n))
    rel = np.where(rng.random(n) < 0.5, "buy", "sell")
    t = pa.table({
        "ts": pa.array(np.round(ts, 4)),
        "symbol": pa.array(np.asarray(syms, dtype=object)[sym].tolist(), pa.string()),
        "price": pa.array(price),
        "shares": pa.array(shares),
        "nasdaq": pa.array(nasdaq),
        "rel": pa.array(rel.tolist(), pa.string()),
    })
    return t if with_rel else t.drop_columns(["rel"])


# the query shapes users ask for beyond the papers' (docs/queries.md): per-key windows, re-arming
# thresholds, quantile alerts, per-key quantiles, rank queries (and, with joins, interval joins
# that carry columns); a ``families`` filter names them to include them
SHAPES = ["keyed_window", "repeat_threshold", "alert_quantile", "keyed_quantile", "rank_quantile"]


def trade_queries(n_rows: int, n_queries: int = 200, n_symbols: int = 50, seed: int = 1,
                  lookups: int = 20, families: tuple[str, ...] | None = None,
                  joins: bool = True) -> list[dict]:
    """Operations (dicts) over a stream of ``n_rows`` trades: registrations spread over the first
    half, about a third terminated later, lookups of every lookup-able query at ``lookups``
    evenly spaced positions."""
    rng = np.random.default_rng(seed)
    syms = symbols(n_symbols)
    ref = trades(min(n_rows, 20_000), n_symbols, seed=0)
    px = {s: float(np.median(np.asarray(ref.column("price"))[np.asarray(ref.column("symbol").to_pylist()) == s]))
          if s in set(ref.column("symbol").to_pylist()) else 100.0 for s in syms}
    kinds = ["threshold_key", "threshold", "window", "substream", "quantile"] + (
        ["select_join", "window_join", "band_join"] if joins else []) + SHAPES + (["interval_join"] if joins else [])
    if families:
        kinds = [k for k in kinds if k.split("_")[0] in families or k in families]
    weights = {"threshold_key": 5, "threshold": 3, "window": 2, "substream": 1, "quantile": 1,
               "select_join": 0, "window_join": 1, "band_join": 0, **dict.fromkeys(SHAPES, 0.5), "interval_join": 0.5}
    w = np.array([weights[k] for k in kinds], float)
    w /= w.sum()
    ops: list[dict] = []
    lookable: list[tuple[str, int, int]] = []  # (id, registered at, terminated at)
    for i in range(n_queries):
        kind = kinds[rng.choice(len(kinds), p=w)]
        at = int(rng.integers(0, max(1, n_rows // 2)))
        qid = f"{kind}-{i}"
        s = syms[min(int(rng.zipf(1.3)) - 1, n_symbols - 1)]
        p0 = px[s]
        if kind in ("threshold_key", "repeat_threshold"):  # repeat: an alert every tau shares
            lo = round(p0 * (1 + rng.uniform(-0.03, 0.0)), 2)
            q = {"type": "threshold", "where": {"symbol": s, "price": [lo, round(lo + p0 * 0.03, 2)]},
                 "weight": "shares", "threshold": int(rng.integers(2_000, 60_000))}
            if kind == "repeat_threshold":
                q["repeat"] = True
        elif kind == "keyed_window":  # "max price of the last 50 AAPL trades", or per symbol
            q = {"type": "window_aggregate", "agg": ["sum", "max", "avg"][int(rng.integers(0, 3))],
                 "column": "price" if rng.random() < 0.6 else "shares", "rows": [int(rng.integers(5, 500)), 0]}
            if rng.random() < 0.5:
                q["where"] = {"symbol": s}
            else:
                q["group_by"] = "symbol"
        elif kind in ("alert_quantile", "keyed_quantile", "rank_quantile"):
            q = {"type": "quantile", "column": "price", "epsilon": 0.01, "rows": int(rng.integers(500, 5000))}
            if kind == "alert_quantile":  # the p90 price of a symbol over its last trades crosses a level
                q.update(phi=0.9, where={"symbol": s}, above=round(p0 * float(rng.uniform(0.99, 1.01)), 2),
                         rearm=round(p0 * 0.985, 2))
            elif kind == "keyed_quantile":  # the median price of each symbol's last trades
                q.update(phi=0.5, group_by="symbol")
            else:  # the fraction of recent trades at or below a price
                q.update(rank_of=round(p0, 2), where={"symbol": s})
        elif kind == "threshold":
            lo = round(4500 + rng.uniform(-20, 10), 1)
            q = {"type": "threshold", "where": {"nasdaq": [lo, lo + round(rng.uniform(5, 30), 1)],
                                               "price": [round(rng.uniform(20, 300), 1), None]},
                 "weight": "shares", "threshold": int(rng.integers(50_000, 2_000_000))}
        elif kind == "window":
            agg = ["sum", "count", "avg", "min", "max"][int(rng.integers(0, 5))]
            if rng.random() < 0.5:
                q = {"type": "window_aggregate", "agg": agg, "column": "shares",
                     "rows": [int(rng.integers(100, 5000)), 0]}
            else:
                q = {"type": "window_aggregate", "agg": agg, "column": "price",
                     "time": [float(rng.integers(5, 120)), 0], "time_column": "ts"}
            if agg == "count":
                q.pop("column")
        elif kind == "substream":
            q = {"type": "substream_filter", "agg": "sum", "column": "shares", "key": "symbol",
                 "time": float(rng.integers(10, 60)), "time_column": "ts",
                 "range": [float(rng.integers(5_000, 50_000)), None]}
        elif kind == "quantile":
            q = {"type": "quantile", "column": "price", "phi": float(rng.choice([0.5, 0.9, 0.99])),
                 "epsilon": 0.01}
            if rng.random() < 0.5:
                q["rows"] = int(rng.integers(1000, 20_000))
        elif kind in ("select_join", "window_join"):
            lo = round(p0 * 0.99, 2)
            q = {"type": kind, "left": "buy", "right": "sell", "left_on": "symbol", "right_on": "symbol",
                 "left_range": {"price": [lo, round(p0 * 1.01, 2)]},
                 "right_range": {"shares": [int(rng.integers(500, 3000)), None]}}
            if kind == "window_join":
                q["window"] = round(float(rng.uniform(0.05, 1.0)), 2)
                q["time_column"] = "ts"
        elif kind == "interval_join":  # sells 0.02 before to 0.3 after a buy, with the prices joined
            q = {"type": "window_join", "left": "buy", "right": "sell", "left_on": "symbol", "right_on": "symbol",
                 "left_range": {"price": [round(p0 * 0.99, 2), round(p0 * 1.01, 2)]},
                 "right_range": {"shares": [int(rng.integers(1000, 3000)), None]},
                 "window": [-0.02, round(float(rng.uniform(0.02, 0.2)), 2)], "time_column": "ts",
                 "select": {"left": ["price", "shares"], "right": ["price"]}}
        else:  # band join on price: sells within a small band above buys, large lots only
            q = {"type": "band_join", "left": "buy", "right": "sell", "left_on": "nasdaq", "right_on": "nasdaq",
                 "band": [0.0, round(float(rng.uniform(0.001, 0.01)), 4)]}
        q["id"] = qid
        ops.append({"op": "register", "at": at, "query": q})
        end = None
        if rng.random() < 0.35:
            end = int(rng.integers(at + 1, n_rows + 1))
            ops.append({"op": "terminate", "at": end, "id": qid})
        if kind in ("window", "substream", "quantile", "keyed_window", "keyed_quantile", "rank_quantile"):
            lookable.append((qid, at, end if end is not None else n_rows + 1))
    for j in range(1, lookups + 1):
        n = int(n_rows * j / lookups)
        for qid, a, e in lookable:
            if a < n < e:
                ops.append({"op": "lookup", "at": n, "id": qid})
    ops.sort(key=lambda o: o["at"])  # stable: keeps register-before-terminate at equal at
    return ops


def write_files(stream: pa.Table, ops: list, stream_dir: str | Path, queries_dir: str | Path,
                n_files: int = 4, fmt: str = "parquet", op_files: int = 1, first: int = 0) -> list[Path]:
    """Split a stream into ``n_files`` files (named in arrival order) and the operations into
    ``op_files`` JSONL files; returns the stream files."""
    sd, qd = Path(stream_dir), Path(queries_dir)
    sd.mkdir(parents=True, exist_ok=True)
    qd.mkdir(parents=True, exist_ok=True)
    files = []
    t0 = time.time()
    bounds = np.linspace(0, stream.num_rows, n_files + 1).astype(int)
    for i in range(n_files):
        part = stream.slice(bounds[i], bounds[i + 1] - bounds[i])
        p = sd / f"part-{first + i:05d}.{ 'jsonl' if fmt == 'json' else fmt}"
        if fmt == "parquet":
            pq.write_table(part, p)
        elif fmt == "csv":
            import pyarrow.csv as pcsv

            pcsv.write_csv(part, p)
        else:
            with p.open("w") as f:
                for r in part.to_pylist():
                    f.write(json.dumps(r) + "\n")
        files.append(p)
        _touch(p, t0 + 0.01 * i)
    if ops:
        ob = np.linspace(0, len(ops), op_files + 1).astype(int)
        for i in range(op_files):
            with (qd / f"ops-{first + i:05d}.jsonl").open("w") as f:
                for o in ops[ob[i]: ob[i + 1]]:
                    f.write((o if isinstance(o, str) else json.dumps(o)) + "\n")
            _touch(qd / f"ops-{first + i:05d}.jsonl", t0 + 0.01 * i)
    return files


def _touch(p: Path, t: float) -> None:
    """Spark's file source takes new files in modification-time order (ties in listing order):
    give files distinct times that follow their names."""
    ns = int(t * 1e9)
    os.utime(p, ns=(ns, ns))
