"""Standing queries in SQL: a CQL-like statement compiled into a query spec (docs/queries.md, "SQL").

``compile_sql(text, id=None)`` parses one ``SELECT`` with sqlglot and maps it onto exactly one
query type of :mod:`vigil.specs`, or raises :class:`SqlError` whose message says why the statement
maps to none (``ORDER BY is not supported``, ...).
The result is the spec as a dict (``id`` omitted when ``id`` is None) and has been validated by
:func:`vigil.specs.parse_query`. This module knows the specs, never an algorithm.

CQL's window brackets are not SQL: before parsing, ``FROM t [ROWS n]`` / ``[RANGE t]`` (with the
options ``OFFSET r`` and, for RANGE, ``ON column``) are lifted out of the text by a regular
expression and kept beside the parsed statement. Options that are not SQL ride in an optimizer
hint: ``SELECT /*+ EPSILON(0.1) NOTIFY MAX_WINDOW(60) */ ...``.
"""

from __future__ import annotations

import re
from typing import Any

import sqlglot
from sqlglot import exp

from .specs import SpecError, parse_query


class SqlError(ValueError):
    """A statement that maps to no query type; ``str(err)`` is the reason."""


_NUM = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"
_BRACKET = re.compile(r"\b(FROM|JOIN)(\s+)([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]]*)\]", re.I)
_WINDOW = re.compile(rf"^\s*(ROWS|RANGE)\s+({_NUM})(?:\s+OFFSET\s+({_NUM}))?(?:\s+ON\s+([A-Za-z_]\w*))?\s*$", re.I)
_AGGS = {exp.Sum: "sum", exp.Count: "count", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
         exp.Quantile: "quantile", exp.ApproxQuantile: "approx_quantile"}
_PER_KEY = "a per-key window is WHERE key = value or GROUP BY key"


def _number(text: str) -> int | float:
    v = float(text)
    return int(text) if re.fullmatch(r"[0-9]+", text) else v


def _windows(text: str) -> tuple[str, list[dict[str, Any]]]:
    """The text without its window brackets, and the windows in order of appearance."""
    wins: list[dict[str, Any]] = []

    def lift(m: re.Match) -> str:
        body = m.group(4)
        w = _WINDOW.match(body)
        if body.strip().upper() == "UNBOUNDED":
            wins.append({"table": m.group(3), "kind": None})
        elif "PARTITION" in body.upper():
            raise SqlError(f"per-key window [{body.strip()}] is not supported: {_PER_KEY}")
        elif w is None:
            raise SqlError(f"window [{body.strip()}] is not supported: write [ROWS n], [RANGE t], "
                           "[ROWS n OFFSET r], [RANGE t OFFSET r ON column] or [UNBOUNDED]")
        else:
            kind, size, off, on = w.groups()
            kind = kind.upper()
            if kind == "ROWS" and on:
                raise SqlError("ON column: only a RANGE window has a time column")
            wins.append({"table": m.group(3), "kind": kind, "size": _number(size),
                         "offset": _number(off) if off else 0, "on": on})
        return f"{m.group(1)}{m.group(2)}{m.group(3)}"

    out = _BRACKET.sub(lift, text)
    if "[" in re.sub(r"'[^']*'", "", out):
        raise SqlError("a window bracket must follow a table name: FROM t [ROWS n] or FROM t [RANGE t]")
    return out, wins


def _num(node: exp.Expression, what: str) -> int | float:
    neg = False
    while isinstance(node, exp.Neg | exp.Paren):
        neg ^= isinstance(node, exp.Neg)
        node = node.this
    if not isinstance(node, exp.Literal) or node.is_string:
        raise SqlError(f"{what}: expected a number, got {node.sql()!r}")
    v = _number(node.this) if re.fullmatch(_NUM, node.this) else float(node.this)
    return -v if neg else v


def _scalar(node: exp.Expression, what: str) -> str | int | float:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    return _num(node, what)


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.Or | exp.Not):
        raise SqlError(f"{type(node).__name__.upper()} is not supported: a condition is a conjunction (AND) "
                       "of equalities and ranges")
    return [node]


