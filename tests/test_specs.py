"""Each validation case of vigil.specs: every bad spec is rejected with a reason naming the field."""

import json

import pytest

from vigil.specs import SpecError, parse_query

T = {"id": "q", "type": "threshold", "where": {"price": [100, 105]}, "threshold": 10}
W = {"id": "w", "type": "window_aggregate", "agg": "sum", "column": "v", "rows": [10, 0]}
SF = {"id": "f", "type": "substream_filter", "agg": "count", "key": "k", "time": 300, "range": [5, None]}
BJ = {"id": "b", "type": "band_join", "left": "R", "right": "S", "left_on": "B", "right_on": "B", "band": [-1, 1]}
SJ = {"id": "s", "type": "select_join", "left": "R", "right": "S", "left_on": "B", "right_on": "B",
      "left_range": {"A": [1, 2]}, "right_range": {"C": [None, 3]}}
WJ = {**SJ, "id": "wj", "type": "window_join", "window": 5, "time_column": "T"}
Q = {"id": "m", "type": "quantile", "column": "v", "phi": 0.5, "epsilon": 0.01}


@pytest.mark.parametrize("spec", [T, W, SF, BJ, SJ, WJ, Q])
def test_valid_specs_parse(spec):
    s = parse_query(spec)
    assert s.id == spec["id"]
    assert parse_query(s.dump()) == s
    assert parse_query(json.loads(s.dump_json())) == s  # the form the engine keeps and snapshots


BAD = [
    ({**T, "type": "nope"}, "type: unknown query type"),
    ({k: v for k, v in T.items() if k != "threshold"}, "threshold: missing required field"),
    ({k: v for k, v in T.items() if k != "id"}, "id: missing"),
    ({**T, "colour": 1}, "colour: unknown field"),
    ({**T, "threshold": 0}, "threshold"),
    ({**T, "threshold": -3}, "threshold"),
    ({**T, "threshold": 2.5}, "threshold"),
    ({**T, "threshold": "10"}, "threshold"),
    ({**T, "where": {"price": [105, 100]}}, "inverted range"),
    ({**T, "where": {"price": [float("nan"), 100]}}, "NaN"),
    ({**T, "where": {"price": [1, 2, 3]}}, "exactly two bounds"),
    ({**T, "where": {"symbol": "AAPL"}}, "at least one range"),
    ({**W, "rows": [5, 5]}, "rows: window [5, 5] needs left > right"),
    ({**W, "rows": [3, 5]}, "rows"),
    ({**W, "rows": [5, -1]}, "rows: right end must be >= 0"),
    ({**W, "time": [10, 0]}, "exactly one of rows"),
    ({**W, "agg": "median"}, "agg"),
    ({**W, "agg": "quantile"}, "phi: required"),
    ({**W, "agg": "quantile", "phi": 0}, "phi: must lie in (0, 1]"),
    ({**W, "agg": "quantile", "phi": 1.5}, "phi: must lie in (0, 1]"),
    ({**W, "column": None}, "column: required"),
    ({**SF, "range": [5, 2]}, "range: inverted"),
    ({**SF, "epsilon": 1.0}, "epsilon: must lie in (0, 1)"),
    ({**SF, "epsilon": 0.1, "range": [1, 5]}, "one-sided"),
    ({**SF, "time": 0}, "time"),
    ({**BJ, "band": [2, 1]}, "inverted band"),
    ({**BJ, "right": "R"}, "right: must name a relation other than left"),
    ({**SJ, "left_range": {"A": [3, 1]}}, "inverted range"),
    ({**WJ, "window": 0}, "window"),
    ({**WJ, "window": -2}, "window"),
    ({**Q, "phi": 0}, "phi: must lie in (0, 1]"),
    ({**Q, "epsilon": 0}, "epsilon: must lie in (0, 1)"),
    ({**Q, "epsilon": 1}, "epsilon: must lie in (0, 1)"),
    ({**Q, "rows": 0}, "rows"),
    ("not an object", "JSON object"),
]


@pytest.mark.parametrize(("spec", "needle"), BAD)
def test_bad_specs_rejected_with_reason(spec, needle):
    with pytest.raises(SpecError) as e:
        parse_query(spec)
    assert needle in str(e.value), str(e.value)


def test_columns_must_exist():
    with pytest.raises(SpecError, match=r"column\(s\) \['price'\]"):
        parse_query(T, columns={"volume"})
    assert parse_query(WJ, columns={"rel", "A", "B", "C", "T"})
    with pytest.raises(SpecError, match="'T'"):
        parse_query(WJ, columns={"rel", "A", "B", "C"})


def test_referenced_columns():
    s = parse_query({**T, "where": {"price": [1, 2], "symbol": "AAPL"}, "weight": "shares"})
    assert s.columns() == {"price", "symbol", "shares"}
    assert s.range_columns() == ("price",) and s.key_items() == (("symbol", "AAPL"),)
    assert parse_query(SF).columns() == {"k", "ts"}
    assert parse_query(SJ).relation_columns() == {"R": {"B", "A"}, "S": {"B", "C"}}
