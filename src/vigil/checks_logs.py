"""Event logs for the conformance suite (:mod:`vigil.checks`): hypothesis strategies (small logs,
every shape) and a seeded generator (:func:`random_log`: thousands of rows, for the deterministic
cases of tests/test_conformance.py and the soak, tests/test_soak_logs.py).

Every family's logs carry the shapes that found defects before (docs/contract.md states each rule):

- rejected rows: null and NaN in every column a query references (values, weights, keys, time
  columns), weights that are not positive integers; a rejected row keeps its seq;
- an optional ``seq`` column, strictly increasing with gaps, from 1, from just below 2^53 (it
  crosses 2^53) or from 2^60 (positions must stay exact int64); operations' ``at`` then name
  seq positions (an ``at`` inside a gap, or beyond the last element);
- many keys (substream filters, threshold equality keys) and pushes of hundreds of rows of keys
  the operator has not seen (pool pressure: :func:`pool_logs`);
- registrations at every position, late ones included, of every query type, terminations;
- windows from 1 to longer than the stream (rows [2^40, 0], time spans beyond the stream's);
- batch sizes from 1 row to the whole log (``Log.batch``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st


@dataclass
class Log:
    stream: pa.Table
    ops: list[dict[str, Any]] = field(default_factory=list)
    quantile_epsilon: float = 0.05
    join_output: str = "pairs"
    join_history: str | None = None  # Engine(join_history=...): "COLUMN:H" (vigil.history)
    batch: int | tuple[int, ...] = 7  # rows per Engine.process call; a tuple: successive sizes, the last repeated

    def seqs(self) -> np.ndarray:
        """Each row's seq (int64): the ``seq`` column when the stream has one, else 1..N."""
        if "seq" in self.stream.column_names:
            return np.asarray(self.stream.column("seq").to_numpy(zero_copy_only=False), np.int64)
        return np.arange(1, self.stream.num_rows + 1, dtype=np.int64)


def with_seq(table: pa.Table, ops: list[dict], seq: np.ndarray | None, in_gap: bool = False) -> tuple[pa.Table, list[dict]]:
    """Give ``table`` the seq column ``seq`` and map each operation's ``at`` (a row count i: after
    the first i rows) to a seq position: the seq of row i (0 for i = 0), or with ``in_gap`` the
    last position before row i + 1 (a position inside the gap; 5 past the last row for i = N)."""
    if seq is None or table.num_rows == 0:
        return table, ops
    seq = np.asarray(seq, np.int64)
    n = len(seq)

    def pos(i: int) -> int:
        if in_gap:
            return int(seq[i]) - 1 if i < n else int(seq[-1]) + 5
        return int(seq[i - 1]) if i > 0 else 0

    out = []
    for op in ops:
        op = dict(op)
        op["at"] = pos(op.get("at", 0))
        out.append(op)
    return table.append_column("seq", pa.array(seq, pa.int64())), out


# ----------------------------------------------------------------------------- hypothesis


def _ops_strategy(draw, n: int, make_query, lookups: bool, max_queries: int = 12) -> list[dict]:
    ops: list[dict] = []
    ids: list[str] = []
    for i in range(draw(st.integers(1, max_queries))):
        at = draw(st.integers(0, n))
        q = make_query(draw)
        q["id"] = f"q{i}"
        ops.append({"op": "register", "at": at, "query": q})
        ids.append(q["id"])
        if draw(st.integers(0, 3)) == 0:
            ops.append({"op": "terminate", "at": draw(st.integers(at, n)), "id": q["id"]})
    if lookups and ids:
        for at in range(n + 1):
            for qid in draw(st.lists(st.sampled_from(ids), max_size=3, unique=True)):
                ops.append({"op": "lookup", "at": at, "id": qid})
    ops.sort(key=lambda o: o["at"])  # file order among equal at is kept (stable)
    return ops


_SMALL = st.integers(0, 6)  # small domains: many ties on endpoints and duplicate values
_BATCH = st.sampled_from([1, 3, 7, 7, 1000])
_SEQ_BASE = {"gaps": 0, "cross53": 2**53 - 4, "big": 2**60}


def _range(draw, dom=_SMALL, unbounded=True):
    a, b = sorted((draw(dom), draw(dom)))
    if unbounded and draw(st.integers(0, 5)) == 0:
        a = None
    if unbounded and draw(st.integers(0, 5)) == 0:
        b = None
    return [a, b]


