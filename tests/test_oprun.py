"""The bulk operation path (vigil.oprun, vigil.specs.fast_spec) against one operation at a time:
the same acceptance, the same rejections with the same reasons in the same order, the same
outputs, counts and snapshots."""

import json
import math
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil import oprun
from vigil.engine import Engine
from vigil.events import output_rows
from vigil.jsonline import loads, loads_many
from vigil.specs import SpecError, fast_spec, parse_query
from vigil.state import unpack
from vigil.threshold.group import ThresholdGroup

# ----------------------------------------------------------------------------- query strategies

_num = st.one_of(
    st.integers(-20, 20), st.floats(-20, 20, allow_nan=False), st.sampled_from(
        [None, 2**53, -(2**53), 2**53 + 1, 10**400, 1e308, math.inf, -math.inf, math.nan, True, False, -0.0, 0.0, "1", [1]])
)
_col = st.sampled_from(["x", "y", "k", "w", "z"])
_rng = st.one_of(st.lists(_num, min_size=2, max_size=2), st.lists(_num, min_size=0, max_size=3))
_eq = st.one_of(st.sampled_from(["AAPL", "a", "", "1"]), st.integers(-3, 3), st.sampled_from([1.0, -0.0, 0.0, math.nan, 2**60, None, True]))


@st.composite
def threshold_queries(draw, ident=None):
    q = {"id": ident if ident is not None else draw(st.sampled_from(["q", "r", "", 7, None]))}
    if draw(st.integers(0, 9)):
        q["type"] = "threshold"
    else:
        q["type"] = draw(st.sampled_from(["thresholds", 1, None, "window_aggregate"]))
    where = {}
    for c in draw(st.lists(_col, max_size=3, unique=True)):
        where[c] = draw(_rng) if draw(st.integers(0, 3)) else draw(_eq)
    if draw(st.integers(0, 9)):
        q["where"] = where
    else:
        q["where"] = draw(st.sampled_from([[], None, "x", {"x": (1, 2)}]))
    if draw(st.booleans()):
        q["weight"] = draw(st.sampled_from(["w", "", None, 3, "x"]))
    if draw(st.integers(0, 9)):
        q["threshold"] = draw(st.one_of(st.integers(-2, 10), st.sampled_from([2**53, 2**53 + 1, 1.0, True, "5", None])))
    if not draw(st.integers(0, 19)):
        q["extra"] = 1
    return q


@st.composite
def quantile_queries(draw, ident=None):
    """Quantile specs around fast_spec's plain shape: mostly plain, some with fields or values it
    leaves to pydantic (ints, bools, bounds, cluster, where), some invalid."""
    q = {"id": ident if ident is not None else draw(st.sampled_from(["q", "r", "", 7])), "type": "quantile",
         "column": draw(st.sampled_from(["x", "x", "y", "nope", 3]))}
    if draw(st.integers(0, 2)):  # the plain shape
        q.update(column=draw(st.sampled_from(["x", "y"])), phi=draw(st.sampled_from([0.5, 0.9, 1.0, 0.01])),
                 epsilon=draw(st.sampled_from([0.1, 0.3])))
        if draw(st.booleans()):
            q["rows"] = draw(st.sampled_from([3, 5, None]))
        if draw(st.booleans()):
            q["notify"] = draw(st.booleans())
        return q
    q["phi"] = draw(st.sampled_from([0.5, 0.9, 1.0, 0.01, 1, 0, 1.5, -0.0, math.nan, None, True, "0.5"]))
    if draw(st.integers(0, 9)):
        q["epsilon"] = draw(st.sampled_from([0.1, 0.01, 0.5, 1.0, 0.0, 1, math.inf, True, None]))
    if draw(st.booleans()):
        q["rows"] = draw(st.sampled_from([3, 5, 1, 100_000, 0, -1, 2.0, True, None]))
    if draw(st.booleans()):
        q["notify"] = draw(st.sampled_from([True, False, "cluster", 1, None]))
    if not draw(st.integers(0, 5)):
        q[draw(st.sampled_from(["rank_of", "above", "where", "group_by", "extra"]))] = draw(
            st.sampled_from([0.5, {"k": "a"}, "k"]))
    return q


@settings(max_examples=400, deadline=None)
@given(quantile_queries())
def test_fast_spec_quantile_accepts_only_what_pydantic_accepts(q):
    from vigil.quantiles.group import QuantileGroup

    got = fast_spec(q)
    try:
        spec = parse_query(q, {"x", "y"})
    except SpecError:
        assert got is None or q["column"] not in {"x", "y"}  # columns: checked when the shape is learned
        return
    if got is None:
        return
    ident, shape, row = got
    assert ident == spec.id and row == (spec.phi, spec.epsilon, spec.rows, spec.notify)
    assert [type(v) for v in row[:2]] == [float, float]
    assert shape == ("quantile", spec.column, spec.rows, spec.notify) and spec.columns() == {shape[1]}
    assert not spec.keyed() and spec.rank_of is None and spec.above is None and spec.below is None
    assert "notify" not in QuantileGroup.params_of(spec)  # never a cluster group


