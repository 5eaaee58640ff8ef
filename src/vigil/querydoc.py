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

# the same queries in SQL (vigil.sql): each compiles to its EXAMPLES spec (tests/test_sql.py)
SQL_EXAMPLES: dict[str, str] = {
    "threshold": "SELECT SUM(shares) FROM trades WHERE price BETWEEN 100 AND 105 AND symbol = 'AAPL' "
                 "HAVING SUM(shares) >= 100000",
    "window_aggregate": "SELECT AVG(price) FROM trades [RANGE 300 ON ts]",
    "substream_filter": "SELECT symbol FROM trades [RANGE 60] GROUP BY symbol HAVING SUM(shares) > 50000",
    "band_join": "SELECT * FROM buy r JOIN sell s ON s.price - r.price BETWEEN -0.5 AND 0.5",
    "select_join": "SELECT * FROM buy r JOIN sell s ON r.symbol = s.symbol "
                   "WHERE r.price BETWEEN 100 AND 105 AND s.shares >= 1000",
    "window_join": "SELECT /*+ MAX_WINDOW(60) */ * FROM buy r JOIN sell s "
                   "ON r.symbol = s.symbol AND ABS(r.ts - s.ts) < 10 WHERE r.price BETWEEN 100 AND 105",
    "quantile": "SELECT /*+ NOTIFY */ APPROX_QUANTILE(price, 0.99, 0.01) FROM trades",
}

SQL_SECTION = """\
## SQL

A query can also be written as one CQL-like `SELECT` (`vigil sql "SELECT ..."` prints its spec;
a register operation may carry `"sql"` and `"id"` instead of `"query"`,
`{"op": "register", "at": 0, "id": "q1", "sql": "SELECT ..."}`; `Monitor.register(sql, id=...)`
takes it too). The statement is parsed by sqlglot and must map onto exactly one query type; any
other statement is refused with the reason (a `rejected` event for a register operation). The
dialect, by type (each section above shows its example in SQL):

| type | SQL |
|---|---|
| `threshold` | `SELECT SUM(w) FROM t WHERE <ranges and equalities> HAVING SUM(w) >= tau` (or `COUNT(*)`: weight 1; `> tau` is `>= tau+1`, weights being integers) |
| `window_aggregate` | `SELECT AGG(col) FROM t [ROWS n]` or `[RANGE T]`, AGG one of `SUM COUNT AVG MIN MAX`, `COUNT(*)`, or `QUANTILE(col, phi)` (exact); per key: `... WHERE <equalities and ranges>` (`where`) and/or `SELECT k, AGG(col) ... GROUP BY k [, k2]` (`group_by`) |
| `substream_filter` | `SELECT k FROM t [RANGE T] GROUP BY k HAVING COUNT(*) > v1 [AND COUNT(*) < v2]` (or `COUNT(col)`, `SUM(col)`) |
| `band_join` | `SELECT * FROM r_rel r JOIN s_rel s ON s.b - r.a BETWEEN lo AND hi` (or `ON s.b BETWEEN r.a + lo AND r.a + hi`) |
| `select_join` | `SELECT * FROM r_rel r JOIN s_rel s ON r.k = s.k [AND / WHERE <ranges on r.* and s.*>]` |
| `window_join` | a select join with `AND ABS(r.ts - s.ts) < w` (the column is the time column) |
| `quantile` | `SELECT APPROX_QUANTILE(col, phi, epsilon) FROM t [ROWS n]` (no bracket: the whole stream); per key: `... WHERE ...` (`where`), `SELECT k, APPROX_QUANTILE(...) ... GROUP BY k` (`group_by`); an alert: `... HAVING APPROX_QUANTILE(col, phi, epsilon) > x` (`above`; `< x`: `below`; hint `/*+ REARM(r) */`); a rank: `SELECT APPROX_CDF(col, x, epsilon) FROM t` (`rank_of`) |

* Windows are CQL's brackets after the table name, lifted out before parsing: `[ROWS n]` (rows
  `[n, 0]`), `[RANGE T]` (time `[T, 0]`), `[ROWS n OFFSET r]` / `[RANGE T OFFSET r]` (a historical
  window `[n, r]`), `ON col` after a RANGE for a time column other than `ts`, `[UNBOUNDED]` (no
  window). A join has none: its window is the `ABS(...) < w` condition.
* Conditions are a conjunction (`AND`) of `col = value` (a key equality), `col BETWEEN lo AND hi`,
  `col >= lo`, `col <= hi`; closed ranges, except a substream filter's HAVING, an open range
  (`>`, `<`). The table name of a one-relation query names the stream and is not checked; in a
  join, the two table names are the relations (`rel` values), aliases optional.
* Options that are not SQL are optimizer hints after `SELECT`: `/*+ EPSILON(e) */` (approximate
  substream filter), `/*+ NOTIFY */` or `/*+ NOTIFY(cluster) */` and `/*+ REARM(r) */` (quantile), `/*+ MAX_WINDOW(m) */`
  (window join). A hint the type does not have is refused.
* Refused, with the reason: anything but one `SELECT` (UPDATE, several statements), no `FROM`,
  several aggregates, `ORDER BY`, `LIMIT`, `DISTINCT`, subqueries, `OR`/`NOT`, outer joins, more
  than two relations, `[PARTITION BY ...]` (write `GROUP BY`).
"""

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
    lines += ["", "Example:", "", "```json", json.dumps(EXAMPLES[qtype]), "```", "",
              "In [SQL](#sql):", "", "```sql", SQL_EXAMPLES[qtype], "```", ""]
    return "\n".join(lines)


def markdown() -> str:
    """The text of docs/queries.md."""
    rows = []
    for name, model in SPEC_TYPES.items():
        first = _cell((model.__doc__ or "").split(". ")[0]).rstrip(".")
        rows.append(f"| [`{name}`](#{name}) | {model.family} | {first} |")
    return INTRO + "\n".join(rows) + "\n\n" + "\n".join(_section(t) for t in SPEC_TYPES) + "\n" + SQL_SECTION


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