def _holes(draw, n: int, nan: bool = True) -> dict[int, Any]:
    """Rows whose value becomes null (or NaN): none in a third of the logs, up to a quarter else."""
    if n == 0 or draw(st.integers(0, 2)) == 0:
        return {}
    idx = draw(st.lists(st.integers(0, n - 1), max_size=max(1, n // 4), unique=True))
    return {i: float("nan") if nan and draw(st.booleans()) else None for i in idx}


def _col(draw, values: list, typ: pa.DataType) -> pa.Array:
    holes = _holes(draw, len(values), nan=pa.types.is_floating(typ))
    return pa.array([holes[i] if i in holes else v for i, v in enumerate(values)], typ)


def _finish(draw, cols: dict[str, pa.Array], ops: list[dict], **kw) -> Log:
    """The log, with a seq column (gaps; from 1, across 2^53 or from 2^60) in 2 logs of 5."""
    table = pa.table(cols)
    kind = draw(st.sampled_from([None, None, None, "gaps", "cross53", "big"]))
    seq = None
    if kind and table.num_rows:
        steps = draw(st.lists(st.sampled_from([1, 1, 1, 2, 3, 10]), min_size=table.num_rows, max_size=table.num_rows))
        seq = _SEQ_BASE[kind] + np.cumsum(steps, dtype=np.int64)
    table, ops = with_seq(table, ops, seq, in_gap=draw(st.booleans()))
    return Log(table, ops, batch=draw(_BATCH), **kw)


@st.composite
def threshold_logs(draw, max_rows: int = 40) -> Log:
    d = draw(st.integers(1, 3))
    n = draw(st.integers(0, max_rows))
    cols = {f"x{j}": _col(draw, draw(st.lists(_SMALL, min_size=n, max_size=n)), pa.float64()) for j in range(d)}
    # weights: huge ones, and (rejected) 0 and 2.5 now and then
    cols["w"] = _col(draw, draw(st.lists(st.sampled_from([1, 1, 2, 3, 7, 10**9, 1, 1, 2, 0, 2.5]), min_size=n, max_size=n)),
                     pa.float64())
    keys = ["a", "b"] if draw(st.booleans()) else [f"k{i}" for i in range(12)]
    cols["k"] = _col(draw, draw(st.lists(st.sampled_from(keys), min_size=n, max_size=n)), pa.string())
    dims = [f"x{j}" for j in range(d)]

    def make(draw):
        where: dict[str, Any] = {c: _range(draw) for c in dims}
        if draw(st.booleans()):
            where["k"] = draw(st.sampled_from(keys))
        q = {"type": "threshold", "where": where, "threshold": draw(st.sampled_from([1, 1, 2, 3, 5, 10, 40, 10**9, 3 * 10**9]))}
        if draw(st.booleans()):
            q["weight"] = "w"
        if draw(st.booleans()):
            q["repeat"] = True  # re-arms after each maturity
        return q

    return _finish(draw, cols, _ops_strategy(draw, n, make, lookups=False, max_queries=16))


def _times(draw, n):
    steps = draw(st.lists(st.sampled_from([0, 0, 1, 1, 2, 5]), min_size=n, max_size=n))
    return np.cumsum(steps).tolist()


def _long(draw, n: int, short: int) -> int:
    """A window length: short (1..short), or as long as the stream or longer (up to 2^40)."""
    return draw(st.one_of(st.integers(1, short), st.sampled_from([max(n, 1), n + 1, 2 * n + 5, 2**40])))


@st.composite
def window_logs(draw, max_rows: int = 30) -> Log:
    n = draw(st.integers(0, max_rows))
    v = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))
    if n and draw(st.integers(0, 4)) == 0:  # SUM drift: 2^53 beside small values
        v = [2**53 if i % 3 == 0 else x for i, x in enumerate(v)]

    def make(draw):
        agg = draw(st.sampled_from(["sum", "count", "avg", "min", "max", "quantile"]))
        q: dict[str, Any] = {"type": "window_aggregate", "agg": agg, "column": "v"}
        if agg == "quantile":
            q["phi"] = draw(st.sampled_from([0.1, 0.25, 0.5, 0.9, 1.0, 0.0014285714285714286]))
        if draw(st.booleans()):
            nr = draw(st.integers(0, 4))
            q["rows"] = [nr + _long(draw, n, 10), nr]
        else:
            tr = draw(st.integers(0, 3))
            q["time"] = [tr + _long(draw, 5 * n, 8), tr]
        keyed = draw(st.integers(0, 5))  # per-key windows: where equality / group_by / + a range
        if keyed == 0:
            q["where"] = {"k": draw(st.sampled_from(["a", "b", "z"]))}
        elif keyed in (1, 2):
            q["group_by"] = "k"
            if keyed == 2:
                q["where"] = {"v": [-2, 3]}
        return q

    k = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    return _finish(draw, {"v": _col(draw, v, pa.float64()), "ts": _col(draw, _times(draw, n), pa.float64()),
                          "k": _col(draw, k, pa.string())},
                   _ops_strategy(draw, n, make, lookups=True))


@st.composite
def substream_logs(draw, max_rows: int = 30, approximate: bool = True) -> Log:
    n = draw(st.integers(0, max_rows))
    v = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    keys = ["a", "b", "c", "d"] if draw(st.booleans()) else [f"k{i}" for i in range(40)]
    k = draw(st.lists(st.sampled_from(keys), min_size=n, max_size=n))

    def make(draw):
        agg = draw(st.sampled_from(["count", "sum"]))
        q: dict[str, Any] = {"type": "substream_filter", "agg": agg, "key": "k", "time": _long(draw, 5 * n, 8)}
        if agg == "sum" or draw(st.booleans()):
            q["column"] = "v"
        lo, hi = draw(st.integers(0, 6)), None
        if draw(st.booleans()):
            lo, hi = None, draw(st.integers(1, 12))
        elif not approximate or draw(st.booleans()):
            hi = lo + draw(st.integers(1, 10))
        q["range"] = [lo, hi]
        if approximate and (lo is None or hi is None) and draw(st.booleans()):
            q["epsilon"] = draw(st.sampled_from([0.1, 0.5]))
        return q

    return _finish(draw, {"k": _col(draw, k, pa.string()), "v": _col(draw, v, pa.float64()),
                          "ts": _col(draw, _times(draw, n), pa.float64())},
                   _ops_strategy(draw, n, make, lookups=True))


@st.composite
def join_logs(draw, max_rows: int = 30, output: str = "pairs") -> Log:
    n = draw(st.integers(0, max_rows))
    cols = {
        "rel": _col(draw, draw(st.lists(st.sampled_from(["R", "S"]), min_size=n, max_size=n)), pa.string()),
        "B": _col(draw, draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), pa.int64()),
        "A": _col(draw, draw(st.lists(_SMALL, min_size=n, max_size=n)), pa.float64()),
        "C": _col(draw, draw(st.lists(_SMALL, min_size=n, max_size=n)), pa.float64()),
        "T": _col(draw, _times(draw, n), pa.float64()),
    }

    def make(draw):
        kind = draw(st.sampled_from(["band_join", "select_join", "window_join"]))
        q: dict[str, Any] = {"type": kind, "left": "R", "right": "S", "left_on": "B", "right_on": "B"}
        if kind == "band_join":
            a = draw(st.integers(-3, 3))
            q["band"] = [a, a + draw(st.integers(0, 3))]
        else:
            if draw(st.booleans()):
                q["left_range"] = {"A": _range(draw)}
            if draw(st.booleans()):
                q["right_range"] = {"C": _range(draw)}
            if kind == "window_join":
                q["window"] = _long(draw, 5 * n, 6)
                q["time_column"] = "T"
                if draw(st.booleans()):  # an interval join: lo <= s.T - r.T <= hi
                    lo = draw(st.integers(-6, 3))
                    q["window"] = [lo, lo + draw(st.integers(0, 6))]
        if kind == "band_join" and draw(st.booleans()):  # a band with an equality key
            q["left_key"] = q["right_key"] = "C"
        if draw(st.booleans()):  # the event carries these columns' values
            q["select"] = draw(st.sampled_from([{"left": ["A"]}, {"right": ["C", "T"]}, {"left": ["T", "B"], "right": ["A"]}]))
        return q

    return _finish(draw, cols, _ops_strategy(draw, n, make, lookups=False), join_output=output)


