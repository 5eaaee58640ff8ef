"""Query specs: one pydantic model per query type (docs/queries.md, generated from these models by
``vigil.querydoc``); all validation of a spec lives here.

``parse_query(obj, columns=None)`` turns a JSON object into a spec or raises :class:`SpecError`
whose message names the field and the problem (``threshold: must be an integer >= 1``).
Every spec knows the stream columns it references (:meth:`columns`) and, for joins, the
columns per relation (:meth:`relation_columns`), so the engine can check them against a stream.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from .spec_base import (  # noqa: F401  (re-exported: the specs' API)
    Bound,
    Number,
    SpecError,
    Where,
    _check_range,
    _finite,
    _Spec,
    check_where,
    where_keys,
    where_ranges,
)
from .spec_quantile import QuantileSpec


class ThresholdSpec(_Spec):
    """RTS query: matures at the first element with total weight in the rectangle >= threshold
    (again and again with ``repeat``)."""

    type: Literal["threshold"]
    where: Where = Field(description=(
        "The rectangle and the keys: column -> [lo, hi], a closed range on a numeric column (null = "
        "unbounded), or column -> scalar, an equality on a key column (compared as text). At least one "
        "range; the range columns are the query's dimensions."))
    weight: StrictStr | None = Field(None, description=(
        "Column holding each element's weight, an integer in 1..2^53; absent: every element weighs 1."))
    threshold: StrictInt = Field(ge=1, description=(
        "tau, in 1..2^53: the query matures at the first element after its registration that brings the "
        "total weight of the elements inside `where` to >= tau; it reports `matured` once and ends "
        "(unless `repeat`)."))
    repeat: StrictBool = Field(False, description=(
        "Re-arm after each maturity: the query counts again from zero starting with the element after "
        "the one at which it matured (the weight by which that element overshot tau is not carried "
        "over), with the same threshold and rectangle, and matures again, one `matured` event per "
        "maturity; it stays alive until terminated."))

    @field_validator("threshold")
    @classmethod
    def _threshold(cls, v: int) -> int:
        # the contract's range (vigil.threshold._limits.MAX_THRESHOLD): every integer up to 2**53
        # is exact in JSON numbers and float64, and every implementation is exact inside it
        if v > 2**53:
            raise ValueError(f"threshold {v} exceeds the limit 2**53 = {2**53}")
        return v

    @field_validator("where")
    @classmethod
    def _where(cls, v: dict) -> dict:
        if not any(isinstance(x, list) for x in v.values()):
            raise ValueError("needs at least one range column, e.g. {\"price\": [100, 105]}")
        return check_where(v)

    family: ClassVar[str] = "threshold"

    def range_columns(self) -> tuple[str, ...]:
        return tuple(sorted([c for c, x in self.where.items() if type(x) is list]))

    def key_items(self) -> tuple[tuple[str, Any], ...]:
        return where_keys(self.where)

    def bounds(self) -> tuple[list[float], list[float]]:
        # the ranges were checked when the spec was validated (_where)
        los, his = [], []
        for c in self.range_columns():
            lo, hi = self.where[c]
            los.append(-math.inf if lo is None else float(lo))
            his.append(math.inf if hi is None else float(hi))
        return los, his

    def columns(self) -> set[str]:
        cols = set(self.where)
        if self.weight:
            cols.add(self.weight)
        return cols


WindowAgg = Literal["sum", "count", "avg", "min", "max", "quantile"]


class WindowAggregateSpec(_Spec):
    """Sliding-window aggregate (rows or time window; suffix when NR/TR = 0, historical otherwise)."""

    type: Literal["window_aggregate"]
    agg: WindowAgg = Field(description=(
        "The aggregate; an empty window answers null (count answers 0). Null values are ignored."))
    column: StrictStr | None = Field(None, description=(
        "Numeric column aggregated; required except for count (count without a column counts elements)."))
    phi: Number | None = Field(None, description=(
        "Only with agg quantile, in (0, 1]: the answer is the value of 1-based rank max(1, ceil(phi*N))."))
    rows: list[StrictInt] | None = Field(None, description=(
        "[NL, NR], NL > NR >= 0, NL <= 2^53: after element n the window holds the elements with seq in "
        "[n-NL+1, n-NR]. Give exactly one of rows and time."))
    time: list[Number] | None = Field(None, description=(
        "[TL, TR], TL > TR >= 0, finite: the elements with time in (now-TL, now-TR], now = the time of the "
        "last element (the stream's own clock)."))
    time_column: StrictStr | None = Field(None, description=(
        "Time column of a time window (absent: ts); not allowed with rows."))
    where: Where | None = Field(None, description=(
        "Only the matching rows are in the window, as threshold queries' `where`: column -> scalar, an "
        "equality on a key column (compared as text), column -> [lo, hi], a closed range (null = "
        "unbounded). `rows` then counts matching rows: [5, 0] with {\"symbol\": \"AAPL\"} = the last 5 "
        "AAPL rows."))
    group_by: StrictStr | list[StrictStr] | None = Field(None, description=(
        "Key column(s): one result per key value (compared as text), each over that key's matching rows; "
        "a lookup answers one `answer` per key whose window holds an element (its texts in `keys`), by key, "
        "or one answer with an empty key list when no key does."))

    _where = field_validator("where")(classmethod(lambda cls, v: v if v is None else check_where(v)))

    @model_validator(mode="after")
    def _check(self) -> WindowAggregateSpec:
        gb = self.group_keys()
        if self.group_by is not None and (not gb or len(set(gb)) != len(gb)):
            raise ValueError("group_by: name one or more distinct key columns")
        for c in gb:
            if isinstance((self.where or {}).get(c), list):
                raise ValueError(f"group_by: {c!r} is a range column of where; group by key columns")
        if self.column is None and self.agg != "count":
            raise ValueError(f"column: required for agg {self.agg!r}")
        if self.agg == "quantile":
            if self.phi is None:
                raise ValueError("phi: required for agg 'quantile'")
            if not (0 < self.phi <= 1):
                raise ValueError(f"phi: must lie in (0, 1], got {self.phi}")
        elif self.phi is not None:
            raise ValueError("phi: only allowed with agg 'quantile'")
        if (self.rows is None) == (self.time is None):
            raise ValueError("rows/time: give exactly one of rows [NL, NR] or time [TL, TR]")
        win = self.rows if self.rows is not None else self.time
        name = "rows" if self.rows is not None else "time"
        if len(win) != 2:
            raise ValueError(f"{name}: must be [{name[0].upper()}L, {name[0].upper()}R]")
        left, right = win
        if any(isinstance(x, float) and not math.isfinite(x) for x in win):
            raise ValueError(f"{name}: bounds must be finite numbers")
        if right < 0:
            raise ValueError(f"{name}: right end must be >= 0, got {right}")
        if left <= right:
            raise ValueError(f"{name}: window [{left}, {right}] needs left > right >= 0")
        if self.rows is not None and self.time_column is not None:
            raise ValueError("time_column: only allowed with a time window")
        return self

    family: ClassVar[str] = "windows"

    @property
    def tcol(self) -> str | None:
        return None if self.time is None else (self.time_column or "ts")

    def group_keys(self) -> list[str]:
        """The group_by columns, as a list."""
        return [] if self.group_by is None else [self.group_by] if isinstance(self.group_by, str) else list(self.group_by)

    def key_columns(self) -> list[str]:
        """Every key column of the query (where equalities and group_by), sorted: its substream key."""
        return sorted({c for c, _ in where_keys(self.where or {})} | set(self.group_keys()))

    def columns(self) -> set[str]:
        cols = {self.column} if self.column else set()
        if self.tcol:
            cols.add(self.tcol)
        return cols | set(self.where or {}) | set(self.group_keys())


class SubstreamFilterSpec(_Spec):
    """Keys whose COUNT/SUM over the last T time units lies in the open range (v1, v2)."""

    type: Literal["substream_filter"]
    agg: Literal["count", "sum"] = Field(description="COUNT or SUM of each key's elements in the window.")
    column: StrictStr | None = Field(None, description=(
        "Numeric column summed (required for sum); count counts its non-null values, or elements without it."))
    key: StrictStr = Field(description=(
        "Key column splitting the stream into substreams; the answer is the sorted list of matching keys."))
    time: Number = Field(gt=0, description=(
        "T > 0, finite: the window is the elements with time in (now-T, now], now = the last element's time."))
    time_column: StrictStr = Field("ts", description="Time column.")
    range: list[Bound] = Field(description=(
        "(v1, v2), an open range (null = unbounded), v1 < v2: the keys with at least one element in the "
        "window whose aggregate lies strictly inside it."))
    epsilon: Number | None = Field(None, description=(
        "In (0, 1), one-sided ranges only: answer approximately (CI-COUNT / CI-SUM): a superset of the "
        "exact keys, each satisfying the range relaxed by epsilon. Absent: exact."))

    @model_validator(mode="after")
    def _check(self) -> SubstreamFilterSpec:
        if self.column is None and self.agg == "sum":
            raise ValueError("column: required for agg 'sum'")
        if not _finite(self.time):
            raise ValueError("time: must be finite")
        try:
            lo, hi = _check_range(self.range, open_range=True)
        except ValueError as e:
            raise ValueError(f"range: {e}") from None
        if self.epsilon is not None:
            if not (0 < self.epsilon < 1):
                raise ValueError(f"epsilon: must lie in (0, 1), got {self.epsilon}")
            if math.isfinite(lo) and math.isfinite(hi):
                raise ValueError("epsilon: only one-sided ranges ([v1, null] or [null, v2]) are approximable")
        return self

    family: ClassVar[str] = "substream"

    def bounds(self) -> tuple[float, float]:
        return _check_range(self.range, open_range=True)

    def columns(self) -> set[str]:
        cols = {self.key, self.time_column}
        if self.column:
            cols.add(self.column)
        return cols


class _JoinSpec(_Spec):
    left: StrictStr = Field(min_length=1, description=(
        "Relation of the left tuple r: the value of the stream's `rel` column on its rows."))
    right: StrictStr = Field(min_length=1, description="Relation of the right tuple s; not left.")
    left_on: StrictStr = Field(description=(
        "Column of r joined on: a number for band_join, an equality key (compared as text) otherwise."))
    right_on: StrictStr = Field(description="Column of s joined on, as left_on.")
    select: dict[Literal["left", "right"], list[StrictStr]] | None = Field(None, description=(
        "Optional: columns of r (`left`) and of s (`right`) to carry in each `join` event, e.g. "
        "{\"left\": [\"symbol\", \"price\"], \"right\": [\"price\"]}; the event then holds their values "
        "(`left` / `right` objects; a null value is null). Absent: the event holds the seqs only."))

    @model_validator(mode="after")
    def _rels(self):
        if self.left == self.right:
            raise ValueError("right: must name a relation other than left")
        for side, cs in (self.select or {}).items():
            if not cs or len(set(cs)) < len(cs) or not all(cs):
                raise ValueError(f"select: {side} must list distinct, non-empty column names")
        return self

    family: ClassVar[str] = "joins"

    def relation_columns(self) -> dict[str | None, set[str]]:
        return {self.left: {self.left_on}, self.right: {self.right_on}}

    def columns(self) -> set[str]:
        return set().union(*self.relation_columns().values(), *(self.select or {}).values())


class BandJoinSpec(_JoinSpec):
    """Band join: pairs (r, s) with s.right_on - r.left_on in [lo, hi]."""

    type: Literal["band_join"]
    band: list[Number] = Field(description=(
        "[lo, hi], finite, lo <= hi: the pairs with lo <= s.right_on - r.left_on <= hi."))

    @field_validator("band")
    @classmethod
    def _band(cls, v: list) -> list:
        if len(v) != 2:
            raise ValueError("must be [lo, hi]")
        if not all(_finite(x) for x in v):
            raise ValueError("bounds must be finite numbers")
        if v[0] > v[1]:
            raise ValueError(f"inverted band [{v[0]}, {v[1]}]: lo must be <= hi")
        return v

    left_key: StrictStr | None = Field(None, description=(
        "Optional equality key of r (compared as text), with right_key: the pairs also have r.left_key = "
        "s.right_key (ON r.symbol = s.symbol AND s.price - r.price BETWEEN lo AND hi)."))
    right_key: StrictStr | None = Field(None, description="Equality key of s, as left_key (both or neither).")

    @model_validator(mode="after")
    def _keys(self):
        if (self.left_key is None) != (self.right_key is None):
            raise ValueError("left_key and right_key: give both or neither")
        return self

    def relation_columns(self) -> dict[str | None, set[str]]:
        cols = super().relation_columns()
        if self.left_key is not None:
            cols[self.left].add(self.left_key)
            cols[self.right].add(self.right_key)
        return cols


def _check_ranges(v: dict) -> dict:
    for col, r in v.items():
        try:
            _check_range(r)
        except ValueError as e:
            raise ValueError(f"column {col!r}: {e}") from None
    return v


class SelectJoinSpec(_JoinSpec):
    """Equality join r.left_on = s.right_on with local range selections on each side."""

    type: Literal["select_join"]
    left_range: dict[StrictStr, list[Bound]] = Field(default_factory=dict, description=(
        "Selections on r: column -> [lo, hi], a closed range (null = unbounded); a null value is in no range."))
    right_range: dict[StrictStr, list[Bound]] = Field(default_factory=dict, description=(
        "Selections on s, as left_range."))

    _ranges = field_validator("left_range", "right_range")(classmethod(lambda cls, v: _check_ranges(v)))

    def relation_columns(self) -> dict[str | None, set[str]]:
        return {
            self.left: {self.left_on, *self.left_range},
            self.right: {self.right_on, *self.right_range},
        }

    def range_bounds(self, side: str) -> dict[str, tuple[float, float]]:
        rng = self.left_range if side == "left" else self.right_range
        return {c: _check_range(r) for c, r in rng.items()}


class WindowJoinSpec(SelectJoinSpec):
    """A select join whose pairs also satisfy |r.T - s.T| < window. ``max_window`` (optional, >=
    window) declares the largest window any query sharing this join's group will have: the group
    then keeps only the tuples a window of that size can still pair (docs/contract.md)."""

    type: Literal["window_join"]  # type: ignore[assignment]
    window: Number | list[Number] = Field(description=(
        "w > 0, finite: the pairs also satisfy |r.T - s.T| < w; or [lo, hi], finite, lo <= hi (an interval "
        "join, as Flink's): the pairs satisfy lo <= s.T - r.T <= hi, e.g. [-5, 10]."))
    time_column: StrictStr = Field("ts", description="Time column T of both relations.")
    max_window: Number | None = Field(None, description=(
        "Optional, >= window (above max(-lo, hi) for [lo, hi]): the largest window of any query of this "
        "join's group; the group then keeps only the tuples such a window can still pair (bounded memory, "
        "same outputs)."))

    @field_validator("window", "max_window")
    @classmethod
    def _w(cls, v):
        if isinstance(v, list):
            if len(v) != 2 or not all(_finite(x) for x in v):
                raise ValueError("must be [lo, hi], two finite numbers")
            if v[0] > v[1]:
                raise ValueError(f"inverted interval [{v[0]}, {v[1]}]: lo must be <= hi")
            return v
        if v is not None and (not _finite(v) or v <= 0):
            raise ValueError("must be a finite number > 0")
        return v

    def reach(self) -> float:
        """The largest |r.T - s.T| a pair can have (w, or max(-lo, hi) of an interval)."""
        w = self.window
        return float(max(-w[0], w[1])) if isinstance(w, list) else float(w)

    @model_validator(mode="after")
    def _wmax(self):
        if self.max_window is None:
            return self
        if isinstance(self.window, list):
            if self.max_window <= self.reach():
                raise ValueError(f"max_window {self.max_window} must exceed the window's reach {self.reach():g} "
                                 f"(window {self.window} includes its bounds)")
        elif self.max_window < self.window:
            raise ValueError(f"max_window {self.max_window} is below window {self.window}")
        return self

    def relation_columns(self) -> dict[str | None, set[str]]:
        cols = super().relation_columns()
        for c in cols.values():
            c.add(self.time_column)
        return cols


Spec = Annotated[
    ThresholdSpec
    | WindowAggregateSpec
    | SubstreamFilterSpec
    | BandJoinSpec
    | SelectJoinSpec
    | WindowJoinSpec
    | QuantileSpec,
    Field(discriminator="type"),
]

SPEC_TYPES: dict[str, type[_Spec]] = {
    "threshold": ThresholdSpec,
    "window_aggregate": WindowAggregateSpec,
    "substream_filter": SubstreamFilterSpec,
    "band_join": BandJoinSpec,
    "select_join": SelectJoinSpec,
    "window_join": WindowJoinSpec,
    "quantile": QuantileSpec,
}

AnySpec = (
    ThresholdSpec
    | WindowAggregateSpec
    | SubstreamFilterSpec
    | BandJoinSpec
    | SelectJoinSpec
    | WindowJoinSpec
    | QuantileSpec
)


def _reason(err: ValidationError) -> str:
    parts = []
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"] if not isinstance(x, int) or len(e["loc"]) == 1)
        # drop pydantic's union-branch tags such as 'list[...]' from the location
        loc = ".".join(p for p in loc.split(".") if "[" not in p and p not in {"function-after"})
        msg = e["msg"].removeprefix("Value error, ")
        if e["type"] == "extra_forbidden":
            msg = "unknown field"
        elif e["type"] == "missing":
            msg = "missing required field"
        parts.append(f"{loc}: {msg}" if loc else msg)
    # several union branches may each complain; keep distinct messages, in order
    seen: list[str] = []
    for p in parts:
        if p not in seen:
            seen.append(p)
    return "; ".join(seen)


# ----------------------------------------------------------------------------- fast path

_BIG = 2**53
_INF = math.inf
_THRESHOLD_FIELDS = frozenset({"id", "type", "where", "weight", "threshold", "repeat"})


def fast_spec(q: dict) -> tuple[str, tuple, tuple] | None:
    """``(id, shape, row)`` of a *valid* query of a common spec shape, decoded without pydantic,
    or None: then :func:`parse_query` decides (and gives the reason of a rejection), so the fast
    path never changes what is accepted, what is rejected or why (tests/test_oprun.py).

    Guarantees: if the result is not None, ``parse_query(q)`` accepts ``q``; two queries with
    equal ``shape`` have equal :meth:`_Spec.columns` and equal parameters for their family's
    adapter (``params_of``: they share one group); ``row`` carries the rest, in the layout of
    the adapter's ``register_many``. Shapes covered: ``threshold`` specs whose ``where`` holds
    ranges of ints (|v| <= 2^53), finite floats or nulls and equality values that are strings or
    ints (|v| <= 2^53); ``row`` = (lo_1..lo_d, hi_1..hi_d, threshold) over the range columns in
    sorted order, bounds as floats (null = -inf / +inf), the threshold negated for a re-arming query
    (``"repeat": true``); plain ``quantile`` specs (``id``, ``column``, a float ``phi`` in (0, 1],
    a float ``epsilon`` in (0, 1), ``rows`` an int >= 1 or absent, ``notify`` a bool or absent):
    ``row`` = (phi, epsilon, rows or None, notify). O(size of q)."""
    t = q.get("type")
    if t == "threshold" and type(t) is str:
        return _fast_threshold(q)
    if t == "quantile" and type(t) is str:
        return _fast_quantile(q)
    return None


_QUANTILE_FIELDS = frozenset({"id", "type", "column", "phi", "epsilon", "rows", "notify"})


def _fast_quantile(q: dict) -> tuple[str, tuple, tuple] | None:
    if not q.keys() <= _QUANTILE_FIELDS:
        return None
    ident, col, phi, eps = q.get("id"), q.get("column"), q.get("phi"), q.get("epsilon")
    rows, notify = q.get("rows"), q.get("notify", False)
    if type(ident) is not str or not ident or type(col) is not str or type(phi) is not float \
            or not 0 < phi <= 1 or type(eps) is not float or not 0 < eps < 1 or type(notify) is not bool:
        return None
    if rows is not None and (type(rows) is not int or rows < 1):
        return None
    return ident, ("quantile", col, rows, notify), (phi, eps, rows, notify)


def _fast_threshold(q: dict) -> tuple[str, tuple, tuple] | None:
    if not q.keys() <= _THRESHOLD_FIELDS:
        return None
    ident, where, tau, weight = q.get("id"), q.get("where"), q.get("threshold"), q.get("weight")
    rep = q.get("repeat", False)
    if type(rep) is not bool:
        return None
    if type(ident) is not str or not ident or type(where) is not dict or type(tau) is not int \
            or not 1 <= tau <= _BIG or (weight is not None and type(weight) is not str):
        return None
    if len(where) == 1:  # the commonest shape, one range of two floats, at once
        ((c, x),) = where.items()
        if type(x) is list and len(x) == 2 and type(c) is str:
            lo, hi = x
            if type(lo) is float and type(hi) is float and -_INF < lo <= hi < _INF:
                return ident, ("threshold", (c,), weight, ()), (lo, hi, -tau if rep else tau)
    cols, los, his, keys = [], [], [], []
    for c, x in where.items():
        if type(c) is not str:
            return None
        t = type(x)
        if t is list:
            if len(x) != 2:
                return None
            lo, hi = x
            t = type(lo)
            if lo is None:
                lo = -_INF
            elif t is int and -_BIG <= lo <= _BIG:
                lo = float(lo)
            elif t is not float or not -_INF < lo < _INF:  # NaN fails too
                return None
            t = type(hi)
            if hi is None:
                hi = _INF
            elif t is int and -_BIG <= hi <= _BIG:
                hi = float(hi)
            elif t is not float or not -_INF < hi < _INF:
                return None
            if lo > hi:
                return None
            cols.append(c)
            los.append(lo)
            his.append(hi)
        elif t is str or (t is int and -_BIG <= x <= _BIG):
            keys.append((c, x))
        else:
            return None
    if not cols:
        return None
    if len(cols) > 1:
        order = sorted(range(len(cols)), key=cols.__getitem__)
        cols, los, his = [cols[i] for i in order], [los[i] for i in order], [his[i] for i in order]
    if len(keys) > 1:
        keys.sort()
    return ident, ("threshold", tuple(cols), weight, tuple(keys)), (*los, *his, -tau if rep else tau)


def parse_query(obj: Any, columns: set[str] | dict[str | None, set[str]] | None = None) -> AnySpec:
    """Validate a query object. ``columns``: the stream's columns (a set, or a dict per relation
    with None for the columns of every row); references to other columns are rejected."""
    if not isinstance(obj, dict):
        raise SpecError(f"query must be a JSON object, got {type(obj).__name__}")
    qtype = obj.get("type")
    if "id" not in obj:
        raise SpecError("id: missing required field")
    if not isinstance(obj.get("id"), str) or not obj["id"]:
        raise SpecError("id: must be a non-empty string")
    if qtype not in SPEC_TYPES:
        raise SpecError(f"type: unknown query type {qtype!r}; expected one of {sorted(SPEC_TYPES)}")
    try:
        spec = SPEC_TYPES[qtype].model_validate(obj)
    except ValidationError as e:
        raise SpecError(_reason(e)) from None
    if columns is not None:
        have = columns if isinstance(columns, set) else set().union(*columns.values())
        missing = sorted(spec.columns() - have)
        if missing:
            raise SpecError(f"references column(s) {missing} that the stream does not have")
    return spec
