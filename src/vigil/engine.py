"""The Engine: routes query operations and stream elements, in exact ``at`` order, to the query
families' groups; names no family (docs/architecture.md).

Order (docs/contract.md, "Query operations"): an operation with ``at = n`` applies after every
element with seq <= n and before the first element with seq > n; operations with equal ``at`` apply in arrival order. The
engine cuts each batch into segments at pending operations' ``at`` and judges each segment's rows
against every group at once; a group is fed lazily: its rows wait until an operation touches it
(register, lookup, terminate) or the batch ends, then reach its operator in one numpy batch, so a
group gets one operator call per run of rows between its own operations, not one per segment
(groups whose queries may end by themselves inside a segment, threshold, and groups fed every
position are fed at once). :mod:`vigil.outbox` puts the outputs back in the contract's order.

Groups: each family's adapter (``vigil/<family>/group.py``, a :class:`vigil.group.Group`, found
through ``vigil.registry.ADAPTERS``) says how its queries are grouped (one operator instance per
signature), which rows they see and which columns they check, how rows feed the operator and how
answers become events. A group whose last query leaves is dropped (every query counts only
elements after its registration), unless it ``keeps_history`` (joins: a pair can join an old
tuple, so the engine keeps the rows of relations and a new join group starts from them).

Validation: a row is checked only against the columns referenced by the groups with alive queries
that can see it (threshold: rows matching the equality keys; joins: rows of the group's relations).
A bad row is rejected once, with the first reason, and reaches no operator. Time columns must not
decrease (per group). Every row and every operation is either applied or rejected:
``counts['rows_in'] == counts['rows_applied'] + counts['rows_rejected']`` (same for ops).

Snapshots are pickle-free (vigil.state): engine bookkeeping as JSON, operator state as arrays.

Sharded mode (vigil.pipeline.sharded) runs one Engine per shard, each seeing part of the stream.
Its hooks, all inert unless used: ``Engine.partial`` (a :class:`Partial`: which received rows each
partitioned group owns, the global clock for substream lookups), ``Engine.advance`` (elements
routed elsewhere move the position) and ``Engine.add_history`` (join history rows applied by other shards).
"""

from __future__ import annotations

import bisect
import json
from typing import Any

import numpy as np
import pyarrow as pa

from . import jsonline, lookups, oprun, registry
from .errors import HistoryRefused, Unsupported
from .events import ERROR_COLUMN, seq_column
from .group import Cols, Group, PerKey, Segment
from .history import History, parse_horizon
from .judge import judge, roster
from .oprun import REFUSALS
from .outbox import Outbox
from .partial import Partial
from .pending import Pending
from .specs import SpecError, parse_query

# ----------------------------------------------------------------------------- the engine