def _col(node: exp.Expression) -> exp.Column | None:
    return node if isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier) else None


def _shifted(node: exp.Expression) -> tuple[exp.Column, int | float] | None:
    """(column, offset) of ``col``, ``col + n`` or ``col - n``; None for anything else."""
    if _col(node):
        return node, 0
    if isinstance(node, exp.Add | exp.Sub) and _col(node.this) and not _col(node.expression):
        try:
            n = _num(node.expression, "band")
        except SqlError:
            return None
        return node.this, (n if isinstance(node, exp.Add) else -n)
    return None


def _hints(sel: exp.Select) -> dict[str, Any]:
    out: dict[str, Any] = {}
    hint = sel.args.get("hint")
    for h in (hint.expressions if hint else []):
        if isinstance(h, exp.Var | exp.Column):
            out[h.name.lower()] = True
        elif isinstance(h, exp.Anonymous) and len(h.expressions) == 1:
            arg = h.expressions[0]
            out[h.name.lower()] = arg.name if isinstance(arg, exp.Column | exp.Var) else _scalar(arg, h.name)
        else:
            raise SqlError(f"hint {h.sql()!r} is not supported: write NAME or NAME(value)")
    return out


def _ranges(conds: list[exp.Expression], what: str, *, closed: bool) -> dict[str, Any]:
    """col -> [lo, hi] (closed: BETWEEN, >=, <=) or, for '=', col -> value; open (closed=False):
    > and <. Two one-sided bounds on one column combine."""
    out: dict[str, Any] = {}
    for c in conds:
        col = _col(c.this) if isinstance(c, exp.Binary | exp.Between) else None
        if col is None:
            raise SqlError(f"{what}: condition {c.sql()!r} is not supported: write column = value, "
                           "column BETWEEN lo AND hi, column >= lo or column <= hi")
        name = col.name
        if isinstance(c, exp.EQ) and closed:
            if name in out:
                raise SqlError(f"{what}: column {name!r} is constrained twice")
            out[name] = _scalar(c.expression, name)
            continue
        lo = hi = None
        ops = (exp.GTE, exp.LTE) if closed else (exp.GT, exp.LT)
        if isinstance(c, exp.Between) and closed:
            lo, hi = _num(c.args["low"], name), _num(c.args["high"], name)
        elif isinstance(c, ops[0]):
            lo = _num(c.expression, name)
        elif isinstance(c, ops[1]):
            hi = _num(c.expression, name)
        elif closed:
            raise SqlError(f"{what}: {c.sql()!r}: ranges are closed here, write >=, <= or BETWEEN")
        else:
            raise SqlError(f"{what}: {c.sql()!r}: the range is open here, write > and <")
        cur = out.get(name, [None, None])
        if not isinstance(cur, list) or (lo is not None and cur[0] is not None) \
                or (hi is not None and cur[1] is not None):
            raise SqlError(f"{what}: column {name!r} is constrained twice")
        out[name] = [lo if lo is not None else cur[0], hi if hi is not None else cur[1]]
    return out


def _aggregate(node: exp.Expression) -> tuple[str, str | None, list]:
    """(agg, column or None, extra arguments) of an aggregate call."""
    kind = _AGGS.get(type(node))
    if kind is None:
        raise SqlError(f"{node.sql()!r} is not a supported aggregate: SUM, COUNT, AVG, MIN, MAX, "
                       "QUANTILE(col, phi) or APPROX_QUANTILE(col, phi, epsilon)")
    arg = node.this
    if isinstance(arg, exp.Star) and kind == "count":
        col = None
    elif _col(arg) is not None:
        col = arg.name
    else:
        raise SqlError(f"{node.sql()!r}: an aggregate takes a column")
    extra = []
    if kind == "quantile":
        extra = [_num(node.args["quantile"], "phi")]
    elif kind == "approx_quantile":
        if node.args.get("accuracy") is None:
            raise SqlError("APPROX_QUANTILE(col, phi, epsilon): the epsilon is required")
        extra = [_num(node.args["quantile"], "phi"), _num(node.args["accuracy"], "epsilon")]
    return kind, col, extra


