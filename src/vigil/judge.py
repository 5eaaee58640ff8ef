"""How the engine judges a run of rows (:meth:`vigil.engine.Engine._segment`): each row against
the columns checked by the groups that have queries at its position, and its time against the
times applied before it (per group). Rows are judged exactly as one at a time would be, whatever
the batch (docs/contract.md, "Streams"). O(rows + bad rows) per run, plus O(groups
whose checked columns hold a bad value somewhere in the batch + groups with a time column): the
others are left out once per batch and change of the groups (:func:`roster`)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .group import Cols, monotone


def judge(eng: Any, cols: Cols, idx: np.ndarray, s: int, e: int,
      prebad: dict[int, str]) -> tuple[int, dict[int, str], np.ndarray]:
    """(c, bad, ok) for rows ``idx[s:e]``: rows ``s..c-1`` are judged with the state at
    ``s`` and are final (row ``s`` always is); ``bad``: offset from ``s`` -> reason, ``ok``
    the mask of applied rows among them; row ``c`` (if < e) must be judged after the rows
    before it are fed (see :meth:`vigil.engine.Engine._segment`)."""
    sub = idx[s:e]
    bad: dict[int, str] = {}
    if prebad:
        for p, r in enumerate(sub.tolist()):
            if r in prebad:
                bad[p] = prebad[r]
    c = len(sub)
    lo, hi = int(sub[0]), int(sub[-1])
    memo: dict[tuple[str, str], bool] = {}

    def flagged(g) -> bool:  # a column g checks has a bad value in rows lo..hi (a superset of g's rows)
        for k in g._chk_refs:
            h = memo.get(k)
            if h is None:
                rows = cols.bad(*k)[0]
                h = memo[k] = int(np.searchsorted(rows, lo)) < int(np.searchsorted(rows, hi, "right"))
            if h:
                return True
        return False

    for key, g in roster(eng, cols, sub).ends:  # a row flagged by a group whose queries may have
        if "_later" in g.__dict__ and flagged(g):
            eng._ready(key, False)  # ended on its deferred rows is judged after they are fed
    r = roster(eng, cols, sub)  # (again: queries may have matured on those rows)
    for g in r.dirty:
        if not flagged(g):  # no bad value in these rows in any column it checks: nothing to find
            continue
        may_end = g.ends_inside_segment
        (checks, _), o = eng._span(g, cols, sub)
        for full, refs in checks:
            mask = None
            for col, kind in refs:
                rows, reasons = cols.bad(col, kind)
                a = int(np.searchsorted(rows, sub[0], side="left"))
                b = int(np.searchsorted(rows, sub[-1], side="right"))
                if a == b:
                    continue
                if full is not None and mask is None:
                    mask = full[o]
                pos = np.searchsorted(sub, rows[a:b])
                hit = sub[np.minimum(pos, len(sub) - 1)] == rows[a:b]
                for j, p in zip(np.flatnonzero(hit).tolist(), pos[hit].tolist(), strict=True):
                    if (mask is None or mask[p]) and p not in bad:
                        bad[p] = reasons[a + j]
                        if may_end and 0 < p < c:
                            c = p
    ok = np.ones(len(sub), bool)
    if bad:
        ok[list(bad)] = False
    rising: dict[str, tuple[bool, float]] = {}  # time column -> (non-decreasing over the run, first time)
    for g, tcol in r.timed:  # times must not go backwards within a group
        if tcol not in rising:
            t = cols.get(tcol, "time")[0][sub]
            rising[tcol] = (bool(np.all(t[1:] >= t[:-1])), float(t[0]))
        up, t0 = rising[tcol]
        if up and t0 >= g.t_last:  # every subset of the run's rows keeps its time order
            continue
        vis = eng._owned(g, eng._seen(g, cols, sub)[1], sub) & ok
        t = cols.get(tcol, "time")[0][sub]
        back = np.flatnonzero(~monotone(t, vis, g.t_last)).tolist()
        if back and back[0] == 0:
            bad[0] = f"time column {tcol!r} went backwards ({t[0]} after {g.t_last})"
            ok[0] = False
            back = back[1:]
        if back:
            c = min(c, back[0])
    return s + c, {p: why for p, why in bad.items() if p < c}, ok[:c]


class Roster(NamedTuple):
    """The groups a run of a batch is judged against, as of the engine's groups version ``ver``
    (:attr:`vigil.engine.Engine.gver`: bumped by every change of a group's queries, of what it
    checks, of the groups): ``live`` the groups with queries (in order), ``dirty`` those of them
    whose checked columns hold a bad value somewhere in the batch, ``ends`` the (key, group) of
    every dirty group whose queries may end inside a segment, ``timed`` (group, time column) of
    the live groups with a time column, ``hist`` the groups without queries that keep history."""

    ver: int
    cols: Cols
    live: list
    dirty: list
    ends: list
    timed: list
    hist: list


def roster(eng: Any, cols: Cols, sub: np.ndarray) -> Roster:
    """:class:`Roster` for batch ``cols``, cached until the engine's groups change. O(groups)
    when rebuilt (a group's checked (column, kind) pairs from one row of ``sub``)."""
    r = eng._roster
    if r is not None and r.ver == eng.gver and r.cols is cols:
        return r
    live, dirty, ends, timed, hist = [], [], [], [], []
    anybad = cols.__dict__.setdefault("_anybad", {})  # (column, kind) -> a bad value in the batch
    for key, g in eng.groups.items():
        d = g.__dict__
        refs = d.get("_chk_refs")
        if refs is None:
            refs = eng._refs(g, cols, sub)
        c = d.get("_ros")
        if c is None or c[0] is not cols or c[1] is not refs:  # (bad, ends, time column) of g
            bad = False
            for k in refs:
                h = anybad.get(k)
                if h is None:
                    h = anybad[k] = bool(len(cols.bad(*k)[0]))
                if h:
                    bad = True
                    break
            c = d["_ros"] = (cols, refs, bad, bad and g.ends_inside_segment, g.time_column() if g.qids else None)
        if c[3]:
            ends.append((key, g))
        if g.qids:
            live.append(g)
            if c[2]:
                dirty.append(g)
            if c[4]:
                timed.append((g, c[4]))
        elif g.keeps_history:
            hist.append(g)
    r = eng._roster = Roster(eng.gver, cols, live, dirty, ends, timed, hist)
    return r
