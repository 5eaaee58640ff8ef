"""Implementation registry: family -> {name: "module:Class"}, and each family's engine adapter;
resolved lazily so that importing vigil never compiles a kernel. Adding an algorithm = adding one
line here (a new family: a package with its adapter, one line in ADAPTERS and DEFAULTS); ``vigil.checks`` then
runs it through its family's conformance suite, and ``--algo FAMILY=NAME`` selects it."""

from __future__ import annotations

import functools
import importlib

IMPLEMENTATIONS: dict[str, dict[str, str]] = {
    "threshold": {
        "oracle": "vigil.threshold.oracle:ThresholdOracle",
        "dt": "vigil.threshold.dt:DT",
        "scan": "vigil.threshold.stabbing:Scan",
        "interval_tree": "vigil.threshold.stabbing:IntervalTreeStabbing",
        "seg_intv": "vigil.threshold.stabbing:SegIntvStabbing",
        "rtree": "vigil.threshold.stabbing:RTreeStabbing",
        "sweep": "vigil.threshold.sweep:Sweep",
        "auto": "vigil.threshold.auto:Auto",
    },
    "windows": {
        "oracle": "vigil.windows.oracle:WindowOracle",
        "rint": "vigil.windows.rint:RInt",
        "bint": "vigil.windows.bint:BInt",
        "slickdeque": "vigil.windows.slickdeque:SlickDeque",
        "bint_qnt": "vigil.windows.bint_qnt:BIntQnt",
        "wavelet_qnt": "vigil.windows.wavelet_qnt:WaveletQnt",
        "auto": "vigil.windows.auto:Auto",
        "lint": "vigil.windows.lint:LInt",
        "psoup": "vigil.windows.psoup:PSoup",
        "materialize_all": "vigil.windows.materialize:MaterializeAll",
        "materialize_none": "vigil.windows.materialize:MaterializeNone",
    },
    "substream": {
        "oracle": "vigil.windows.oracle:SubstreamOracle",
        "ci": "vigil.windows.ci:CI",
        "naive": "vigil.windows.substream_naive:SubstreamNaive",
    },
    "joins": {
        "oracle": "vigil.joins.oracle:JoinOracle",
        "join_first": "vigil.joins.strategies:JoinFirst",
        "ssi": "vigil.joins.strategies:SSI",
        "hotspot": "vigil.joins.strategies:Hotspot",
        "select_first": "vigil.joins.strategies:SelectFirst",
        "vanilla": "vigil.joins.strategies:Vanilla",
        "qouter": "vigil.joins.strategies:QOuter",
        "douter": "vigil.joins.strategies:DOuter",
        "mj": "vigil.joins.strategies:MJ",
        "dynamic": "vigil.joins.dynamic:Dynamic",
    },
    "quantiles": {
        "oracle": "vigil.quantiles.oracle:QuantileOracle",
        "casu": "vigil.quantiles.casu:CASU",
        "csu": "vigil.quantiles.csu:CSU",
        "su": "vigil.quantiles.su:SU",
        "naive": "vigil.quantiles.naive:Naive",
        "sliding": "vigil.quantiles.sliding:Sliding",
    },
}

# each family's engine adapter (vigil.group.Group): how its queries are grouped, which rows they
# see, how rows feed the operator and how answers become events
ADAPTERS: dict[str, str] = {
    "threshold": "vigil.threshold.group:ThresholdGroup",
    "windows": "vigil.windows.group:WindowGroup",
    "substream": "vigil.windows.group:SubstreamGroup",
    "joins": "vigil.joins.group:JoinGroup",
    "quantiles": "vigil.quantiles.group:QuantileGroup",
}

# the best implementation of each family, used when --algo does not say
DEFAULTS: dict[str, str] = {
    "threshold": "auto",
    "windows": "auto",
    "substream": "ci",
    "joins": "dynamic",
    "quantiles": "casu",
}

FAMILIES = tuple(IMPLEMENTATIONS)


@functools.cache
def _load(path: str) -> type:
    mod, cls = path.split(":")
    return getattr(importlib.import_module(mod), cls)


def adapter(family: str) -> type:
    """The engine adapter class of ``family`` (a :class:`vigil.group.Group`)."""
    return _load(ADAPTERS[family])


def resolve(family: str, name: str | None = None) -> type:
    if family not in IMPLEMENTATIONS:
        raise KeyError(f"unknown family {family!r}; expected one of {list(IMPLEMENTATIONS)}")
    name = name or DEFAULTS[family]
    impls = IMPLEMENTATIONS[family]
    if name not in impls:
        raise KeyError(f"unknown {family} implementation {name!r}; expected one of {sorted(impls)}")
    return _load(impls[name])