def _refuse_clauses(sel: exp.Select) -> None:
    for arg, name in (("order", "ORDER BY"), ("limit", "LIMIT"), ("offset", "OFFSET"), ("distinct", "DISTINCT"),
                      ("qualify", "QUALIFY"), ("windows", "WINDOW"), ("with_", "WITH"), ("with", "WITH")):
        if sel.args.get(arg):
            raise SqlError(f"{name} is not supported")
    if any(isinstance(n, exp.Subquery | exp.Window) for n in sel.find_all(exp.Subquery, exp.Window)):
        raise SqlError("subqueries and window functions (OVER) are not supported")


def compile_sql(text: str, id: str | None = None) -> dict[str, Any]:  # noqa: A002  (the spec's field)
    """The query spec of one SQL statement (see the module docstring and docs/queries.md)."""
    if not isinstance(text, str) or not text.strip():
        raise SqlError("empty SQL statement")
    body, wins = _windows(text)
    try:
        stmts = [s for s in sqlglot.parse(body) if s is not None]
    except sqlglot.errors.SqlglotError as e:
        raise SqlError(f"SQL syntax error: {str(e).splitlines()[0]}") from None
    if len(stmts) != 1:
        raise SqlError(f"expected one statement, got {len(stmts)}")
    sel = stmts[0]
    if not isinstance(sel, exp.Select):
        raise SqlError(f"only SELECT is supported, got {sel.sql()[:40]!r}")
    if sel.args.get("from_") is None and sel.args.get("from") is None:
        raise SqlError("SELECT without FROM: name the stream, e.g. FROM trades")
    _refuse_clauses(sel)
    hints = _hints(sel)
    if sel.args.get("joins"):
        spec = _join(sel, wins, hints)
    else:
        spec = _single(sel, wins[0] if wins else None, hints)
    if hints:
        raise SqlError(f"hint(s) {sorted(hints)} do not apply to {spec['type']}")
    try:
        parse_query({"id": id or "q", **spec})
    except SpecError as e:
        raise SqlError(f"{spec['type']}: {e}") from None
    return {"id": id, **spec} if id is not None else spec


def _single(sel: exp.Select, win: dict | None, hints: dict) -> dict[str, Any]:
    if not isinstance(sel.args["from_" if "from_" in sel.args else "from"].this, exp.Table):
        raise SqlError("FROM must name a stream")
    group = sel.args.get("group")
    having = sel.args.get("having")
    where = sel.args.get("where")
    items = sel.expressions
    aggs = [n for it in items for n in it.find_all(*_AGGS)]
    if any(isinstance(a, exp.ApproxQuantile) for a in aggs) or any(_cdf(it) for it in items):
        return _quantile(items, group, having, where, win, hints)
    if group is not None and having is None and win is not None and win["kind"] is not None \
            and not any(isinstance(a, exp.ApproxQuantile) for a in aggs):  # a per-key window
        return _keyed_window(items, group, where, win)
    if group is not None:
        return _substream(sel, items, group, having, where, win, hints, aggs)
    if len(items) != 1:
        raise SqlError(f"expected one aggregate in SELECT, got {len(items)} items")
    item = items[0].this if isinstance(items[0], exp.Alias) else items[0]
    kind, col, extra = _aggregate(item)
    if having is not None:
        return _threshold(kind, col, item, having.this, where, win)
    if where is not None and kind == "approx_quantile":
        raise SqlError(f"WHERE with {kind.upper()} is not supported: quantile has no where/group_by yet "
                       "(a WHERE with HAVING SUM/COUNT >= tau is a threshold query)")
    if kind == "approx_quantile":
        spec: dict[str, Any] = {"type": "quantile", "column": col, "phi": extra[0], "epsilon": extra[1]}
        if win is not None and win["kind"] is not None:
            if win["kind"] != "ROWS" or win["offset"]:
                raise SqlError("quantile: only a [ROWS n] window (or none: the whole stream)")
            spec["rows"] = win["size"]
        notify = hints.pop("notify", None)
        if notify is not None:
            spec["notify"] = notify if notify is True else str(notify).lower()
        return spec
    if win is None or win["kind"] is None:
        hint = " (over the whole stream: APPROX_QUANTILE(col, phi, epsilon))" if kind == "quantile" else \
            " (a total to reach is a threshold query: HAVING SUM(col) >= tau)"
        raise SqlError(f"{kind.upper()} needs a window: FROM t [ROWS n] or FROM t [RANGE t]{hint}")
    spec = _window(kind, col, extra, win)
    if where is not None:
        spec["where"] = _ranges(_conjuncts(where.this), "WHERE", closed=True)
    return spec


