"""A small mixed event log touching every family: a trade stream (symbols with Zipf popularity,
random-walk prices, shares, an index level, timestamps, a relation tag for joins) and standing
queries of all seven types registered, looked up and terminated over time. Used by ``vigil gen``
and the tests; the paper-scale generators live beside it (one module per paper)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa


def trade_stream(n: int, seed: int = 0, symbols: int = 20) -> pa.Table:
    rng = np.random.default_rng(seed)
    names = np.array([f"S{i:03d}" for i in range(symbols)], dtype=object)
    pop = 1.0 / np.arange(1, symbols + 1) ** 1.1
    sym = rng.choice(symbols, size=n, p=pop / pop.sum())
    base = 50 + 150 * rng.random(symbols)
    steps = rng.normal(0, 0.2, size=n)
    price = np.empty(n)
    last = base.copy()
    for i in range(n):  # small n: a readable random walk per symbol
        last[sym[i]] = max(1.0, last[sym[i]] + steps[i])
        price[i] = round(last[sym[i]], 2)
    shares = rng.integers(1, 20, size=n) * 100
    index = np.round(4600 + np.cumsum(rng.normal(0, 0.5, size=n)), 2)
    ts = np.cumsum(rng.exponential(0.05, size=n)).round(3)
    rel = np.where(rng.random(n) < 0.5, "R", "S")
    return pa.table({"symbol": names[sym].tolist(), "price": price, "shares": shares, "nasdaq": index, "ts": ts,
                     "rel": rel.tolist()})


def mixed_queries(stream: pa.Table, m: int = 200, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed + 1)
    n = stream.num_rows
    syms = sorted(set(stream.column("symbol").to_pylist()))
    price = stream.column("price").to_numpy()
    ops: list[dict] = []
    for i in range(m):
        at = int(rng.integers(0, max(1, n // 2)))
        kind = i % 7
        if kind == 0:
            c = float(np.quantile(price, rng.random()))
            q = {"type": "threshold", "where": {"price": [round(c - 5, 2), round(c + 5, 2)], "nasdaq": [None, 4700]},
                 "weight": "shares", "threshold": int(rng.integers(1, 50)) * 1000}
        elif kind == 1:
            q = {"type": "threshold", "where": {"price": [0, None], "symbol": syms[int(rng.integers(len(syms)))]},
                 "weight": "shares", "threshold": int(rng.integers(10, 200)) * 100}
        elif kind == 2:
            agg = ["sum", "count", "avg", "min", "max", "quantile"][int(rng.integers(6))]
            q = {"type": "window_aggregate", "agg": agg, "column": "shares", "rows": [int(rng.integers(2, 500)), 0]}
            if agg == "quantile":
                q["phi"] = 0.5
        elif kind == 3:
            q = {"type": "substream_filter", "agg": "sum", "column": "shares", "key": "symbol", "time": 5.0,
                 "range": [int(rng.integers(1, 20)) * 1000, None]}
        elif kind == 4:
            q = {"type": "band_join", "left": "R", "right": "S", "left_on": "price", "right_on": "price",
                 "band": [-0.01, 0.01]}
        elif kind == 5:
            q = {"type": "window_join", "left": "R", "right": "S", "left_on": "symbol", "right_on": "symbol",
                 "left_range": {"shares": [1500, None]}, "right_range": {"shares": [None, 300]}, "window": 0.5,
                 "time_column": "ts"}
        else:
            q = {"type": "quantile", "column": "price", "phi": float(rng.choice([0.5, 0.9, 0.99])), "epsilon": 0.01}
        q["id"] = f"{q['type']}-{i}"
        ops.append({"op": "register", "at": at, "query": q})
        if q["type"] in ("window_aggregate", "substream_filter", "quantile"):
            for _ in range(3):
                ops.append({"op": "lookup", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
        if rng.random() < 0.2:
            ops.append({"op": "terminate", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
    ops.sort(key=lambda o: o["at"])
    return ops


def write_example(out_dir: str | Path, n: int = 20_000, m: int = 200, seed: int = 0) -> tuple[Path, Path]:
    import pyarrow.parquet as pq

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stream = trade_stream(n, seed)
    pq.write_table(stream, out / "stream.parquet")
    with open(out / "queries.jsonl", "w") as f:
        for op in mixed_queries(stream, m, seed):
            f.write(json.dumps(op) + "\n")
    return out / "stream.parquet", out / "queries.jsonl"