@st.composite
def quantile_logs(draw, max_rows: int = 40) -> Log:
    n = draw(st.integers(0, max_rows))
    v = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))

    def make(draw):
        q: dict[str, Any] = {"type": "quantile", "column": "v", "phi": draw(st.sampled_from([0.01, 0.25, 0.5, 0.75, 0.99, 1.0])),
                             "epsilon": draw(st.sampled_from([0.01, 0.05, 0.1]))}
        if draw(st.booleans()):
            q["rows"] = _long(draw, n, 15)
        if draw(st.booleans()):
            q["notify"] = draw(st.sampled_from([True, "cluster"]))
        shape = draw(st.integers(0, 9))  # alerts, rank queries, per-key queries (checks_quantiles)
        if shape in (0, 1):
            q.pop("notify", None)
            x = draw(st.integers(0, 20))
            q["above" if shape == 0 else "below"] = x
            if draw(st.booleans()):
                q["rearm"] = x + (-1 if shape == 0 else 1) * draw(st.integers(0, 6))
        elif shape == 2:  # pushed rank queries: whole stream only
            q.pop("phi")
            if q.get("rows") is not None or q.get("notify") == "cluster":
                q.pop("notify", None)
            q["rank_of"] = draw(st.integers(-1, 21))
        if shape in (3, 4, 5) or (shape in (0, 2) and draw(st.booleans())):
            if q.get("notify") == "cluster":
                q["notify"] = True
            if shape != 4:
                q["group_by"] = "k"
            if shape != 3:
                q["where"] = draw(st.sampled_from([{"k": "a"}, {"v": [2, 15]}, {"k": "b", "v": [None, 10]}]))
        return q

    k = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    return _finish(draw, {"v": _col(draw, v, pa.float64()), "k": _col(draw, k, pa.string())},
                   _ops_strategy(draw, n, make, lookups=True), quantile_epsilon=draw(st.sampled_from([0.01, 0.05])))