@settings(max_examples=600, deadline=None)
@given(threshold_queries())
def test_fast_spec_accepts_only_what_pydantic_accepts_and_decodes_it_alike(q):
    got = fast_spec(q)
    try:
        spec = parse_query(q)
    except SpecError:
        assert got is None
        return
    if got is None:
        return  # a valid query outside the fast shapes: parse_query decides (as it just did)
    ident, shape, row = got
    lo, hi = spec.bounds()
    assert ident == spec.id and row == (*lo, *hi, spec.threshold)
    assert [type(v) for v in row] == [float] * (len(row) - 1) + [int]
    assert shape == ("threshold", tuple(spec.range_columns()), spec.weight, spec.key_items())
    assert ThresholdGroup.params_of(spec) == {"cols": list(shape[1]), "weight": shape[2], "keys": [list(kv) for kv in shape[3]]}
    assert shape[1] and set(shape[1]) | {c for c, _ in shape[3]} | ({shape[2]} if shape[2] else set()) == spec.columns()


def test_fast_spec_common_shapes():
    q = {"id": "a", "type": "threshold", "where": {"y": [None, 4], "x": [1, 2.5], "s": "AAPL"}, "weight": "w", "threshold": 3}
    assert fast_spec(q) == ("a", ("threshold", ("x", "y"), "w", (("s", "AAPL"),)), (1.0, -math.inf, 2.5, 4.0, 3))
    for bad in ({"where": {"x": [2, 1]}}, {"where": {"x": [math.nan, 1]}}, {"threshold": 0}, {"threshold": 2**53 + 1},
                {"where": {"x": [1, 2], "k": 1.5}}, {"where": {"k": "a"}}, {"type": "window_aggregate"}):
        assert fast_spec(q | bad) is None, bad


# ----------------------------------------------------------------------------- JSON lines


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.sampled_from(['{"op":"register"}', "{not json", '"x"', "1" * 25, '{"a": 12345678901234567890123}', "NaN",
                     '[1, 2', '3]', "\ufeff{}", '"\\ud800"', "", " [1] ", "1e400"]),
    st.text(max_size=8)), max_size=12))
def test_loads_many_equals_loads_one_by_one(lines):
    def one(x):
        try:
            return ("ok", loads(x))
        except ValueError as e:
            return ("err", str(e))

    got = [("err", str(v)) if isinstance(v, ValueError) else ("ok", v) for v in loads_many(lines)]
    assert json.dumps(got) == json.dumps([one(x) for x in lines])


# ----------------------------------------------------------------------------- the engine


def _one_by_one():
    """The engine with the bulk path replaced by one operation at a time."""
    return (mock.patch.object(oprun, "register_run", lambda eng, ops, n: [eng._apply(op, n) for op in ops]),
            mock.patch.object(oprun, "parse_ops", lambda raws: [oprun.parse_op(r) for r in raws]))


def _replay(stream: pa.Table, chunks: list[list], algos=None) -> tuple[list, dict, bytes]:
    """Operations given in chunks: chunk 0 before the stream, chunk k after batch k-1 (late or
    pending operations); the stream in batches of 3 rows."""
    eng = Engine(algos, columns=set(stream.column_names))
    out = []
    for k, chunk in enumerate(chunks):
        eng.add_operations(chunk)
        if 3 * k < stream.num_rows:
            out.append(eng.process(stream.slice(3 * k, 3)))
    while 3 * len(chunks) < stream.num_rows:
        out.append(eng.process(stream.slice(3 * len(chunks), 3)))
        chunks = [*chunks, []]
    out.append(eng.take_outputs())
    snap = eng.snapshot()
    out.append(eng.finish())
    return [r for t in out for r in output_rows(t)], dict(eng.counts), snap


