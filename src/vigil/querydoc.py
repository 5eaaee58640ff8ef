"""The query reference, generated from the pydantic models of :mod:`vigil.specs` so it cannot drift.

``schema(type)`` is the JSON Schema of one query type (or of every type: a discriminated union on
``type``), each with one example; ``markdown()`` renders docs/queries.md from those schemas: per
type every field with its JSON type, whether it is required or its default, its bounds and its
meaning (the ``description`` of the pydantic field), and the example. ``vigil schema [TYPE]``
prints the JSON, ``vigil schema --markdown`` (or ``python -m vigil.querydoc``) the page;
tests/test_docs.py checks that docs/queries.md equals ``markdown()`` and that every example is
accepted by :func:`vigil.specs.parse_query`. Nothing here validates: the models do.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import TypeAdapter

from .specs import SPEC_TYPES, Spec

# one example per type, each accepted by parse_query (tests/test_docs.py)
EXAMPLES: dict[str, dict[str, Any]] = {
    "threshold": {"id": "q1", "type": "threshold", "where": {"price": [100, 105], "symbol": "AAPL"},
                  "weight": "shares", "threshold": 100000},
    "window_aggregate": {"id": "w1", "type": "window_aggregate", "agg": "avg", "column": "price",
                         "time": [300, 0], "time_column": "ts"},
    "substream_filter": {"id": "f1", "type": "substream_filter", "agg": "sum", "column": "shares",
                         "key": "symbol", "time": 60, "range": [50000, None]},
    "band_join": {"id": "j1", "type": "band_join", "left": "buy", "right": "sell", "left_on": "price",
                  "right_on": "price", "band": [-0.5, 0.5]},
    "select_join": {"id": "j2", "type": "select_join", "left": "buy", "right": "sell", "left_on": "symbol",
                    "right_on": "symbol", "left_range": {"price": [100, 105]},
                    "right_range": {"shares": [1000, None]}},
    "window_join": {"id": "j3", "type": "window_join", "left": "buy", "right": "sell", "left_on": "symbol",
                    "right_on": "symbol", "left_range": {"price": [100, 105]}, "window": 10,
                    "time_column": "ts", "max_window": 60},
    "quantile": {"id": "p1", "type": "quantile", "column": "price", "phi": 0.99, "epsilon": 0.01,
                 "notify": True},
}

INTRO = """\
# Query reference

<!-- generated from the pydantic models of src/vigil/specs.py by `python -m vigil.querydoc`
(or `vigil schema --markdown`); do not edit: tests/test_docs.py checks it is current -->

A query is the `query` object of a `register` operation (`{"op": "register", "at": 0, "query":
{...}}`, see [contract.md](contract.md) for operations, positions and output events). Every query
has a string `id`, unique in the run, and a `type` that picks its family. A field the type does not
list is rejected, and so is a value outside its bounds, with a reason that names the field (e.g.
`threshold: Input should be greater than or equal to 1`). Numbers read from the stream obey the
contract's bound |v| <= 2^53. `vigil schema [TYPE]` prints the JSON Schema these tables come from.

| type | family | what it answers |
|---|---|---|
"""


def schema(qtype: str | None = None) -> dict[str, Any]:
    """JSON Schema of one query type (KeyError for an unknown one), or of every type when None."""
    if qtype is None:
        out = TypeAdapter(Spec).json_schema()
        for name, model in SPEC_TYPES.items():
            out["$defs"][model.__name__]["examples"] = [EXAMPLES[name]]
        return out
    out = SPEC_TYPES[qtype].model_json_schema()
    out["examples"] = [EXAMPLES[qtype]]
    return out


def schema_json(qtype: str | None = None) -> str:
    return json.dumps(schema(qtype), indent=2) + "\n"


def _type(s: dict[str, Any]) -> str:
    """A field's JSON type, written compactly: `number`, `string | null`, `[number | null, ...]`."""
    if "anyOf" in s:
        parts = [_type(x) for x in s["anyOf"]]
        if "integer" in parts and "number" in parts:
            parts.remove("integer")
        return " \\| ".join(dict.fromkeys(parts))
    if "const" in s:
        return json.dumps(s["const"])
    if "enum" in s:
        return " \\| ".join(json.dumps(x) for x in s["enum"])
    t = s.get("type")
    if t == "array":
        return f"[{_type(s.get('items', {}))}, ...]"
    if t == "object":
        return "{column: " + _type(s.get("additionalProperties", {})) + "}"
    return str(t)


_BOUNDS = (("minimum", ">= {}"), ("exclusiveMinimum", "> {}"), ("maximum", "<= {}"),
           ("exclusiveMaximum", "< {}"), ("minLength", "at least {} character(s)"))


def _bounds(s: dict[str, Any]) -> list[str]:
    out = [fmt.format(s[k]) for k, fmt in _BOUNDS if k in s]
    for x in s.get("anyOf", ()):
        out += _bounds(x)
    return out


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("``", "`").replace("|", "\\|")


def _section(qtype: str) -> str:
    model = SPEC_TYPES[qtype]
    s = model.model_json_schema()
    lines = [f"## `{qtype}`", "", _cell(s.get("description", "")).replace("\\|", "|"), "",
             "| field | type | required / default | meaning and bounds |", "|---|---|---|---|"]
    required = set(s.get("required", ()))
    props = s["properties"]
    for name in ("id", "type", *[k for k in props if k not in ("id", "type")]):
        f = props[name]
        if name == "type":
            desc = f"Always `{json.dumps(f['const'])}`."
        else:
            desc = f.get("description", "")
        bounds = _bounds(f)
        if bounds:
            desc += f" (schema: {', '.join(bounds)})"
        need = "required" if name in required else f"default `{json.dumps(f.get('default'))}`"
        if name not in required and "default" not in f:
            need = "default `{}`"  # default_factory=dict
        lines.append(f"| `{name}` | {_type(f)} | {need} | {_cell(desc)} |")
    lines += ["", "Example:", "", "```json", json.dumps(EXAMPLES[qtype]), "```", ""]
    return "\n".join(lines)


def markdown() -> str:
    """The text of docs/queries.md."""
    rows = []
    for name, model in SPEC_TYPES.items():
        first = _cell((model.__doc__ or "").split(". ")[0]).rstrip(".")
        rows.append(f"| [`{name}`](#{name}) | {model.family} | {first} |")
    return INTRO + "\n".join(rows) + "\n\n" + "\n".join(_section(t) for t in SPEC_TYPES)


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
