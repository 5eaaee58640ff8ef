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
                                  '"\\ud800"', '{"a": 1} x', "", "[1, 2,]", "\ufeff{}", '{"a": 1, "a": 2}'])
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


@settings(max_examples=300, deadline=None)
@given(values)
def test_dumps_round_trips_or_declines(v):
    out = dumps(v)
    if out is not None:
        assert same(json.loads(out), v)