class Engine:
    """Runs an event log: ``add_operations`` then ``process`` batches, then ``finish``."""

    def __init__(
        self,
        algos: dict[str, str] | None = None,
        quantile_epsilon: float = 0.005,
        join_output: str = "pairs",
        columns: set[str] | None = None,
        join_history: str | None = None,
    ) -> None:
        self.algos = dict(algos or {})
        for fam, name in self.algos.items():
            registry.resolve(fam, name)  # raises KeyError with the reason
        if not (0 < quantile_epsilon < 1):
            raise ValueError(f"quantile epsilon must lie in (0, 1), got {quantile_epsilon}")
        if join_output not in ("pairs", "affected"):
            raise ValueError(f"join output must be 'pairs' or 'affected', got {join_output!r}")
        self.quantile_epsilon = float(quantile_epsilon)
        self.join_output = join_output
        self.columns = None if columns is None else set(columns) - {ERROR_COLUMN}
        self.position = 0
        self.ids: list[str] = []  # qid -> id
        self.specs: list[str] = []  # qid -> spec as JSON (encoded once, at registration)
        self.by_id: dict[str, int] = {}
        self.where: dict[int, str] = {}  # alive qid -> group key
        self.groups: dict[str, Group] = {}
        self._keys: dict[tuple[str, str], str] = {}  # (family, repr(params)) -> group key
        self._shapes: dict[tuple, tuple] = {}  # spec shape -> (group key, params, adapter): oprun
        self.pending = Pending()  # (at, arrival, op), sorted by (at, arrival)
        self.arrival = 0
        self.history = History(parse_horizon(join_history))  # relation rows, for join groups created later
        self.counts: dict[str, int] = dict.fromkeys(
            ["rows_in", "rows_applied", "rows_rejected", "ops_in", "ops_applied", "ops_rejected", "late"], 0
        )
        self.out_counts: dict[str, int] = {}
        self._out = Outbox()
        self._cols: Cols | None = None  # the batch being processed (rows deferred for groups point into it)
        self._seg: Segment | None = None  # the segment being filled
        self._hist_later: list[tuple[np.ndarray, np.ndarray]] = []  # applied rows not yet in the history
        self.partial: Partial | None = None  # sharded-mode hook, see Partial
        self._horizon: int | None = None  # while lookups inside a segment apply: feed rows up to it
        self.gver = 0  # bumped when groups, their queries or what they check change (judge.roster)
        self._roster = None

    # ------------------------------------------------------------------ helpers
    def impl(self, family: str) -> type:
        return registry.resolve(family, self.algos.get(family))

    def alive(self) -> dict[str, int]:
        per: dict[str, int] = {}
        for key in self.where.values():
            fam = self.groups[key].family
            per[fam] = per.get(fam, 0) + 1
        return per

    def _emit(self, ev: str, qid: int | None, at: int | None, *, value=None, keys=None, reason=None, ident=None,
              asked_at=None):
        self._out.emit(
            {"event": ev, "id": ident if qid is None else self.ids[qid], "at": at, "value": value,
             "keys": keys, "r": None, "s": None, "reason": reason, "asked_at": asked_at}, self.position)
        self.out_counts[ev] = self.out_counts.get(ev, 0) + 1

    def _reject_op(self, at, ident, reason):
        self.counts["ops_rejected"] += 1
        self._emit("rejected", None, at, reason=reason, ident=ident if isinstance(ident, str) else None)

    def _owned(self, g: Group, vis: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """Partial hook: restrict a group's visible rows to those its shard owns."""
        if self.partial is not None:
            own = self.partial.own.get(g.part_tag())
            if own is not None:
                return vis & own[idx]
        return vis

    def _ready(self, key: str | None, changes: bool = True) -> Group | None:
        """Group ``key`` fed the rows deferred for it (:meth:`_segment`): before any operation
        touches a group, and at the end of a batch. None if there is no such group (any more: its
        queries may mature on those rows). ``changes``: the coming operation may change what the
        group checks (a registration or termination; not a lookup)."""
        g = self.groups.get(key) if key is not None else None
        if g is None:
            return None
        later = g.__dict__.pop("_later", None)
        if later and self._horizon is not None:  # a lookup inside the segment: rows up to it only
            later, rest = lookups.split_later(later, self._horizon)
            if rest:
                g._later = rest
        if changes:
            self.gver += 1
            g.__dict__.pop("_chk", None)
            g.__dict__.pop("_chk_refs", None)
        if later:
            seg = self._seg or Segment()
            cols = self._cols
            rows, seqs = np.concatenate([e[0] for e in later]), np.concatenate([e[1] for e in later])
            if later[0][3] is not None:  # a group without queries keeping history: rows filtered
                vis = np.concatenate([e[3] for e in later])
            else:  # visibility over the whole run (the group's queries did not change during it)
                vis = self._owned(g, g.visible(cols, rows), rows) & np.concatenate([e[2] for e in later])
            if g.follows_positions:  # rejected rows move its windows too: it gets every row
                g.feed_positions(cols, rows, seqs, vis, seg)
            elif vis.any():
                g.feed(cols, rows[vis], seqs[vis], seg)
            if seg is not self._seg:
                self._out.add(seg)
        return self.groups.get(key)

    def _where(self, qid: int, changes: bool = True) -> str | None:
        """The group key of alive query ``qid``, its group fed first (None: not alive)."""
        self._ready(self.where.get(qid), changes)
        return self.where.get(qid)

    def _seen(self, g: Group, cols: Cols, sub: np.ndarray) -> tuple[list, np.ndarray]:
        """(``g.checks``, ``g.visible``) on rows ``sub`` (ascending) of the batch."""
        (checks, vis), o = self._span(g, cols, sub)
        return [(None if m is None else m[o], refs) for m, refs in checks], vis[o]

    def _span(self, g: Group, cols: Cols, sub: np.ndarray) -> tuple[tuple[list, np.ndarray], np.ndarray]:
        """((checks, visible) over a span of rows holding ``sub`` (ascending), the offsets of
        ``sub`` in it): one ``checks`` call over a span that doubles while no registration or
        termination touches the group: O(rows) per batch plus O(segment + 4096) per such operation."""
        c = g.__dict__.get("_chk")
        a, b = int(sub[0]), int(sub[-1]) + 1
        if c is None or c[0] is not cols or a < c[1] or b > c[2]:
            span = max(b - a, 4096, 2 * (c[2] - c[1]) if c is not None and c[0] is cols else 0)
            hi = min(len(self._rows), a + span)
            full = g.checks(cols, self._rows[a:hi])
            vis = np.zeros(hi - a, bool)
            for m, _ in full:
                vis |= True if m is None else m
            c = g._chk = (cols, a, hi, full, vis, bool(vis.all()))
            g._chk_refs = _pairs(full)
        return (c[3], c[4]), sub - c[1]

    def _refs(self, g: Group, cols: Cols, sub: np.ndarray) -> tuple[tuple[str, str], ...]:
        """The (column, kind) pairs ``g`` checks (they change only at its registrations and
        terminations)."""
        r = g.__dict__.get("_chk_refs")
        if r is None:  # from one row: the pairs do not depend on the rows (the masks, not wanted here, do)
            a = int(sub[0])
            r = g._chk_refs = _pairs(g.checks(cols, self._rows[a:a + 1]))
        return r

    def _t_now(self, tcol: str, n: int, t_last: float) -> float:
        """Partial hook: the global time of element n (default: the group's last time)."""
        clk = self.partial.clock.get(tcol) if self.partial is not None else None
        if clk is None:
            return t_last
        i = int(np.searchsorted(clk[0], n, side="right")) - 1
        return t_last if i < 0 else float(clk[1][i])

    def advance(self, position: int) -> pa.Table:
        """Sharded-mode hook: the elements up to ``position`` exist but were routed to other
        engines. Applies the pending operations with ``at <= position`` (as ``process`` would
        have) and moves the position there; returns the outputs. O(#operations applied)."""
        if position > self.position:
            self._apply_pending(position)
            self.position = int(position)
        return self.take_outputs()

    def add_history(self, rows: pa.Table) -> None:
        """Sharded-mode hook: rows of relations (with their global ``seq``) applied by other
        engines, kept as join history for the join groups created later here (existing groups
        are not fed). Rows whose seq is kept already are skipped. O(history) per call."""
        self.history.add(rows)

    def new_group(self, gcls: type[Group], params: dict) -> Group:
        """A new group; a join group starts from the history. Raises HistoryRefused if the
        history cannot serve it (a horizon dropped rows it needs: vigil.history)."""
        if gcls.keeps_history:
            self._keep_history()
            why = self.history.refusal(gcls.history_need(params))
            if why:
                raise HistoryRefused(why)
        g = gcls(self, params)
        self.gver += 1
        if g.keeps_history:
            g.bootstrap(self.history)
        return g

    def _gone(self, qid: int) -> None:
        key = self.where.pop(qid, None)
        if key is None:
            return
        g = self.groups[key]
        self.gver += 1
        g.qids.discard(qid)
        if not g.qids and not g.keeps_history:
            del self.groups[key]

    # ------------------------------------------------------------------ operations
    def add_operations(self, ops: list, lines: list[int] | None = None) -> None:
        """Queue query operations (dicts or raw JSON lines). Those whose ``at`` is not ahead of
        the elements already processed apply at once; ``at`` < position is reported ``late`` (its
        answer has ``at`` = position, ``asked_at`` = its ``at``); ``lines``: file line numbers.
        Lines are decoded in one pass and a run of registrations applied at once is applied as
        columns (:mod:`vigil.oprun`); outputs equal those of one operation at a time. The
        cyclic garbage collector pauses meanwhile (decoded operations hold no cycles; its passes
        over the new containers were half of the time at 100,000 registrations)."""
        with oprun.gc_paused():
            self._add_operations(ops, lines)

    def _add_operations(self, ops: list, lines: list[int] | None = None) -> None:
        new: list[tuple[int, int, dict]] = []
        run: list[dict] = []  # registrations to apply now, at self.position, in order
        parsed = oprun.parse_ops(ops)
        self.counts["ops_in"] += len(parsed)
        idle = not self.pending  # (only this loop's end adds to pending)
        for k, (op, err) in enumerate(parsed):
            at = op.get("at")
            if not err and at == self.position and idle and not new and op["op"] == "register":
                run.append(op)
                continue
            if run:
                oprun.register_run(self, run, self.position)
                run = []
            if err:
                self._reject_op(at if isinstance(at, int) else self.position, op.get("id"), err if lines is None else f"line {lines[k]}: {err.replace('line 1 column', 'column')}")
            elif at < self.position:
                self.counts["late"] += 1
                ident = op.get("id") or (op.get("query") or {}).get("id")
                self._emit("late", None, at, ident=ident if isinstance(ident, str) else None,
                           reason=f"operation at {at} arrived after element {self.position}; applied after element {self.position}")
                self._apply(op, self.position)
            elif at == self.position and idle and not new:
                self._apply(op, at)
            else:
                new.append((at, self.arrival, op))
                self.arrival += 1
                if len(new) == 1 and lookups.queue_rest(self, parsed, k + 1, new):
                    break
        if run:
            oprun.register_run(self, run, self.position)
        self.pending.add(new)

    @staticmethod
    def _parse_op(raw: Any) -> tuple[dict, str | None]:
        return oprun.parse_op(raw)

    def _group_key(self, family: str, params: dict) -> str:
        # the key is canonical JSON (it is stored in snapshots); params_of builds its dict in a
        # fixed order, so repr() identifies it and the JSON is encoded once per group, not per query
        r = (family, repr(params))
        key = self._keys.get(r)
        if key is None:
            key = self._keys[r] = json.dumps([family, params], sort_keys=True)
        return key

    def _apply(self, op: dict, n: int) -> None:
        kind = op["op"]
        at = op["at"]
        if kind == "register":
            q = op["query"]
            ident = q.get("id")
            try:
                spec = parse_query(q, self.columns)
            except SpecError as e:
                return self._reject_op(at, ident, str(e))
            if spec.id in self.by_id:
                return self._reject_op(at, spec.id, f"id: duplicate id {spec.id!r} (ids are unique per run)")
            gcls = registry.adapter(spec.family)
            missing = [c for c in gcls.stream_columns if self.columns is not None and c not in self.columns]
            if missing:
                return self._reject_op(at, spec.id, f"{REFUSALS[1]}{missing[0]!r}, which {spec.family} queries need")
            params = gcls.params_of(spec)
            key = self._group_key(gcls.family, params)
            qid = len(self.ids)
            try:
                g = self._ready(key)
                if g is None:
                    g = self.new_group(gcls, params)
                g.register(qid, spec, n)
            except HistoryRefused as e:
                return self._reject_op(at, spec.id, str(e))
            except Unsupported as e:
                name = self.algos.get(gcls.family) or registry.DEFAULTS[gcls.family]
                return self._reject_op(at, spec.id, f"unsupported by {gcls.family}={name}: {e}")
            self.groups[key] = g
            self.ids.append(spec.id)
            self.specs.append(jsonline.dumps(q) or spec.dump_json())
            self.by_id[spec.id] = qid
            self.where[qid] = key
            g.qids.add(qid)
            self.counts["ops_applied"] += 1
            return None
        ident = op["id"]
        qid = self.by_id.get(ident)
        if qid is None:
            return self._reject_op(at, ident, f"id: unknown query id {ident!r}")
        if kind == "terminate":
            key = self._where(qid)
            if key is not None:  # terminating a matured/terminated query is a no-op
                self.groups[key].terminate(qid)
                self._gone(qid)
            self.counts["ops_applied"] += 1
            return None
        # lookup
        key = self._where(qid, False)
        if key is None:
            return self._reject_op(at, ident, f"query {ident!r} is not alive (matured or terminated)")
        g = self.groups[key]
        if not hasattr(g, "lookup_many"):
            return self._reject_op(at, ident, f"lookup is not defined for {g.family} queries (they push events)")
        (value, keys), = g.lookup_many(np.array([qid], np.int64), n)
        self.counts["ops_applied"] += 1
        self._answer(qid, n, value, keys, asked_at=at if at != n else None)
        return None

    def _answer(self, qid: int, at: int, value, keys, asked_at=None) -> None:
        """A lookup's answer event; a per-key answer (:class:`vigil.group.PerKey`) is one event per
        key (its key texts in ``keys``), or one with an empty key list when no key has a value."""
        if isinstance(value, PerKey):
            if not value:
                self._emit("answer", qid, at, keys=[], asked_at=asked_at)
            for k, v in value:
                self._emit("answer", qid, at, value=v, keys=list(k), asked_at=asked_at)
            return
        self._emit("answer", qid, at, value=value, keys=lookups.as_list(keys), asked_at=asked_at)

    def _apply_pending(self, upto: int) -> None:
        self._apply_all(self.pending.take(self.pending.count_upto(upto)))

    def _apply_all(self, todo: list[tuple[int, int, dict]]) -> None:
        """Apply operations in order; a run of lookups at one position is answered with one
        ``lookup_many`` call per group (lookups change nothing, so only the answers' order,
        kept, matters)."""
        i = 0
        while i < len(todo):
            at, _, op = todo[i]
            n = max(at, self.position)
            j = i + 1
            kind = op["op"]
            while j < len(todo) and todo[j][2]["op"] == kind and max(todo[j][0], self.position) == n:
                j += 1
            if kind == "register":
                oprun.register_run(self, [t[2] for t in todo[i:j]], n)
            elif kind == "terminate" and j - i > 1:
                oprun.terminate_run(self, [t[2] for t in todo[i:j]], n)
            elif j - i > 1:
                self._lookup_run([t[2] for t in todo[i:j]], n)
            else:
                self._apply(op, n)
            i = j

    def _lookup_run(self, ops: list[dict], n: int) -> None:
        per: dict[str, list[int]] = {}
        qids: list[int | None] = []
        for k, op in enumerate(ops):
            qid = self.by_id.get(op["id"])
            key = None if qid is None else self.where.get(qid)
            qids.append(qid)
            if key is not None and hasattr(self.groups[key], "lookup_many"):
                per.setdefault(key, []).append(k)
        answers: dict[int, tuple] = {}
        for key, ks in per.items():
            got = self._ready(key, False).lookup_many(np.array([qids[k] for k in ks], np.int64), n)
            answers.update(zip(ks, got, strict=True))
        i = 0
        while i < len(ops):  # runs of answered lookups as columns; the others rejected by _apply
            j = i
            while j < len(ops) and j in answers:
                j += 1
            if j > i:
                lookups.emit_answers(self, [op["at"] for op in ops[i:j]], [None] * (j - i), qids[i:j],
                                   [answers[k] for k in range(i, j)], [self.position] * (j - i))
            if j < len(ops):
                self._apply(ops[j], n)
            i = j + 1

    # ------------------------------------------------------------------ elements
    def process(self, batch: pa.Table) -> pa.Table:
        """Apply a batch of stream rows (and the pending operations that fall inside it);
        returns the output events produced since the last call. The cyclic garbage collector
        pauses meanwhile (the batch's temporaries hold no cycles; its passes over them, and the
        full passes they trigger over every live object, were up to a fifth of a tour batch)."""
        with oprun.gc_paused():
            return self._process(batch)

    def _process(self, batch: pa.Table) -> pa.Table:
        n = batch.num_rows
        self.counts["rows_in"] += n
        cols = self._cols = Cols(batch)
        self._rows = np.arange(n)
        if "seq" in batch.column_names:
            seqs, bad = seq_column(batch)
            prev = np.maximum.accumulate(np.r_[self.position, seqs[:-1]]) if n else seqs
            dec = (seqs >= 0) & (seqs <= prev)
            for i in np.flatnonzero(dec).tolist():
                bad.setdefault(i, f"seq {seqs[i]} is not increasing (after {prev[i]})")
        else:
            seqs = self.position + 1 + np.arange(n, dtype=np.int64)
            bad = {}
        ok = np.ones(n, bool)
        if bad:  # rows without a usable seq have no place in the order: rejected at once
            ok[list(bad)] = False
            self._reject_rows([(None, bad[i]) for i in sorted(bad)])
        prebad: dict[int, str] = {}  # rows with a place but unreadable (malformed JSON)
        if ERROR_COLUMN in batch.column_names:
            for i, e in enumerate(batch.column(ERROR_COLUMN).to_pylist()):
                if e is not None and ok[i]:
                    prebad[i] = e
        idx = np.flatnonzero(ok)
        vseq = seqs[idx]
        p = 0
        while p < len(idx):
            self._apply_pending(int(vseq[p]) - 1)
            k = oprun.deferrable(self, int(vseq[-1]))
            q = len(idx)
            if k < len(self.pending):
                q = max(p + 1, int(np.searchsorted(vseq, self.pending[k][0], side="right")))
            last = int(vseq[q - 1])
            todo = self.pending.take(min(k, self.pending.count_upto(last)))
            self._segment(cols, idx[p:q], vseq[p:q], prebad, todo)
            self.position = last
            p = q
        self._apply_pending(self.position)
        self._keep_history()
        for key in list(self.groups):
            self._ready(key)
        self._cols = None
        return self.take_outputs()

    def _terminate_all(self, todo: list[tuple[int, int, dict]]) -> None:
        """Apply terminations as ``_apply`` would, with one operator call per group."""
        self.counts["ops_applied"] += len(todo)
        by_id, where = self.by_id, self.where
        per: dict[str, list[int]] = {}
        for qid in dict.fromkeys([by_id[op["id"]] for _, _, op in todo]):  # known ids (_deferrable), once each
            key = where.get(qid)
            if key is not None and key not in per:  # its group fed once (it may mature queries)
                self._ready(key)
                key = where.get(qid)
            if key is not None:  # terminating a matured query is a no-op
                per.setdefault(key, []).append(qid)
        for key, qids in per.items():
            g = self.groups[key]
            g.terminate_many(qids)
            for qid in qids:  # as _gone(qid) for each
                del where[qid]
            g.qids.difference_update(qids)
            if not g.qids and not g.keeps_history:
                del self.groups[key]

    def _reject_rows(self, items: list[tuple[int | None, str]]) -> None:
        self.counts["rows_rejected"] += len(items)
        for at, reason in items:
            self._emit("rejected", None, at, reason=reason)

    def _segment(self, cols: Cols, idx: np.ndarray, seqs: np.ndarray, prebad: dict[int, str],
                 terms: list[tuple[int, int, dict]] = ()) -> None:
        """Judge rows ``idx`` (seqs ``seqs``) and defer them for every group that sees them (fed
        by :meth:`_ready`), then apply ``terms``: terminations (see :meth:`_deferrable`) with
        ``at`` inside the segment; the outputs of their queries after their ``at`` are dropped.

        Rows are judged exactly as one at a time, whatever the batch: against the groups that
        have queries at the row's position, and its time against the times applied before it.
        Two things change inside a segment: a threshold group loses its last query by maturity,
        and a row that one group's time check rejects is applied to no group. A row whose fate
        hangs on them (flagged first by a threshold group, or failing a time check) therefore
        starts a new run, judged after the threshold group is fed the rows before it
        (:func:`vigil.judge.judge`). Streams without such rows are judged in one run."""
        seg = self._seg = Segment()
        looks = [t for t in terms if t[2]["op"] == "lookup"]  # answered after the runs (oprun.deferrable)
        if looks:
            terms = [t for t in terms if t[2]["op"] != "lookup"]
            t_pre = {k: g.t_last for k, g in self.groups.items() if g.time_column()}
        ends: dict[int, int] = {}
        for at, _, op in reversed(terms):  # the first termination of a query wins
            ends[self.by_id[op["id"]]] = at
        n, s, width, done = len(idx), 0, len(idx), 0
        while s < n:
            if s and done < len(terms):  # a new run: terminations before its first row apply now
                k = bisect.bisect_right(terms, int(seqs[s]) - 1, lo=done, key=lambda t: t[0])
                self._terminate_all(terms[done:k])
                done = k
            c, bad, ok = judge(self, cols, idx, s, min(n, s + width), prebad)
            width = 2 * (c - s) if c < min(n, s + width) else 2 * width
            if bad:
                self.counts["rows_rejected"] += len(bad)
                seg.reasons.extend((int(seqs[s + p]), bad[p]) for p in sorted(bad))
            self.counts["rows_applied"] += int(ok.sum())
            sub, sseq = idx[s:c], seqs[s:c]
            t_ok: dict[str, float] = {}  # time column -> the time of the run's last applied row
            self._hist_later.append((sub[ok], sseq[ok]))
            r = roster(self, cols, sub)
            entry = (sub, sseq, ok, None)
            for g in r.live:  # fed when an operation touches it or the batch ends (_ready), its
                g.__dict__.setdefault("_later", []).append(entry)  # visible rows computed then
            for g, tcol in r.timed:  # the time the next rows are judged against
                g.t_last = max(g.t_last, self._t_seen(g, cols, sub, ok, tcol, t_ok))
            for g in r.hist:
                vis = self._owned(g, g._ok_rows(cols, sub), sub) & ok
                g.__dict__.setdefault("_later", []).append((sub, sseq, ok, vis))
            s = c
        if looks:
            lookups.lookups_inside(self, looks, t_pre)
        self._terminate_all(terms[done:])
        if ends and seg.parts:
            seg.drop_after(ends)
        self._out.add(seg)
        self._seg = None

    def _t_seen(self, g: Group, cols: Cols, sub: np.ndarray, ok: np.ndarray, tcol: str, t_ok: dict) -> float:
        """The time of the last of rows ``sub`` that ``g`` sees and that were applied (``ok``)
        (-inf: none); a group that sees every row of its span shares ``t_ok[tcol]``."""
        (_, vis), o = self._span(g, cols, sub)
        if self.partial is None and g._chk[5]:
            t = t_ok.get(tcol)
            if t is None:
                last = np.flatnonzero(ok)
                t = t_ok[tcol] = float(cols.get(tcol, "time")[0][sub[last[-1]]]) if len(last) else -np.inf
            return t
        vis = self._owned(g, vis[o], sub) & ok
        return float(cols.get(tcol, "time")[0][sub[vis][-1]]) if vis.any() else -np.inf

    def _keep_history(self) -> None:
        """Rows of relations are the join state: keep the rows applied so far in this batch for join
        groups created later (before such a group is created, and at the end of a batch)."""
        later, self._hist_later = self._hist_later, []
        if not later or self._cols is None or "rel" not in self._cols.table.column_names:
            return
        batch = self._cols.table
        rows, seqs = np.concatenate([r for r, _ in later]), np.concatenate([q for _, q in later])
        if not len(rows):
            return
        rel_ok = np.asarray(batch.column("rel").is_valid().to_numpy(zero_copy_only=False), bool)[rows]
        own = self.partial.own.get("rel") if self.partial is not None else None
        if own is not None:
            rel_ok &= own[rows]
        if rel_ok.any():
            self.history.keep(batch, rows[rel_ok], seqs[rel_ok])

    def finish(self) -> pa.Table:
        """End of input: apply every pending operation (after the last element)."""
        with oprun.gc_paused():
            self._apply_all(self.pending.take(len(self.pending)))
            return self.take_outputs()

    def take_outputs(self) -> pa.Table:
        return self._out.take(self.ids, self.out_counts)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> bytes:
        """Pickle-free snapshot of everything (take outputs first: pending outputs are not kept)."""
        from .engine_state import dump

        return dump(self)

    @classmethod
    def restore(cls, data: bytes) -> Engine:
        from .engine_state import load

        return load(cls, data)


def _pairs(checks: list) -> tuple[tuple[str, str], ...]:
    """The distinct (column, kind) pairs of a group's ``checks``, in order."""
    return tuple(dict.fromkeys(r for _, refs in checks for r in refs))