def _cdf(node: exp.Expression) -> bool:
    node = node.this if isinstance(node, exp.Alias) else node
    return isinstance(node, exp.Anonymous) and node.name.upper() == "APPROX_CDF"


def _quantile(items, group, having, where, win, hints) -> dict[str, Any]:
    """SELECT [keys,] APPROX_QUANTILE(col, phi, eps) | APPROX_CDF(col, x, eps) FROM t [[ROWS n]]
    [WHERE ...] [GROUP BY keys] [HAVING APPROX_QUANTILE(...) > x | < x]: a quantile query (rank_of
    for APPROX_CDF; where, group_by; an alert above / below x, hint REARM(r))."""
    keys = [] if group is None else [k.name if _col(k) else None for k in group.expressions]
    if None in keys:
        raise SqlError("GROUP BY: name key columns")
    sel = [it.this if isinstance(it, exp.Alias) else it for it in items if not (_col(it) and it.name in keys)]
    if len(sel) != 1:
        raise SqlError(f"a quantile query selects one APPROX_QUANTILE or APPROX_CDF (besides its GROUP BY "
                       f"columns), got {len(sel)}")
    item = sel[0]
    if _cdf(item):
        if len(item.expressions) != 3 or not _col(item.expressions[0]):
            raise SqlError("APPROX_CDF(col, x, epsilon): the fraction of values <= x")
        spec: dict[str, Any] = {"type": "quantile", "column": item.expressions[0].name,
                                "rank_of": _num(item.expressions[1], "x"),
                                "epsilon": _num(item.expressions[2], "epsilon")}
    else:
        kind, col, extra = _aggregate(item)
        if kind != "approx_quantile":
            raise SqlError(f"{kind.upper()} beside APPROX_QUANTILE: a quantile query selects one aggregate")
        spec = {"type": "quantile", "column": col, "phi": extra[0], "epsilon": extra[1]}
    if win is not None and win["kind"] is not None:
        if win["kind"] != "ROWS" or win["offset"]:
            raise SqlError("quantile: only a [ROWS n] window (or none: the whole stream)")
        spec["rows"] = win["size"]
    if where is not None:
        spec["where"] = _ranges(_conjuncts(where.this), "WHERE", closed=True)
    if keys:
        spec["group_by"] = keys[0] if len(keys) == 1 else keys
    if having is not None:
        cond = having.this
        if not isinstance(cond, exp.GT | exp.LT) or cond.this.sql() != item.sql():
            raise SqlError(f"HAVING {cond.sql()!r}: a quantile alert is HAVING {item.sql()} > x (or < x)")
        spec["above" if isinstance(cond, exp.GT) else "below"] = _num(cond.expression, "HAVING bound")
        rearm = hints.pop("rearm", None)
        if rearm is not None:
            spec["rearm"] = rearm
    notify = hints.pop("notify", None)
    if notify is not None:
        spec["notify"] = notify if notify is True else str(notify).lower()
    return spec


