"""vigil.jsonline.loads decodes exactly as json.loads (orjson is only a faster path)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.jsonline import dumps, loads

scalars = st.none() | st.booleans() | st.floats() | st.text() | st.integers() | \
    st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from([2**53 + 1, 2**63, -(2**63) - 1, 2**64, 10**19])
values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=4),
                      max_leaves=12)


def same(a, b) -> bool:
    return json.dumps(a) == json.dumps(b) and type(a) is type(b)


@settings(max_examples=300, deadline=None)
@given(values)
def test_same_as_json_loads(v):
    line = json.dumps(v)
    assert same(loads(line), json.loads(line))
    assert same(loads(line.encode()), json.loads(line))


@pytest.mark.parametrize("line", ['{"a": 18446744073709551616}', '{"at": -9223372036854775809}', "NaN", "[1e400]",
                                  '{"a": 1} x', "", "[1, 2,]", "\ufeff{}", '{"a": 1, "a": 2}'])
def test_edge_lines(line):
    try:
        want = ("ok", json.dumps(json.loads(line)))
    except ValueError as e:
        want = ("err", str(e))
    try:
        got = ("ok", json.dumps(loads(line)))
    except ValueError as e:
        got = ("err", str(e))
    assert got == want


@pytest.mark.parametrize("line", ['"\\ud800"', '{"id": "q\\udfff"}', '{"w": {"k": ["x\\ud83d"]}}', '"\ud800"'])
def test_lone_surrogate_refused(line):
    """json.loads accepts a lone surrogate; vigil refuses it (no output could carry it)."""
    with pytest.raises(ValueError, match="lone surrogate"):
        loads(line)


def test_surrogate_pair_kept():
    assert loads('{"id": "q\\ud83d\\ude00"}') == {"id": "q\U0001F600"}


def test_engine_rejects_lone_surrogate_lines():
    """Operations with a lone surrogate (ids, where values) are rejected as malformed, counted, and
    the run goes on; before, writing the outputs crashed the whole run."""
    import pyarrow as pa

    from vigil.engine import Engine
    from vigil.events import write_outputs

    lines = ['{"op":"register","at":0,"query":{"id":"ok","type":"quantile","column":"x","phi":0.5,"epsilon":0.1}}',
             '{"op":"lookup","at":1,"id":"q\\ud800"}', '{"op":"terminate","at":1,"id":"x\\udfff"}',
             '{"op":"register","at":1,"query":{"id":"s\\ud800","type":"quantile","column":"x","phi":0.5,'
             '"epsilon":0.1}}', '{"op":"lookup","at":2,"id":"ok"}']
    eng = Engine({}, 0.01, "pairs", columns={"x"})
    eng.add_operations(lines, [1, 2, 3, 4, 5])
    out = pa.concat_tables([eng.process(pa.table({"x": [1.0, 2.0, 3.0]})), eng.finish()])
    rows = out.to_pylist()
    rej = [r for r in rows if r["event"] == "rejected"]
    assert [r["reason"].split(":")[0] for r in rej] == ["line 2", "line 3", "line 4"]
    assert all("lone surrogate" in r["reason"] and r["id"] is None for r in rej)
    assert eng.counts["ops_rejected"] == 3
    assert [r["event"] for r in rows if r["id"] == "ok"] == ["answer"]
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        write_outputs(out, Path(d) / "o.jsonl")  # writable: nothing unencodable reached the outputs


@settings(max_examples=300, deadline=None)
@given(values)
def test_dumps_round_trips_or_declines(v):
    out = dumps(v)
    if out is not None:
        assert same(json.loads(out), v)
