"""How the engine judges a run of rows (:meth:`vigil.engine.Engine._segment`): each row against
the columns checked by the groups that have queries at its position, and its time against the
times applied before it (per group). Rows are judged exactly as one at a time would be, whatever
the batch (docs/contract.md, "Streams"). O(rows + bad rows) per run, plus O(groups)."""

from __future__ import annotations

from typing import Any

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
        d = g.__dict__
        refs = d.get("_chk_refs")
        if refs is None:
            refs = eng._refs(g, cols, sub)
        elif d.get("_clean") is refs and d.get("_clean_in") is cols:
            return False  # no bad value in any column it checks, anywhere in this batch
        clean = True
        for k in refs:
            h = memo.get(k)
            if h is None:
                rows = cols.bad(*k)[0]
                clean = clean and not len(rows)
                h = memo[k] = bool(len(rows)) and int(np.searchsorted(rows, lo)) < int(np.searchsorted(rows, hi, "right"))
            elif clean and len(cols.bad(*k)[0]):
                clean = False
            if h:
                return True
        if clean:  # remembered until its checks change (a new _chk_refs tuple) or the batch ends
            d["_clean"], d["_clean_in"] = refs, cols
        return False

    for key, g in list(eng.groups.items()):  # a row flagged by a group whose queries may have
        if g.ends_inside_segment and "_later" in g.__dict__ and flagged(g):
            eng._ready(key, False)  # ended on its deferred rows is judged after they are fed
    groups = [g for g in eng.groups.values() if g.qids]
    for g in groups:
        if not flagged(g):  # no bad value in any column it checks: nothing to find
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
    for g in groups:  # times must not go backwards within a group
        tcol = g.time_column()
        if tcol:
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
    return s + c, {p: r for p, r in bad.items() if p < c}, ok[:c]