def _keyed_window(items, group, where, win) -> dict[str, Any]:
    """SELECT [keys,] AGG(col) FROM t [window] [WHERE ...] GROUP BY keys: one value per key."""
    keys = [k.name if _col(k) else None for k in group.expressions]
    if None in keys:
        raise SqlError("GROUP BY: name key columns")
    sel = [it.this if isinstance(it, exp.Alias) else it for it in items if not (_col(it) and it.name in keys)]
    if len(sel) != 1:
        raise SqlError(f"a per-key window selects one aggregate (besides its GROUP BY columns), got {len(sel)}")
    spec = _window(*_aggregate(sel[0]), win)
    if where is not None:
        spec["where"] = _ranges(_conjuncts(where.this), "WHERE", closed=True)
    spec["group_by"] = keys[0] if len(keys) == 1 else keys
    return spec


def _window(kind, col, extra, win) -> dict[str, Any]:
    if kind == "approx_quantile":
        raise SqlError("APPROX_QUANTILE with GROUP BY is not supported: quantile has no where/group_by yet")
    spec: dict[str, Any] = {"type": "window_aggregate", "agg": kind}
    if col is not None:
        spec["column"] = col
    if kind == "quantile":
        spec["phi"] = extra[0]
    if win["kind"] == "ROWS":
        spec["rows"] = [win["size"], win["offset"]]
    else:
        spec["time"] = [win["size"], win["offset"]]
        if win["on"]:
            spec["time_column"] = win["on"]
    return spec


def _threshold(kind, col, item, cond: exp.Expression, where, win) -> dict[str, Any]:
    if kind not in ("sum", "count"):
        raise SqlError(f"HAVING {kind.upper()}: a threshold query totals SUM(weight column) or COUNT(*)")
    if kind == "count" and col is not None:
        raise SqlError("HAVING COUNT(col): a threshold query counts elements, write COUNT(*)")
    if win is not None:
        raise SqlError("a threshold query has no window: it totals every element after its registration")
    if not isinstance(cond, exp.GTE | exp.GT) or cond.this != item:
        raise SqlError(f"HAVING {cond.sql()!r}: a threshold query is HAVING {item.sql()} >= tau")
    tau = _num(cond.expression, "threshold")
    if not isinstance(tau, int):
        raise SqlError(f"threshold: must be an integer, got {tau}")
    if where is None:
        raise SqlError("a threshold query needs a WHERE with at least one range (BETWEEN, >=, <=)")
    spec: dict[str, Any] = {"type": "threshold", "where": _ranges(_conjuncts(where.this), "WHERE", closed=True)}
    if col is not None:
        spec["weight"] = col
    spec["threshold"] = tau + 1 if isinstance(cond, exp.GT) else tau  # weights are integers
    return spec


def _substream(sel, items, group, having, where, win, hints, aggs) -> dict[str, Any]:
    keys = group.expressions
    if len(keys) != 1 or _col(keys[0]) is None:
        raise SqlError("GROUP BY: exactly one key column")
    key = keys[0].name
    if where is not None or having is None or any(not isinstance(a, exp.Sum | exp.Count) for a in aggs):
        agg = " ".join(sorted({a.key.upper() for a in aggs})) or "GROUP BY"
        raise SqlError(f"per-key {agg} (GROUP BY {key} without HAVING, with WHERE or another aggregate than "
                       f"COUNT/SUM) is not supported: {_PER_KEY}; a substream filter is SELECT {key} FROM t "
                       f"[RANGE T] GROUP BY {key} HAVING COUNT(*) > v")
    if len(items) != 1 or _col(items[0]) is None or items[0].name != key:
        raise SqlError(f"a substream filter selects its key: SELECT {key} ... GROUP BY {key}")
    if win is None or win["kind"] != "RANGE" or win["offset"]:
        raise SqlError("a substream filter needs a time window: FROM t [RANGE T]")
    conds = _conjuncts(having.this)
    agg = None
    for c in conds:
        if not isinstance(c, exp.Binary):
            raise SqlError(f"HAVING {c.sql()!r}: write COUNT(*) > v1 [AND COUNT(*) < v2]")
        a = _aggregate(c.this)
        if a[0] not in ("count", "sum"):
            raise SqlError(f"HAVING {a[0].upper()}: a substream filter is on COUNT or SUM")
        if agg is not None and a != agg:
            raise SqlError("HAVING: two different aggregates")
        agg = a
        c.set("this", exp.column("__agg"))
    rng = _ranges(conds, "HAVING", closed=False)["__agg"]
    spec: dict[str, Any] = {"type": "substream_filter", "agg": agg[0]}
    if agg[1] is not None:
        spec["column"] = agg[1]
    spec.update(key=key, time=win["size"])
    if win["on"]:
        spec["time_column"] = win["on"]
    spec["range"] = rng
    if "epsilon" in hints:
        spec["epsilon"] = hints.pop("epsilon")
    return spec