STRATEGIES = {
    "threshold": threshold_logs,
    "windows": window_logs,
    "substream": substream_logs,
    "joins": join_logs,
    "quantiles": quantile_logs,
}


def logs(family: str, **kw) -> st.SearchStrategy[Log]:
    return STRATEGIES[family](**kw)


# ----------------------------------------------------------------------------- seeded logs


def _np_col(rng, values: np.ndarray, rate: float, typ: pa.DataType = pa.float64()) -> pa.Array:
    """``values`` with a fraction ``rate`` of the rows null, half of those NaN in a float column."""
    values = np.asarray(values)
    hole = rng.random(len(values)) < rate
    if pa.types.is_floating(typ):
        values = values.astype(np.float64)
        nan = hole & (rng.random(len(values)) < 0.5)
        values[nan] = np.nan
        hole &= ~nan
    return pa.array(values, typ, mask=hole)


def _np_times(rng, n: int) -> np.ndarray:
    return np.cumsum(rng.choice([0, 0, 1, 1, 2, 5], n)).astype(np.float64)


def _np_ops(rng, n: int, make_query, n_queries: int, lookups: int) -> list[dict]:
    """Registrations at 0 (a third), anywhere and late (the last tenth of the stream), a quarter
    of them terminated later; ``lookups`` lookups of random queries at positions from their
    registration on (a few before it, or after their end: rejected)."""
    ops = []
    regs = []
    for i in range(n_queries):
        where = rng.random()
        at = 0 if where < 0.33 else int(rng.integers(int(0.9 * n), n + 1)) if where < 0.5 else int(rng.integers(0, n + 1))
        q = make_query(rng)
        q["id"] = f"q{i}"
        ops.append({"op": "register", "at": at, "query": q})
        regs.append((q["id"], at))
        if rng.random() < 0.25:
            ops.append({"op": "terminate", "at": int(rng.integers(at, n + 1)), "id": q["id"]})
    for _ in range(lookups if regs else 0):
        qid, at = regs[int(rng.integers(len(regs)))]
        ops.append({"op": "lookup", "at": int(rng.integers(at, n + 1)) if rng.random() < 0.97 else int(rng.integers(0, n + 1)),
                    "id": qid})
    ops.sort(key=lambda o: o["at"])
    return ops


GAPS = (1, 1, 1, 2, 5, 100)  # seq steps


