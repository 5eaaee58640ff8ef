"""The base of the query specs (:mod:`vigil.specs`): the error type, the pydantic base model, numbers,
closed/open ranges and the `where` language shared by threshold, window and quantile queries."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr

Number = StrictInt | StrictFloat
Bound = Number | None


class SpecError(ValueError):
    """A spec that cannot be accepted; ``str(err)`` is the reason."""


def _finite(x: int | float) -> bool:
    """math.isfinite, False for an integer beyond float64's range (which it cannot convert)."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _check_range(v: list, *, open_range: bool = False) -> tuple[float, float]:
    if len(v) != 2:
        raise ValueError("a range is [lo, hi] with exactly two bounds (null = unbounded)")
    lo, hi = v
    for b in (lo, hi):
        if b is not None and (isinstance(b, bool) or not isinstance(b, int | float)):
            raise ValueError(f"range bound {b!r} is not a number")
        if isinstance(b, float) and math.isnan(b):
            raise ValueError("range bound is NaN")
        if isinstance(b, int) and not _finite(b):
            raise ValueError(f"range bound of {b.bit_length()} bits is beyond float64's range")
    flo = -math.inf if lo is None else float(lo)
    fhi = math.inf if hi is None else float(hi)
    if open_range:
        if flo >= fhi:
            raise ValueError(f"inverted or empty open range ({lo}, {hi}): lo must be < hi")
    elif flo > fhi:
        raise ValueError(f"inverted range [{lo}, {hi}]: lo must be <= hi")
    return flo, fhi


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, ser_json_inf_nan="constants")

    id: StrictStr = Field(min_length=1, description=(
        "The query's name, unique in a run (registering an id seen before is rejected); its events carry it."))

    family: ClassVar[str] = ""

    def columns(self) -> set[str]:
        """Every stream column this query references."""
        return set().union(*self.relation_columns().values()) if self.relation_columns() else set()

    def relation_columns(self) -> dict[str | None, set[str]]:
        """Columns referenced, per relation (None = every row)."""
        return {None: self.columns()}

    def dump(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)

    def dump_json(self) -> str:
        return self.model_dump_json(exclude_none=True)


Where = dict[StrictStr, list[Bound] | StrictStr | StrictInt | StrictFloat]


def check_where(v: dict) -> dict:
    """The `where` language of threshold and window queries: column -> [lo, hi] (a closed range,
    null = unbounded) or column -> scalar (an equality on a key column, compared as text)."""
    for col, x in v.items():
        if isinstance(x, list):
            try:
                _check_range(x)
            except ValueError as e:
                raise ValueError(f"column {col!r}: {e}") from None
        elif isinstance(x, float) and not math.isfinite(x):
            raise ValueError(f"column {col!r}: equality value must be finite")
    return v


def where_keys(where: dict) -> tuple[tuple[str, Any], ...]:
    """The equality items of a `where`, sorted by column."""
    return tuple(sorted((c, x) for c, x in where.items() if not isinstance(x, list)))


def where_ranges(where: dict) -> tuple[tuple[str, float, float], ...]:
    """The ranges of a `where` as (column, lo, hi) floats (null = -inf / +inf), sorted by column."""
    return tuple((c, -math.inf if x[0] is None else float(x[0]), math.inf if x[1] is None else float(x[1]))
                 for c, x in sorted(where.items()) if type(x) is list)