@st.composite
def op_logs(draw):
    n = draw(st.integers(1, 12))
    ids = [f"q{i}" for i in range(draw(st.integers(1, 8)))]
    chunks = []
    for _ in range(draw(st.integers(1, 4))):
        chunk = []
        for _ in range(draw(st.integers(0, 25))):
            kind = draw(st.integers(0, 12))
            at = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 5, n, n + 2]))
            if kind <= 6:  # registrations, mostly of fast shapes, in runs at one position
                ident = draw(st.sampled_from(ids))
                if kind <= 3:
                    lo = draw(st.integers(0, 5))
                    where = {"x": [lo, lo + draw(st.integers(0, 5))]}
                    if draw(st.booleans()):
                        where["k"] = draw(st.sampled_from(["a", "b", 1]))
                    if draw(st.booleans()):
                        where["y"] = [None, draw(st.integers(0, 9))]
                    q = {"id": ident, "type": "threshold", "where": where, "threshold": draw(st.integers(1, 9))}
                    if draw(st.booleans()):
                        q["weight"] = "w"
                elif kind == 4:
                    q = draw(threshold_queries(ident=ident))
                elif kind == 5 and draw(st.booleans()):
                    q = {"id": ident, "type": "window_aggregate", "agg": draw(st.sampled_from(["sum", "max", "bogus"])),
                         "column": "x", "rows": [3, 0]}
                elif kind == 5:  # quantiles: plain shapes (fast_spec) and others beside them
                    q = draw(quantile_queries(ident=ident))
                else:
                    q = {"id": ident, "type": "threshold", "where": {"x": [0, 9], "k": draw(st.sampled_from([0.5, -0.0, 0.0]))},
                         "threshold": 2}
                op = {"op": "register", "at": at, "query": q}
                if not draw(st.integers(0, 9)):
                    op = {"op": "register", "at": draw(st.sampled_from([-1, 1.0, True, "2"])), "query": q}
                chunk.append(op)
                for _ in range(draw(st.integers(0, 3)) if kind <= 3 or q.get("type") == "quantile" else 0):  # a run
                    more = {"phi": draw(st.sampled_from([0.1, 0.5, 1.0]))} if q.get("type") == "quantile" else {}
                    chunk.append({"op": "register", "at": at, "query": {**q, **more, "id": draw(st.sampled_from(ids))}})
            elif kind <= 9:
                chunk.append({"op": draw(st.sampled_from(["terminate", "lookup"])), "at": at, "id": draw(st.sampled_from([*ids, "zz"]))})
            elif kind == 10:
                chunk.append(draw(st.sampled_from(["{broken", "[]", '{"op": "explode"}', '{"op": []}', "7", '{"op":"terminate"}'])))
            else:
                chunk.append({"op": "register", "at": at, "query": "nope"})
        as_lines = draw(st.booleans())
        chunks.append([json.dumps(o) if as_lines and isinstance(o, dict) and not any(
            isinstance(v, float) and not math.isfinite(v) for v in _floats(o)) else o for o in chunk])
    stream = pa.table({"x": [float(draw(st.integers(0, 9))) for _ in range(n)], "y": [1.0] * n,
                       "w": [draw(st.integers(1, 3)) for _ in range(n)], "k": [draw(st.sampled_from(["a", "b", "1"])) for _ in range(n)]})
    return stream, chunks


def _norm(x):
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_norm(v) for v in x]
    if isinstance(x, np.ndarray):
        return (str(x.dtype), x.shape, x.tobytes())
    return x


