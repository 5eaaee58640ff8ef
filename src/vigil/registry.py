"""Implementation registry: family -> {name: "module:Class"}; resolved lazily so that importing
vigil never compiles a kernel. Adding an algorithm = adding one line here; ``vigil.checks`` then
runs it through its family's conformance suite, and ``--algo FAMILY=NAME`` selects it."""

from __future__ import annotations

import importlib

IMPLEMENTATIONS: dict[str, dict[str, str]] = {
    "threshold": {
        "oracle": "vigil.threshold.oracle:ThresholdOracle",
        "dt": "vigil.threshold.dt:DT",
        "scan": "vigil.threshold.stabbing:Scan",
        "interval_tree": "vigil.threshold.stabbing:IntervalTreeStabbing",
        "seg_intv": "vigil.threshold.stabbing:SegIntvStabbing",
        "rtree": "vigil.threshold.stabbing:RTreeStabbing",
    },
    "windows": {
        "oracle": "vigil.windows.oracle:WindowOracle",
    },
    "substream": {
        "oracle": "vigil.windows.oracle:SubstreamOracle",
    },
    "joins": {
        "oracle": "vigil.joins.oracle:JoinOracle",
        "join_first": "vigil.joins.join_first:JoinFirst",
    },
    "quantiles": {
        "oracle": "vigil.quantiles.oracle:QuantileOracle",
    },
}

# the best implementation of each family, used when --algo does not say
DEFAULTS: dict[str, str] = {
    "threshold": "dt",
    "windows": "oracle",
    "substream": "oracle",
    "joins": "join_first",
    "quantiles": "oracle",
}

FAMILIES = tuple(IMPLEMENTATIONS)


def resolve(family: str, name: str | None = None) -> type:
    if family not in IMPLEMENTATIONS:
        raise KeyError(f"unknown family {family!r}; expected one of {list(IMPLEMENTATIONS)}")
    name = name or DEFAULTS[family]
    impls = IMPLEMENTATIONS[family]
    if name not in impls:
        raise KeyError(f"unknown {family} implementation {name!r}; expected one of {sorted(impls)}")
    mod, cls = impls[name].split(":")
    return getattr(importlib.import_module(mod), cls)
