"""The `quantile` query spec (paper 004's continuous quantile queries; alerts, rank queries and
per-key queries, docs/contract.md). Part of :mod:`vigil.specs`, which re-exports it."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, StrictBool, StrictInt, StrictStr, field_validator, model_validator

from .spec_base import Number, Where, _finite, _Spec, check_where


class QuantileSpec(_Spec):
    """(phi, epsilon)-approximate quantile over the whole stream or the last ``rows`` elements."""

    type: Literal["quantile"]
    column: StrictStr = Field(description="Numeric column.")
    phi: Number | None = Field(None, description=(
        "In (0, 1]: the target rank is max(1, ceil(phi*N)) of the N elements. Give exactly one of phi "
        "and rank_of."))
    rank_of: Number | None = Field(None, description=(
        "A rank (CDF) query: the answer is the fraction of the window's values <= rank_of, within e of "
        "the exact fraction (e as for epsilon). Give exactly one of phi and rank_of."))
    epsilon: Number = Field(description=(
        "In (0, 1): the answer's rank lies within e*N + 1 of the target, e = max(epsilon, the run's "
        "--quantile-epsilon)."))
    rows: StrictInt | None = Field(default=None, ge=1, description=(
        "Window of the last `rows` elements; absent: every element after registration."))
    notify: StrictBool | Literal["cluster"] = Field(False, description=(
        "false: answered on lookup; true: an `update` event whenever the query's value changes; "
        "\"cluster\": the query follows its cluster's value (`cluster` / `cluster_update` events)."))
    above: Number | None = Field(None, description=(
        "An alert: the query pushes `alert` when its value goes above this (value > above) and `clear` "
        "when it comes back to <= rearm; no other event (docs/contract.md, quantile alerts)."))
    below: Number | None = Field(None, description=(
        "An alert the other way: `alert` when the value goes below this (value < below), `clear` when it "
        "comes back to >= rearm."))
    rearm: Number | None = Field(None, description=(
        "Hysteresis of an alert: the value at which it clears and re-arms (above: rearm <= above, below: "
        "rearm >= below); absent: the alert's own bound."))
    where: Where | None = Field(None, description=(
        "Only the matching rows are elements of the query, as threshold queries' `where`: column -> "
        "scalar, an equality on a key column (compared as text), column -> [lo, hi], a closed range "
        "(null = unbounded). `rows` then counts matching rows."))
    group_by: StrictStr | list[StrictStr] | None = Field(None, description=(
        "Key column(s): one result per key value (compared as text), each over that key's matching rows "
        "(with `rows`: its last `rows` of them); results carry their key in `keys`."))

    @field_validator("phi")
    @classmethod
    def _phi(cls, v):
        if v is not None and not (0 < v <= 1):
            raise ValueError(f"must lie in (0, 1], got {v}")
        return v

    _qwhere = field_validator("where")(classmethod(lambda cls, v: v if v is None else check_where(v)))

    @model_validator(mode="after")
    def _shape(self) -> QuantileSpec:
        if (self.phi is None) == (self.rank_of is None):
            raise ValueError("phi/rank_of: give exactly one of phi (a quantile) or rank_of (a rank)")
        for name in ("rank_of", "above", "below", "rearm"):
            x = getattr(self, name)
            if x is not None and not _finite(x):
                raise ValueError(f"{name}: must be a finite number")
        if self.above is not None and self.below is not None:
            raise ValueError("above/below: give at most one of them")
        alert = self.above is not None or self.below is not None
        if self.rearm is not None:
            if not alert:
                raise ValueError("rearm: only with above or below")
            if self.above is not None and self.rearm > self.above:
                raise ValueError(f"rearm: must be <= above ({self.rearm} > {self.above})")
            if self.below is not None and self.rearm < self.below:
                raise ValueError(f"rearm: must be >= below ({self.rearm} < {self.below})")
        if alert and self.notify:
            raise ValueError("notify: an alert (above/below) pushes alert/clear events; notify must be false")
        if alert and self.rank_of is not None:
            raise ValueError("above/below: alerts are on quantiles (phi), not on rank_of")
        gb = self.group_keys()
        if self.group_by is not None and (not gb or len(set(gb)) != len(gb)):
            raise ValueError("group_by: name one or more distinct key columns")
        for c in gb:
            if isinstance((self.where or {}).get(c), list):
                raise ValueError(f"group_by: {c!r} is a range column of where; group by key columns")
        if self.where is not None and not self.where:
            raise ValueError("where: name at least one column")
        if (self.where is not None or gb) and self.notify == "cluster":
            raise ValueError("notify: \"cluster\" is not served with where/group_by (use true)")
        if self.rank_of is not None and self.notify == "cluster":
            raise ValueError("notify: \"cluster\" is for quantiles (phi); a rank query takes true")
        return self

    @field_validator("epsilon")
    @classmethod
    def _eps(cls, v):
        if not (0 < v < 1):
            raise ValueError(f"must lie in (0, 1), got {v}")
        return v

    family: ClassVar[str] = "quantiles"

    def group_keys(self) -> list[str]:
        """The group_by columns, as a list."""
        return [] if self.group_by is None else [self.group_by] if isinstance(self.group_by, str) else list(self.group_by)

    def keyed(self) -> bool:
        """Does the query read a substream (where or group_by)?"""
        return self.where is not None or self.group_by is not None

    def columns(self) -> set[str]:
        return {self.column} | set(self.where or {}) | set(self.group_keys())