def _where_differ(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return next((d for k in a if (d := _where_differ(a[k], b[k], f"{path}/{k}"))), None)
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return next((d for i, (x, y) in enumerate(zip(a, b, strict=True)) if (d := _where_differ(x, y, f"{path}[{i}]"))), None)
    return None if a == b else f"{path}: {a!r:.300} != {b!r:.300}"


def _floats(o):
    if isinstance(o, dict):
        for v in o.values():
            yield from _floats(v)
    elif isinstance(o, list):
        for v in o:
            yield from _floats(v)
    elif isinstance(o, float):
        yield o


@settings(max_examples=150, deadline=None)
@given(op_logs())
def test_bulk_operations_equal_one_at_a_time(log):
    stream, chunks = log
    algos = {"threshold": "scan", "windows": "rint"}  # deterministic states (auto's hold timings); rint refuses MAX
    got = _replay(stream, chunks, algos)
    a, b = _one_by_one()
    with a, b:
        want = _replay(stream, chunks, algos)
    assert got[0] == want[0]
    assert got[1] == want[1]
    g, w = _norm(unpack(got[2])), _norm(unpack(want[2]))
    for snap in (g, w):  # quantile summaries' buffers hold unused room whose bytes vary from run to run
        for grp in snap["groups"]:
            if grp["key"].startswith('["quantiles"'):
                grp["state"].pop("op")
    assert g == w, _where_differ(g, w)  # snapshots: ids, specs, groups, operator state


@pytest.mark.parametrize("algo", ["sweep", "scan", "interval_tree"])
def test_many_registrations_in_runs_mature_as_one_by_one(algo):
    # 300 queries of three shapes, runs at three positions, duplicates and bad ones among them
    ops = []
    for i in range(300):
        where = {"x": [i % 7, i % 7 + 3]} if i % 3 else {"x": [0, 9], "y": [None, 5]}
        if i % 5 == 0:
            where["k"] = "a"
        ops.append({"op": "register", "at": (i // 100) * 4, "query": {"id": f"q{i % 290}", "type": "threshold",
                                                                    "where": where, "threshold": 1 + i % 11}})
    ops.insert(50, {"op": "register", "at": 0, "query": {"id": "bad", "type": "threshold", "where": {"x": [2, 1]}, "threshold": 1}})
    lines = [json.dumps(o) for o in ops]
    stream = pa.table({"x": [float(i % 10) for i in range(30)], "y": [float(i % 6) for i in range(30)], "k": ["a", "b"] * 15})
    slow = []
    apply = Engine._apply
    with mock.patch.object(Engine, "_apply", lambda self, op, n: slow.append(op) or apply(self, op, n)):
        got = _replay(stream, [lines], {"threshold": algo})
    # one by one: the first query of each of the 4 shapes, the bad one, and (interval_tree) the 100
    # 2D queries, whose shapes it refuses and are never learned
    assert len(slow) == (4 + 1 if algo != "interval_tree" else 2 + 1 + 100)
    a, b = _one_by_one()
    with a, b:
        want = _replay(stream, [lines], {"threshold": algo})
    assert got[:2] == want[:2] and _norm(unpack(got[2])) == _norm(unpack(want[2]))
    assert sum(r["event"] == "matured" for r in got[0]) > 100
    # q0..q9 again; interval_tree (1D) refuses the 2D queries, q0, q3, q6 and q9 among them
    assert sum("duplicate id" in (r.get("reason") or "") for r in got[0]) == (6 if algo == "interval_tree" else 10)
    assert sum("unsupported by" in (r.get("reason") or "") for r in got[0]) == (97 if algo == "interval_tree" else 0)


def test_shapes_are_relearned_when_the_engine_columns_change():
    eng = Engine(columns={"x"})
    q = {"id": "a", "type": "threshold", "where": {"x": [0, 1]}, "weight": "w", "threshold": 1}
    eng.add_operations([{"op": "register", "query": q}])  # no column w: rejected, shape not learned
    eng.columns = {"x", "w"}
    eng.add_operations([{"op": "register", "query": {**q, "id": "b"}}, {"op": "register", "query": {**q, "id": "c"}}])
    eng.columns = {"x"}  # the learned shape must not let a query through without its column
    eng.add_operations([{"op": "register", "query": {**q, "id": "d"}}])
    out = output_rows(eng.take_outputs())
    assert [r["id"] for r in out] == ["a", "d"] and all("does not have" in r["reason"] for r in out)
    assert eng.ids == ["b", "c"]


def test_quantile_registrations_in_runs_equal_one_by_one():
    """Plain quantile specs at one position go through QuantileGroup.register_many (asserted):
    the same updates, answers and snapshot as one at a time."""
    from vigil.quantiles.group import QuantileGroup

    ops = []
    for i in range(60):
        q = {"id": f"q{i}", "type": "quantile", "column": "x", "phi": [0.1, 0.5, 0.9][i % 3], "epsilon": 0.05}
        if i % 4 == 1:
            q["rows"] = 7
        if i % 2:
            q["notify"] = True
        ops.append({"op": "register", "at": 0 if i < 40 else 5, "query": q})
    ops += [{"op": "lookup", "at": 9, "id": f"q{i}"} for i in range(0, 60, 4)]
    x = np.random.default_rng(3).random(30)
    stream = pa.table({"x": x, "y": x, "w": np.ones(30, np.int64), "k": ["a"] * 30})
    chunks = [[json.dumps(o) for o in ops]]
    calls = []
    real = QuantileGroup.register_many

    def spy(self, qids, rows, start):
        calls.append(len(qids))
        return real(self, qids, rows, start)

    with mock.patch.object(QuantileGroup, "register_many", spy):
        got = _replay(stream, chunks)
    assert sum(calls) >= 50
    a, b = _one_by_one()
    with a, b:
        want = _replay(stream, chunks)
    assert got[0] == want[0] and any(r["event"] == "update" for r in got[0])
    assert got[1] == want[1]
    # snapshots: restored, they answer alike (their raw bytes are not compared: the suffix
    # summaries' buffers hold unused room whose bytes differ from run to run, even one by one)
    more = pa.table({"x": x[::-1].copy(), "y": x, "w": np.ones(30, np.int64), "k": ["a"] * 30})
    looks = [json.dumps({"op": "lookup", "at": 31 + i, "id": f"q{i}"}) for i in range(60)]
    after = []
    for snap in (got[2], want[2]):
        eng = Engine.restore(snap)
        eng.add_operations(looks)
        after.append(output_rows(pa.concat_tables([eng.process(more), eng.finish()])))
    assert after[0] == after[1] and sum(r["event"] == "answer" for r in after[0]) == 60
    g, w = (_norm(unpack(x)) for x in (got[2], want[2]))  # and everything but the operators' raw state
    for snap in (g, w):
        for grp in snap["groups"]:
            grp["state"].pop("op")
    assert g == w, _where_differ(g, w)