def _np_finish(rng, cols: dict, ops: list[dict], n: int, gaps: tuple[int, ...] = GAPS, **kw) -> Log:
    table = pa.table(cols)
    seq = None
    if n and rng.random() < 0.5:
        base = int(rng.choice([0, 2**53 - n // 2, 2**60]))
        seq = base + np.cumsum(rng.choice(gaps, n)).astype(np.int64)
    table, ops = with_seq(table, ops, seq, in_gap=bool(rng.random() < 0.5))
    batch = int(rng.choice([64, 500, 4096, max(n, 1)]))
    return Log(table, ops, batch=batch, **kw)


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def _gen_threshold(rng, n: int, queries: int, lookups: int) -> Log:
    d, dom = int(rng.integers(1, 4)), _pick(rng, [6, 100, 10**6])
    rate = _pick(rng, [0.0, 0.01, 0.1])
    keys = np.array([f"k{i}" for i in range(_pick(rng, [2, 50, 1000]))])
    cols = {f"x{j}": _np_col(rng, rng.integers(0, dom + 1, n), rate) for j in range(d)}
    w = rng.choice([1, 1, 2, 3, 7, 10**9], n).astype(float)
    w[rng.random(n) < rate / 2] = _pick(rng, [0.0, 2.5])  # rejected weights
    cols["w"] = _np_col(rng, w, rate / 2)
    cols["k"] = _np_col(rng, keys[rng.integers(0, len(keys), n)], rate / 4, pa.string())

    def make(rng):
        where: dict[str, Any] = {}
        for j in range(d):
            a, b = sorted(int(x) for x in rng.integers(0, dom + 1, 2))
            where[f"x{j}"] = [None if rng.random() < 0.15 else a, None if rng.random() < 0.15 else b]
        if rng.random() < 0.5:
            where["k"] = str(keys[int(rng.integers(len(keys)))])
        q = {"type": "threshold", "where": where, "threshold": _pick(rng, [1, 2, 5, 20, 100, 1000, 10**5, 10**9, 3 * 10**9])}
        if rng.random() < 0.5:
            q["weight"] = "w"
        if rng.random() < 0.3:
            q["repeat"] = True  # re-arms after each maturity
        return q

    return _np_finish(rng, cols, _np_ops(rng, n, make, queries or 200, 0), n)


def _gen_windows(rng, n: int, queries: int, lookups: int) -> Log:
    rate = _pick(rng, [0.0, 0.01, 0.1])
    cols = {"v": _np_col(rng, rng.integers(-50, 51, n), rate), "ts": _np_col(rng, _np_times(rng, n), rate / 4)}
    keys = np.array([f"k{i}" for i in range(_pick(rng, [3, 50, 2000]))])
    cols["k"] = _np_col(rng, keys[rng.integers(0, len(keys), n)], rate / 4, pa.string())

    def make(rng):
        q = make_unkeyed(rng)
        keyed = rng.random()  # per-key windows: where equality / group_by / + a range
        if keyed < 0.15:
            q["where"] = {"k": str(keys[int(rng.integers(len(keys)))])}
        elif keyed < 0.3:
            q["group_by"] = "k"
            if keyed < 0.2:
                q["where"] = {"v": [-20, 30]}
        return q

    def make_unkeyed(rng):
        agg = _pick(rng, ["sum", "count", "avg", "min", "max", "quantile"])
        q: dict[str, Any] = {"type": "window_aggregate", "agg": agg, "column": "v"}
        if agg == "quantile":
            q["phi"] = _pick(rng, [0.01, 0.1, 0.5, 0.9, 1.0, 0.0014285714285714286])
        if rng.random() < 0.6:
            nr = _pick(rng, [0, 0, 1, 5, 40])
            q["rows"] = [nr + _pick(rng, [1, 2, 5, 50, 500, max(n // 2, 1), max(n, 1), 2 * n + 1, 2**40]), nr]
        else:
            tr = _pick(rng, [0, 0, 1, 10])
            q["time"] = [tr + _pick(rng, [1, 5, 50, 1000, 10**9]), tr]
        return q

    return _np_finish(rng, cols, _np_ops(rng, n, make, queries or 60, lookups), n)


def _gen_substream(rng, n: int, queries: int, lookups: int) -> Log:
    rate = _pick(rng, [0.0, 0.01, 0.1])
    keys = np.array([f"k{i}" for i in range(_pick(rng, [2, 20, 500, 5000]))])
    cols = {"k": _np_col(rng, keys[rng.integers(0, len(keys), n)], rate / 4, pa.string()),
            "v": _np_col(rng, rng.integers(1, 10, n), rate), "ts": _np_col(rng, _np_times(rng, n), rate / 4)}
    bounds = [0, 1, 2, 5, 10, 50, 200, 500, 2000]

    def make(rng):
        agg = _pick(rng, ["count", "sum"])
        q: dict[str, Any] = {"type": "substream_filter", "agg": agg, "key": "k", "time": _pick(rng, [1, 10, 100, 1000, 10**9])}
        if agg == "sum" or rng.random() < 0.5:
            q["column"] = "v"
        lo, hi = sorted(_pick(rng, bounds) for _ in range(2))
        shape = rng.random()
        q["range"] = [lo, None] if shape < 0.3 else [None, max(hi, 1)] if shape < 0.5 else [lo, hi + 1]
        if None in q["range"] and rng.random() < 0.3:
            q["epsilon"] = _pick(rng, [0.1, 0.5])
        return q

    return _np_finish(rng, cols, _np_ops(rng, n, make, queries or 40, lookups), n)


def _gen_joins(rng, n: int, queries: int, lookups: int) -> Log:
    rate = _pick(rng, [0.0, 0.01, 0.1])
    cols = {"rel": _np_col(rng, rng.choice(["R", "S"], n), rate / 10, pa.string()),
            "B": _np_col(rng, rng.integers(0, max(n, 6), n), rate / 4, pa.int64()),
            "A": _np_col(rng, rng.integers(0, 21, n), rate), "C": _np_col(rng, rng.integers(0, 21, n), rate),
            "T": _np_col(rng, _np_times(rng, n), rate / 4)}

    def make(rng):
        kind = _pick(rng, ["band_join", "select_join", "window_join"])
        q: dict[str, Any] = {"type": kind, "left": "R", "right": "S", "left_on": "B", "right_on": "B"}
        if kind == "band_join":
            a = int(rng.integers(-3, 4))
            q["band"] = [a, a + int(rng.integers(0, 4))]
        else:
            for side, c in (("left_range", "A"), ("right_range", "C")):
                if rng.random() < 0.5:
                    a, b = sorted(int(x) for x in rng.integers(0, 21, 2))
                    q[side] = {c: [None if rng.random() < 0.15 else a, None if rng.random() < 0.15 else b]}
            if kind == "window_join":
                q["window"] = _pick(rng, [1, 5, 50, 10**9, [-5, 10], [2, 40], [-30, -1], [0, 0]])
                q["time_column"] = "T"
        if kind == "band_join" and rng.random() < 0.3:  # a band with an equality key
            q["left_key"] = q["right_key"] = "C"
        if rng.random() < 0.3:  # the event carries these columns' values
            q["select"] = _pick(rng, [{"left": ["A"]}, {"right": ["C", "T"]}, {"left": ["T", "B"], "right": ["A"]}])
        return q

    return _np_finish(rng, cols, _np_ops(rng, n, make, queries or 12, 0), n, join_output=_pick(rng, ["pairs", "affected"]))


def _gen_quantiles(rng, n: int, queries: int, lookups: int) -> Log:
    rate = _pick(rng, [0.0, 0.01, 0.1])
    dist = _pick(rng, ["ties", "wide", "normal"])
    v = (rng.integers(0, 21, n) if dist == "ties" else rng.integers(0, 10**6, n) if dist == "wide"
         else np.round(rng.normal(0, 100, n), 1))

    def make(rng):
        q: dict[str, Any] = {"type": "quantile", "column": "v", "phi": _pick(rng, [0.01, 0.25, 0.5, 0.75, 0.99, 1.0]),
                             "epsilon": _pick(rng, [0.01, 0.05, 0.1])}
        if rng.random() < 0.5:
            q["rows"] = _pick(rng, [1, 10, 100, 1000, max(n, 1), 2 * n + 1])
        if rng.random() < 0.5:
            q["notify"] = _pick(rng, [True, "cluster"])
        return q

    return _np_finish(rng, {"v": _np_col(rng, v, rate)}, _np_ops(rng, n, make, queries or 30, lookups),
                      n, quantile_epsilon=_pick(rng, [0.01, 0.05]))


GENERATORS = {"threshold": _gen_threshold, "windows": _gen_windows, "substream": _gen_substream,
              "joins": _gen_joins, "quantiles": _gen_quantiles}


def random_log(family: str, seed: int, rows: int, queries: int = 0, lookups: int = 300) -> Log:
    """A seeded log of ``rows`` rows for ``family`` with every shape of the module docstring
    (``queries``: 0 = the family's default number of queries). Same arguments, same log."""
    rng = np.random.default_rng([seed, rows, list(GENERATORS).index(family)])
    return GENERATORS[family](rng, rows, queries, lookups)


def _substream_log(keys: np.ndarray, ops: list[dict], batch, seq: np.ndarray | None = None) -> Log:
    n = len(keys)
    i = np.arange(n)
    table = pa.table({"k": pa.array(keys.astype(str)), "v": (i % 7 + 1).astype(float), "ts": i.astype(float)})
    table, ops = with_seq(table, ops, seq)
    return Log(table, ops, batch=batch)


def _sub_ops(n: int, specs: list[tuple], at_lookups: list[int]) -> list[dict]:
    ops = []
    for qid, agg, time, rng_, at in specs:
        q = {"type": "substream_filter", "id": qid, "agg": agg, "key": "k", "time": time, "range": rng_}
        if agg == "sum":
            q["column"] = "v"
        ops.append({"op": "register", "at": at, "query": q})
    ops += [{"op": "lookup", "at": a, "id": s[0]} for a in at_lookups for s in specs if a >= s[4]]
    return sorted(ops, key=lambda o: o["at"])


def pool_logs() -> dict[str, tuple[str, Log]]:
    """Deterministic logs at hundreds to thousands of rows that fill operators' pools: name ->
    (family, log). Substream filters: one push of 700 rows of 2 keys; 17 keys then one push of
    700 rows of a key not seen before; 3,000 rows of 600 keys first seen in pushes of 1,000,
    with seq from 2^60 (gaps). Threshold: 3,000 rows of 300 keys, one query per key."""
    qs = [("gt500", "count", 1e9, [500, None], 0), ("gt250", "count", 1e9, [250, None], 0),
          ("lt400", "count", 1e9, [None, 400], 0), ("sum", "sum", 1e9, [1000, 4000], 0),
          ("t50", "count", 50.0, [10, 60], 0), ("late", "count", 1e9, [5, None], 0)]
    out: dict[str, tuple[str, Log]] = {}
    two = np.where(np.arange(700) % 5 == 4, "MSFT", "AAPL")
    out["substream_2_keys_one_push"] = ("substream", _substream_log(two, _sub_ops(700, qs, [350, 700]), 10**6))
    keys = np.r_[np.repeat(np.arange(17), 3), np.full(700, 17)]
    late = [(*q[:4], 51 if q[0] == "late" else 0) for q in qs]
    out["substream_new_key_after_17"] = ("substream", _substream_log(keys, _sub_ops(751, late, [51, 400, 751]), (51, 700)))
    rng = np.random.default_rng(7)
    many = np.r_[rng.integers(0, 50, 1000), rng.integers(50, 600, 2000)]
    late = [(*q[:4], 1500 if q[0] == "late" else 0) for q in qs]
    seq = 2**60 + np.cumsum(rng.choice([1, 1, 2, 7], 3000)).astype(np.int64)
    out["substream_600_keys_seq_2^60"] = ("substream", _substream_log(many, _sub_ops(3000, late, [999, 1000, 2000, 3000]), 1000, seq))
    k = rng.integers(0, 300, 3000)
    table = pa.table({"k": pa.array([f"k{i}" for i in k]), "x0": rng.integers(0, 10, 3000).astype(float),
                      "w": rng.choice([1.0, 2.0, 3.0], 3000)})
    ops = [{"op": "register", "at": int(at), "query": {"type": "threshold", "id": f"q{i}", "where": {"k": f"k{i % 300}", "x0": [0, 8]},
                                                       "threshold": int(th), "weight": "w"}}
           for i, (at, th) in enumerate(zip(rng.choice([0, 0, 500, 2500], 600), rng.choice([1, 5, 20, 40], 600), strict=True))]
    out["threshold_300_keys"] = ("threshold", Log(table, sorted(ops, key=lambda o: o["at"]), batch=1000))
    return out