def _join(sel: exp.Select, wins: list, hints: dict) -> dict[str, Any]:
    joins = sel.args["joins"]
    if len(joins) != 1:
        raise SqlError("a join query joins exactly two relations")
    j = joins[0]
    if j.args.get("side") or j.args.get("kind") not in (None, "INNER") or j.args.get("using"):
        raise SqlError(f"only an inner JOIN ... ON is supported, got {j.sql()[:40]!r}")
    if wins:
        raise SqlError("a join has no window brackets: its time condition is ABS(r.ts - s.ts) < w in ON/WHERE")
    if sel.args.get("group") or sel.args.get("having"):
        raise SqlError("a join query has no GROUP BY or HAVING")
    star = len(sel.expressions) == 1 and isinstance(sel.expressions[0], exp.Star)
    if not star and not all(_col(e) for e in sel.expressions):
        raise SqlError("a join query is SELECT * (the matching pairs) or SELECT r.col, s.col, ... (the pairs "
                       "with those columns' values)")
    tables = [sel.args["from_" if "from_" in sel.args else "from"].this, j.this]
    if not all(isinstance(t, exp.Table) for t in tables):
        raise SqlError("a join joins two relations by name")
    rels = [t.name for t in tables]
    alias = {}
    for sd, t in zip(("left", "right"), tables, strict=True):
        alias[t.name] = sd
        if t.alias:
            alias[t.alias] = sd
    conds = _conjuncts(j.args.get("on")) + _conjuncts(sel.args["where"].this if sel.args.get("where") else None)

    def side(c: exp.Column) -> str:
        s = alias.get(c.table)
        if s is None:
            raise SqlError(f"column {c.sql()!r}: qualify it with a relation of the join ({', '.join(alias)})")
        return s

    on = band = window = eq = None
    sel_ranges: dict[str, list] = {"left": [], "right": []}
    for c in conds:
        a, b = (c.this, c.expression) if isinstance(c, exp.Binary) else (c.this, None)
        if isinstance(c, exp.EQ) and _col(a) and _col(b):
            pair = {side(a): a.name, side(b): b.name}
            if len(pair) != 2 or eq is not None:
                raise SqlError(f"{c.sql()!r}: one join condition r.col = s.col between the two relations")
            eq = (pair["left"], pair["right"])
        elif isinstance(c, exp.Between) and isinstance(a, exp.Sub) and _col(a.this) and _col(a.expression):
            if band is not None:
                raise SqlError(f"{c.sql()!r}: one band condition")
            x, y = a.this, a.expression
            lo, hi = _num(c.args["low"], "band"), _num(c.args["high"], "band")
            if (side(x), side(y)) == ("right", "left"):
                on, band = (y.name, x.name), [lo, hi]
            elif (side(x), side(y)) == ("left", "right"):
                on, band = (x.name, y.name), [-hi, -lo]
            else:
                raise SqlError(f"{c.sql()!r}: a band is s.col - r.col BETWEEN lo AND hi")
        elif isinstance(c, exp.Between) and _col(a) and _shifted(c.args["low"]) and _shifted(c.args["high"]):
            (y, lo), (y2, hi) = _shifted(c.args["low"]), _shifted(c.args["high"])
            if band is not None or y.name != y2.name or y.table != y2.table \
                    or {side(a), side(y)} != {"left", "right"}:
                raise SqlError(f"{c.sql()!r}: a band is s.col BETWEEN r.col + lo AND r.col + hi, one join condition")
            on, band = ((y.name, a.name), [lo, hi]) if side(a) == "right" else ((a.name, y.name), [-hi, -lo])
        elif isinstance(c, exp.LT) and isinstance(a, exp.Abs) and isinstance(a.this, exp.Sub):
            x, y = a.this.this, a.this.expression
            if not (_col(x) and _col(y)) or {side(x), side(y)} != {"left", "right"} or x.name != y.name:
                raise SqlError(f"{c.sql()!r}: a time window is ABS(r.ts - s.ts) < w, one time column")
            if window is not None:
                raise SqlError("two time windows")
            window = (_num(b, "window"), x.name)
        else:
            col = _col(a) if a is not None else None
            if col is None or (b is not None and _col(b) is not None):
                raise SqlError(f"join condition {c.sql()!r} is not supported: r.col = s.col, "
                               "s.col - r.col BETWEEN lo AND hi, ABS(r.ts - s.ts) < w or a range on one side")
            sel_ranges[side(col)].append(c)
    if on is None and eq is None:
        raise SqlError("a join needs a join condition: r.col = s.col or s.col - r.col BETWEEN lo AND hi")
    ranges = {k: _ranges(v, f"{k} selection", closed=True) for k, v in sel_ranges.items()}
    for k, r in ranges.items():
        if any(not isinstance(x, list) for x in r.values()):
            raise SqlError(f"{k} selection: a join's selections are ranges (BETWEEN, >=, <=), not equalities")
    picked: dict[str, list[str]] = {}
    for e in ([] if star else sel.expressions):
        picked.setdefault(side(e), []).append(e.name)
    extra = {"select": picked} if picked else {}
    if band is not None and eq is not None and (window is not None or any(ranges.values())):
        # r.k = s.k AND s.ts - r.ts BETWEEN lo AND hi with selections: an interval window join on ts
        if on[0] != on[1] or window is not None:
            raise SqlError("an interval join's time condition names one time column of both relations")
        window, band = ([band[0], band[1]], on[0]), None
    if band is not None:
        if window is not None or any(ranges.values()):
            raise SqlError("a band join has no selections or time window")
        spec: dict[str, Any] = {"left": rels[0], "right": rels[1], "left_on": on[0], "right_on": on[1]}
        if eq is not None:  # a band with an equality key
            spec.update(left_key=eq[0], right_key=eq[1])
        return {"type": "band_join", **spec, "band": band, **extra}
    spec = {"left": rels[0], "right": rels[1], "left_on": eq[0], "right_on": eq[1], **extra}
    if ranges["left"]:
        spec["left_range"] = ranges["left"]
    if ranges["right"]:
        spec["right_range"] = ranges["right"]
    if window is None:
        return {"type": "select_join", **spec}
    spec.update(window=window[0], time_column=window[1])
    if "max_window" in hints:
        spec["max_window"] = hints.pop("max_window")
    return {"type": "window_join", **spec}



REGISTER_FIELDS = {"op", "at", "sql", "id"}


def register_op(op: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A ``register`` operation carrying ``"sql"`` and ``"id"`` instead of ``"query"`` ->
    (the operation with the compiled ``query``, None), or (the operation, the reason to reject it)."""
    extra = set(op) - REGISTER_FIELDS
    if extra:
        return op, f"register: unknown field(s) {sorted(extra)} (a register has 'query', or 'sql' and 'id')"
    ident, text = op.get("id"), op.get("sql")
    if not isinstance(ident, str) or not ident:
        return op, "id: a register with 'sql' needs a non-empty string 'id'"
    if not isinstance(text, str):
        return op, "sql: must be a string holding one SELECT statement"
    try:
        query = compile_sql(text, ident)
    except SqlError as e:
        return op, f"sql: {e}"
    return {"op": "register", "at": op["at"], "query": query}, None
