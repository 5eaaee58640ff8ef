"""Data-sensitive processing of continuous joins (paper 003 §4): SJ-Dynamic and its band/window
counterparts (``dynamic``), and SJ-Optimum (``optimum``, evaluation only).

``dynamic`` keeps every alternative plan of the join type (select: SJ-JoinFirst,
SJ-SelectFirst, SJ-Vanilla, SJ-Hotspot, the paper's four; window: WJ-JoinFirst,
WJ-SelectFirst, WJ-SSI, WJ-Hotspot; band: BJ-SSI, BJ-QOuter, BJ-DOuter, BJ-MJ, BJ-Hotspot),
maintains their query indexes (each plan's own dynamic partition / hotspot tracker; flat
indexes rebuilt lazily, only when the plan is next used) and routes each arriving tuple to the
plan of lowest estimated cost (:mod:`vigil.joins.costs`, fitted parameters), from the runtime
statistics of :mod:`vigil.joins.histograms`:

* m' (partners S.B = r.B): equi-width histogram on the other side's stored keys;
* n' (queries whose arriving-side range holds the tuple): bucket histogram of those ranges,
  raised / lowered by the covered fraction at each register / terminate;
* n'' (the same over the hotspot tracker's scattered queries): the same histogram, updated
  with n' when the new or terminated query is scattered; rebuilt from the tracker's scattered
  set when a promotion / demotion moved intervals (amortized O(1) moves per update, Theorem 1);
* |S|, |Q|, tau, hotspot sizes and |Q^S|: exact, from the sides and the trackers;
* window joins (§4.2): m_b exact, the stored partners of key b within w_max of the tuple's time,
  read from the top level the window plans share (the other side's (key, time) order: two
  binary searches per part, O(log N) per tuple); m̄_b (and m̄_b^H) read from WJ-SSI's (and
  WJ-Hotspot's) skyline cache where key b's entry is fresh (exact, O(cached points of b));
  elsewhere (b not probed by that plan yet, stale entry, no partner) the expected skyline size
  min(m_b, 2 tau (1 + ln(1 + m_b / 2 tau))) (m_b random points over the 2 tau slab sides).

Routing a batch: the statistics and costs are evaluated for all its tuples at once (numpy /
numba, no Python call per tuple); the batch is split by chosen plan in one pass, tuples without
a stored partner set aside, and each plan probes its sub-batch (results merged and sorted by the
protocol's order; ``_route_select.probe_routed``). Band joins' costs do not depend
on the tuple (Theorem 2), so a whole batch goes to one plan. Routing costs O(1) per tuple plus
O(plans) per batch; space: every plan's indexes, O(plans x n) plus two 100-bucket histograms
per side. ``decisions`` counts the choices; ``route_seconds`` the time spent estimating and
choosing.

``optimum`` (SJ-Optimum, §5.4): runs every plan on each arriving tuple, times it, and keeps the
output of the cheapest; it also records what ``dynamic`` would have chosen (for the
decision-match fraction). O(plans) probes per tuple; for benchmarks only, never a default.
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np

from . import _route_select as rs
from . import _route_window as rw
from . import band, select, window
from ._base import SIDES, JoinBase
from ._route_window import window_partners as _window_partners
from .costs import COV_SAMPLE, MODELS, costs, coverage, features, load_params
from .histograms import IntervalHistogram, KeyHistogram
from .select import COLS
from .strategies import SelectFirst

PLANS: dict[str, dict[str, type]] = {
    "select": {"join_first": select.SJJoinFirst, "select_first": select.SJSelectFirst,
               "vanilla": select.SJVanilla, "hotspot": select.SJHotspot},
    "window": {"join_first": window.WJJoinFirst, "select_first": window.WJSelectFirst,
               "ssi": window.WJSSI, "hotspot": window.WJHotspot},
    "band": {"ssi": band.BJSSI, "qouter": band.BJQOuter, "douter": band.BJDOuter, "mj": band.BJMJ,
             "hotspot": band.BJHotspot},
}


def _other(side: str) -> str:
    return "right" if side == "left" else "left"


def _merge(outs):
    if len(outs) == 1:
        return outs[0]
    return (np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs]),
            np.concatenate([o[2] for o in outs]), sum(o[3] for o in outs))


class Dynamic(JoinBase):
    name = "dynamic"
    plans: ClassVar[dict[str, dict[str, type]]] = PLANS  # the join types served
    force: ClassVar[str | None] = None  # tests, bench: every tuple to this plan, no routing
    shadow_cls: ClassVar[type | None] = SelectFirst  # queries registered between full builds (_delta)
    # bench (select joins, batches): the plan of each next arriving tuple, consumed as they arrive
    # (the per-tuple oracle of vigil.bench.joins_dynamic), no routing
    oracle_choice: np.ndarray | None = None
    cost_file: ClassVar[str | None] = None
    # select router's choice rule (vigil.joins._route_select; chosen by measurement, see
    # docs/experiments/joins.md): margins (us, fraction of the incumbent's estimate), the fixed
    # cost of one more sub-batch (us), the per-tuple weight of the incumbent's average
    # (with the coverage fit of _cost_params, margin_rel 0 -> 0.5, probe time of 6 routed chunks
    # at scale 0.1, 10k queries: fig12 0.87x -> 1.01x the best static plan (Hotspot: the models
    # priced JoinFirst / SelectFirst ~2x low on its tail-key tuples), fig9mix 1.36x -> 1.27x)
    margin_abs: ClassVar[float] = 0.5
    margin_rel: ClassVar[float] = 0.5
    split_us: ClassVar[float] = 20.0
    window_split_us: ClassVar[float] = 200.0  # the window router's split rule (_route_window), unchanged
    alpha: ClassVar[float] = 0.01
    # online calibration (batches of >= explore_min tuples): every explore_every-th such batch
    # another plan takes a quarter of the incumbent's tuples; factor = EMA (weight cal_weight) of
    # measured time / estimate per plan, from sub-batches of >= cal_min tuples (0: off)
    # one-tuple calls: below this average estimated saving per routed tuple (us; ~ the measured
    # cost of routing one), the next quiet_skip tuples go to the incumbent unrouted
    quiet_us: ClassVar[float] = 1.5
    quiet_skip: ClassVar[int] = 15
    # one-tuple calls whose key has no stored partner (exact, from the key histogram) get the
    # empty answer without a plan call; routed sub-batches of >= order_min tuples are probed in
    # R.A order (see _run_ordered; docs/experiments/joins.md, part 2)
    skip_partnerless: ClassVar[bool] = True
    window_calibrate: ClassVar[bool] = True  # window joins: plans' factors from measured sub-batches
    cache_mbar: ClassVar[bool] = True  # window joins: m̄_b from the skyline caches (False: estimate only)
    order_min: ClassVar[int] = 64
    # routed batches: tuples without a stored partner (exact, key histogram) are not probed when at
    # least skip_min of them or the batch is split between plans anyway (_route_select.split)
    skip_min: ClassVar[int] = 64
    # ... for these plans only: SJ-Hotspot orders its batch itself since 1ac086d (R.A order measured
    # 0.997-1.014x on it, i.e. only the sort's cost), SelectFirst / Vanilla not measured
    order_plans: ClassVar[tuple[str, ...]] = ("join_first",)
    explore_every: ClassVar[int] = 0
    explore_min: ClassVar[int] = 256
    cal_min: ClassVar[int] = 64
    cal_weight: ClassVar[float] = 0.3

    def __init__(self, kind: str, output: str = "pairs") -> None:
        super().__init__(kind, output)
        self.choices = tuple(PLANS[kind])
        self.route = {c: cls(self) for c, cls in PLANS[kind].items()}
        self._sv: dict[str, np.ndarray] = {}  # select: the router's state vector per arriving side
        self._sv_old: dict[str, np.ndarray] = {}  # the last ones (incumbent, averages carried over)
        self._dec = np.zeros(len(self.choices), np.int64)  # + the select router's counts (in its sv)
        self._unrouted = [0] * len(self.choices)  # one-tuple calls sent to the incumbent while quiet
        self._quiet: dict[str, list[int]] = {}  # per arriving side: [tuples left to skip, plan]
        self.params = load_params(self.cost_file)[kind]
        self.stale = set(self.choices)
        self.keyhist = {s: KeyHistogram() for s in SIDES}
        self.nhist = {s: IntervalHistogram() for s in SIDES}
        self.shist = {s: IntervalHistogram() for s in SIDES}
        self.route_seconds = 0.0
        self.no_partner = 0  # one-tuple calls answered without a plan (no stored partner)
        self.last_choice = np.empty(0, np.int64)  # the last batch split between plans
        self._out = np.empty(0, np.int64)
        self._order, self._counts = np.empty(0, np.int64), np.zeros(rs.PLANS + 1, np.int64)  # probe_routed
        self._est = np.zeros(4)  # per plan: uncalibrated estimate (us) of the last batch's tuples
        self._warm = False  # every plan's kernels loaded (first _prepare)
        self._calibrated: dict[str, set[int]] = {}  # per arriving side: plans measured so far
        self._scal: dict = {}

    @property
    def params(self) -> dict:
        return self._params

    @params.setter
    def params(self, p: dict) -> None:
        self._params = p
        if getattr(self, "_sv", None) is not None:
            self._dec = self.decisions
            self._unrouted = [0] * len(self.choices)
            self._sv_old = {}
            self._quiet = {}
        self._sv = {}
        self._fast: dict[str, tuple] = {}
        self._band_state: tuple | None = None
        self._wparams: np.ndarray | None = None  # window router: the parameters in MODELS order
        self._wcal: dict[str, np.ndarray] = {}  # window router: calibration factor per plan, per side
        self._wseen: dict[str, set[int]] = {}  # ... and the plans measured so far
        self._wquiet: dict[str, list[int]] = {}  # ... and the quiet-batch state (_route_window)
        self._band_choice = 0

    @property
    def decisions(self) -> np.ndarray:
        """Tuples routed to each plan (index into ``choices``) so far."""
        out = self._dec + self._unrouted
        for side in SIDES:
            sv = self._sv.get(side, self._sv_old.get(side))
            if sv is not None:
                out += sv[rs.DEC:rs.DEC + rs.PLANS].astype(np.int64)
        return out

    # ------------------------------------------------------------------ queries

    def _trackers(self):
        h = self.route["hotspot"]
        return {"left": h.track, "right": h.track} if self.kind == "band" else h.track

    def _on_register(self, qid, row):
        self._update(qid, row, +1)

    def _on_terminate(self, qid, row):
        self._update(qid, row, -1)

    def _update(self, qid, row, sign):
        if self.kind == "band":
            for plan in self.route.values():
                (plan.add if sign > 0 else plan.remove)(qid, row)
            return
        trs = self._trackers()
        before = {s: (trs[s].moves, qid not in trs[s].hot_of) for s in SIDES}
        for plan in self.route.values():
            (plan.add if sign > 0 else plan.remove)(qid, row)
        for s in SIDES:
            lo, hi = row[COLS[s][2]], row[COLS[s][3]]
            self.nhist[s].update(lo, hi, sign)
            moved = trs[s].moves - before[s][0]
            scattered = (qid not in trs[s].hot_of) if sign > 0 else before[s][1]
            if moved == (1 if sign > 0 and scattered else 0):
                if scattered:
                    self.shist[s].update(lo, hi, sign)
            else:  # a promotion or demotion moved whole groups
                self.shist[s].stale = True

    def _queries_changed(self):
        self.stale, self._qcache = set(self.choices), {}  # _qcache: the plans' query arrays (select.queries)
        self._ready: set[str] = set()
        sc: dict = {"Q": len(self.q)}
        if self.kind == "band":
            tr = self.route["hotspot"].track
            sc.update(tau=self.route["ssi"].part.size(), hot=len(tr.hot), QS=len(tr.scattered))
            self._scal = sc
            return
        _, rows = self.query_arrays()
        trs = self._trackers()
        for s in SIDES:
            ml, mh = COLS[s][2:4]
            if self.nhist[s].stale:
                self.nhist[s].rebuild(rows[:, ml], rows[:, mh])
            tr = trs[s]
            if self.shist[s].stale:
                sr = np.array([self.q[i] for i in tr.scattered.iv], np.float64).reshape(-1, 5)
                self.shist[s].rebuild(sr[:, ml], sr[:, mh])
            sizes = np.array([len(m) for m in tr.hot.values()], np.float64)
            sc[s] = {"QS": len(tr.scattered), "sum_sqrt_hot": float(np.sqrt(sizes).sum()), "hot": len(sizes),
                     "QH": float(sizes.sum())}
            if self.kind == "select":
                self._coverage(s, rows, sc[s])
            if self.kind == "window":
                sc[s]["tau"] = self.route["ssi"].part[s].size()
        sc["wmax"] = float(rows[:, 4].max()) if len(rows) else 0.0
        self._scal = sc
        self._sv_old, self._sv, self._fast, self._quiet = {**self._sv_old, **self._sv}, {}, {}, {}

    def _coverage(self, side: str, rows: np.ndarray, sc: dict) -> None:
        """Select joins: cov and pbar (vigil.joins.costs) of the queries' ranges on the stored
        side of tuples arriving on ``side``, over a strided sample of <= COV_SAMPLE stored values;
        ``cov_n``: the stored count they were computed at (the router recomputes them when it
        doubles)."""
        parts = self.sides[_other(side)].parts()
        n = sum(len(p.kx) for p in parts)
        step = max(1, n // COV_SAMPLE)
        vals = np.concatenate([p.kx[::step] for p in parts]) if n else np.empty(0)
        lo, hi = COLS[side][:2]
        sc["cov"], sc["pbar"] = coverage(vals, rows[:, lo], rows[:, hi])
        sc["cov_n"] = n

    # ------------------------------------------------------------------ statistics

    def stats(self, side, key, x, t, exact: bool = False) -> dict:
        """The statistics the cost models read, per tuple of the batch (estimates; ``exact``:
        the true m', n', n'', m_b, for fitting and for measuring the estimates)."""
        o = self.sides[_other(side)]
        st: dict = {"S": len(o.seqs), "Q": self._scal["Q"]}
        if self.kind == "band":
            st.update(tau=self._scal["tau"], hot=self._scal["hot"], QS=self._scal["QS"])
            return st
        sc = self._scal[side]
        st.update(QS=sc["QS"], sum_sqrt_hot=sc["sum_sqrt_hot"], QH=sc["QH"])
        if self.kind == "select":
            st.update(cov=sc["cov"], pbar=sc["pbar"])
        if exact:
            st.update(self._exact(side, key, x, t))
        else:
            kh = self.keyhist[_other(side)]
            kh.sync(o.keys.view)
            st.update(mp=kh.estimate(key), np=self.nhist[side].estimate(x), npp=self.shist[side].estimate(x))
        if self.kind == "window":
            if "mb" not in st:  # exact, from the (key, time) order of the stored side
                k = np.ascontiguousarray(key, np.int64)
                tt = np.ascontiguousarray(t, np.float64)
                mb = np.zeros(len(k))
                for part in o.parts():
                    _window_partners(part.k2, part.t2, k, tt, float(self._scal["wmax"]), mb)
                st["mb"] = mb
            cached = self.cached_mbar(side, key, t)
            for name, tau, cm in (("mbar", sc["tau"], cached[0]), ("mbar_h", sc["hot"], cached[1])):
                tt = 2.0 * max(tau, 1)
                est = np.minimum(st["mb"], tt * (1.0 + np.log1p(st["mb"] / tt)))
                st[name] = np.where(cm >= 0, cm, est)
        return st

    def cached_mbar(self, side, key, t) -> tuple[np.ndarray, np.ndarray]:
        """Window joins: m̄_b per tuple from WJ-SSI's and WJ-Hotspot's skyline caches (exact where
        the key's entry is fresh, -1 elsewhere: the caller estimates)."""
        out = []
        for c in ("ssi", "hotspot"):
            m = None if c in self.stale or not self.cache_mbar else self.route[c].mbar(side, key, t)
            out.append(np.full(len(key), -1.0) if m is None else m)
        return out[0], out[1]

    def _exact(self, side, key, x, t) -> dict:
        mp = np.zeros(len(key))
        mb = np.zeros(len(key))
        wmax = self._scal["wmax"]
        for part in self.sides[_other(side)].parts():
            mp += np.searchsorted(part.k, key, "right") - np.searchsorted(part.k, key, "left")
            if self.kind == "window":
                for i in range(len(key)):
                    a, b = np.searchsorted(part.k2, key[i], "left"), np.searchsorted(part.k2, key[i], "right")
                    mb[i] += np.count_nonzero(t[i] - part.t2[a:b] < wmax)
        ids, rows = self.query_arrays()
        ml, mh = COLS[side][2:4]
        sc = self._trackers()[side].scattered.iv

        def stab(lo, hi):
            lo, hi = np.sort(lo), np.sort(hi)
            return (np.searchsorted(lo, x, "right") - np.searchsorted(hi, x, "left")).astype(np.float64)

        keep = np.isin(ids, np.fromiter(sc.keys(), np.int64, len(sc)))
        out = {"mp": mp, "np": stab(rows[:, ml], rows[:, mh]), "npp": stab(rows[keep, ml], rows[keep, mh])}
        if self.kind == "window":
            out["mb"] = mb
        return out

    def estimated_costs(self, side, key, x, t, exact: bool = False) -> np.ndarray:
        st = self.stats(side, key, x, t, exact)
        return costs(self.kind, self.params, features(self.kind, st), len(key), self.choices)

    def choose(self, side, key, x, t) -> np.ndarray:
        """The plan (index into ``choices``) of lowest estimated cost for each tuple."""
        if self.force is not None:
            return np.full(len(key), self.choices.index(self.force), np.int64)
        if self.kind == "band":  # tuple-independent costs (Theorem 2): one choice per (|S|, queries) state
            st = (len(self.sides[_other(side)].seqs), self._scal["Q"], self._scal["tau"], self._scal["hot"],
                  self._scal["QS"])
            if st != self._band_state:
                c = costs("band", self.params, features("band", self.stats(side, key[:1], x[:1], t[:1])), 1, self.choices)
                self._band_state, self._band_choice = st, int(np.argmin(c[0]))
            return np.full(len(key), self._band_choice, np.int64)
        if self.kind == "select":
            ch = np.empty(len(key), np.int64)
            before = self.decisions
            first = self._route_select(side, key, x, ch)
            self._dec -= self.decisions - before  # asking is not routing: no decision counted
            if first >= 0:
                ch[:] = first
            return ch
        ch = np.empty(len(key), np.int64)
        self._route_window(side, key, x, t, ch)
        return ch

    def _route_window(self, side, key, x, t, out) -> int:
        """Window joins: the plans of the batch into ``out`` (vigil.joins._route_window.route_batch:
        exact m_b, one numba pass; quiet batches estimate a sample); the plan if all got the same,
        else -1."""
        if self._wparams is None:
            self._wparams = np.array([self.params[c][p] for c, terms in MODELS["window"].items() for p, _ in terms])
        o = _other(side)
        kh = self.keyhist[o]
        if len(self.sides[o].keys.view) > kh.seen:
            kh.sync(self.sides[o].keys.view)
        return rw.route_batch(self, side, o, key, x, t, out)

    def _calibrate_window(self, side: str, c: int, n: int, seconds: float) -> None:
        """Window joins: fold plan c's measured time on a sub-batch of n tuples over its
        uncalibrated estimate (self._est[c]) into c's factor (exponential average; the first
        measurement replaces the prior; plans not measured yet get the lowest measured factor)."""
        e = self._est[c]
        if not self.window_calibrate or n < self.cal_min or e <= 0.0:
            return
        cal = self._wcal.setdefault(side, np.ones(rw.PLANS))
        seen = self._wseen.setdefault(side, set())
        w = self.cal_weight if c in seen else 1.0
        cal[c] = (1.0 - w) * cal[c] + w * seconds * 1e6 / e
        seen.add(c)
        low = min(cal[j] for j in seen)
        for j in range(rw.PLANS):
            if j not in seen:
                cal[j] = low

    def _compacted(self, side: str) -> None:
        """``side``'s stored tuples were trimmed (a window join with max_window): its key
        histogram restarts from the kept keys and the router state reading it is rebuilt."""
        self.keyhist[side] = KeyHistogram()
        arr = _other(side)
        sv = self._sv.pop(arr, None)
        if sv is not None:
            self._sv_old[arr] = sv
        self._fast.pop(arr, None)

    def _select_state(self, side: str) -> np.ndarray:
        """The select router's state vector for tuples arriving on ``side`` (rebuilt after the
        queries, the parameters or the key histogram's span changed)."""
        o = _other(side)
        kh, keys = self.keyhist[o], self.sides[o].keys.view
        if len(keys) > kh.seen:
            kh.sync(keys)
        sv = self._sv.get(side)
        sc = self._scal[side]
        redo = len(keys) >= max(2 * sc["cov_n"], 64)  # the stored side doubled: coverage again
        if redo:
            self._coverage(side, self.query_arrays()[1], sc)
        if redo or sv is None or sv[rs.KLO] != kh.lo or sv[rs.KW] != (0.0 if kh.empty else kh.w):
            pv = np.array([self.params[c][p] for c, terms in MODELS["select"].items() for p, _ in terms])
            old = sv if sv is not None else self._sv_old.get(side)
            sv = self._sv[side] = rs.state(kh, self.nhist[side], self.shist[side], float(self._scal["Q"]),
                                           float(sc["QS"]), sc["sum_sqrt_hot"], pv, self.margin_abs,
                                           self.margin_rel, self.split_us, self.alpha, old,
                                           self.explore_every, self.explore_min, self.quiet_us, sc["cov"],
                                           sc["pbar"])
        self._fast[side] = (kh, self.sides[o].keys, sv, float(len(keys)))
        return sv

    def _route_select(self, side, key, x, out) -> int:
        """Select joins: the plans of the batch into ``out``; the plan if all got the same, else -1."""
        fast = self._fast.get(side)
        if fast is None or len(fast[1]) != fast[0].seen:  # stored keys to absorb
            self._select_state(side)
            fast = self._fast[side]
        sv, S = fast[2], fast[3]
        if len(key) == 1:
            return rs.route_one(key.item(0), x.item(0), S, sv) % rs.PLANS if out is not None else \
                rs.route_one(key.item(0), x.item(0), S, sv)
        return rs.route_batch(key, x, S, sv, out, self._est)

    def _calibrate(self, side: str, c: int, seconds: float) -> None:
        """Fold plan c's measured time on its sub-batch over its uncalibrated estimate into c's
        calibration factor (exponential average)."""
        sv, e = self._sv.get(side), self._est[c]
        if sv is None or e <= 0.0:
            return
        r = seconds * 1e6 / e
        seen = self._calibrated.setdefault(side, set())
        w = self.cal_weight if c in seen else 1.0  # a plan's first measurement replaces its prior
        sv[rs.CAL + c] = (1.0 - w) * sv[rs.CAL + c] + w * r
        seen.add(c)
        prior = min(sv[rs.CAL + j] for j in seen)
        for j in range(rs.PLANS):  # a plan not measured yet: optimistic, the lowest measured factor
            if j not in seen:
                sv[rs.CAL + j] = prior

    # ------------------------------------------------------------------ probing

    def _plan(self, c: str):
        plan = self.route[c]
        if c in self.stale:
            plan.rebuild()
            self.stale.discard(c)
        return plan

    def _run(self, c, side, seqs, key, x, t, mode):
        plan = self._plan(c)
        parts = self.sides[_other(side)].parts()
        if hasattr(plan, "probe_parts"):  # WJ-SSI / WJ-Hotspot: one call over both parts
            return plan.probe_parts(side, seqs, key, x, t, mode, parts)
        outs = []
        for part in parts:
            self.cur = part
            outs.append(plan.probe(side, seqs, key, x, t, mode))
        return _merge(outs)

    def _run_ordered(self, c, side, seqs, key, x, t, mode):
        """Select joins, routed sub-batches of >= ``order_min`` tuples for a plan in ``order_plans``
        (SJ-JoinFirst): the plan probes them in the order of their range value x (R.A), so that
        consecutive tuples walk the same parts of the query index (measured on fig12, 10k-50k
        queries, batch 1,000: SJ-JoinFirst 1.06-1.26x faster; by key: 1.05x); the output's tuple
        indexes are mapped back (the protocol's order is restored by the caller). O(n log n)."""
        if self.kind != "select" or len(key) < self.order_min or c not in self.order_plans:
            return self._run(c, side, seqs, key, x, t, mode)
        p = np.argsort(x)
        q, i, o, cnt = self._run(c, side, seqs[p], key[p], x[p], t[p], mode)
        return q, p[i], o, cnt

    def _prepare(self, side, seqs, key, x, t) -> None:
        """Build every plan's index for tuples arriving on ``side`` (the pre-compiled alternatives
        of §4), at the first probe from that side after the queries changed, so that routing a
        later tuple to another plan never pays an index build inside the stream. Select joins,
        first time only: every plan also probes the batch's first tuple (count mode, output
        dropped) and the batch router runs once on a copy of its state, which loads their
        compiled kernels (numba's cache: ~5-10 ms each) here rather than at the first tuple
        routed to them."""
        for c in self.choices:
            plan = self._plan(c)
            if hasattr(plan, "built") and side not in plan.built:
                plan.built[side] = plan.build(side)
        if self.kind == "select" and not self._warm:
            self._warm = True
            one = slice(0, 1)
            for c in self.choices:
                self._run(c, side, seqs[one], key[one], x[one], t[one], 2)
            sv = self._select_state(side).copy()
            rs.route_batch(np.repeat(key[one], 2), np.repeat(x[one], 2), 1.0, sv, np.empty(2, np.int64), np.zeros(4))
            rs.split(np.repeat(key[one], 2), np.zeros(2, np.int64), sv, 0, -1, np.empty(2, np.int64), self._counts)
        self._ready.add(side)

    def _probe(self, side, seqs, key, x, t, mode):
        """Route the batch; ``route_seconds`` accumulates estimating, choosing, splitting the
        batch by plan and merging the plans' outputs (everything but the plans' probes)."""
        if len(key) == 1 and self.kind == "select" and self.force is None and side in self._ready:
            t0 = time.perf_counter()  # the one-tuple fast path: one dict lookup, one numba call
            fast = self._fast.get(side)
            if fast is None or fast[1]._n != fast[0].seen:  # stored keys to absorb / state to rebuild
                self._select_state(side)
                fast = self._fast[side]
            if self.skip_partnerless and rs.partnerless(key.item(0), fast[2]):
                self.no_partner += 1  # m' = 0 exactly: every plan's answer is empty
                self.route_seconds += time.perf_counter() - t0
                e = np.empty(0, np.int64)
                return e, e, e, 0
            quiet = self._quiet.get(side)
            if quiet is not None and quiet[0] > 0:
                quiet[0] -= 1
                c = quiet[1]
                self._unrouted[c] += 1
            else:
                c = rs.route_one(key.item(0), x.item(0), fast[3], fast[2])
                if c >= rs.PLANS:
                    c -= rs.PLANS
                    self._quiet[side] = [self.quiet_skip, c]
            self.route_seconds += time.perf_counter() - t0
            return self._run(self.choices[c], side, seqs, key, x, t, mode)
        if side not in self._ready:
            self._prepare(side, seqs, key, x, t)
        if self.force is not None:
            self._dec[self.choices.index(self.force)] += len(key)  # a static plan: batch order as when routed
            return self._run_ordered(self.force, side, seqs, key, x, t, mode)
        t0 = time.perf_counter()
        if self.kind == "select":
            if len(self._out) < len(key):
                self._out = np.empty(2 * len(key), np.int64)
            ch = self._out[: len(key)]
            if self.oracle_choice is not None:  # given plans (benchmarks: per-tuple oracle), no routing
                ch[:] = self.oracle_choice[: len(key)]
                self.oracle_choice = self.oracle_choice[len(key):]
                first = int(ch[0]) if (ch == ch[0]).all() else -1
            else:  # split in one pass, partnerless tuples set aside (_route_select.probe_routed)
                return rs.probe_routed(self, side, seqs, key, x, t, mode, ch, self._route_select(side, key, x, ch), t0)
        elif self.kind == "window":
            ch = np.empty(len(key), np.int64)
            first = self._route_window(side, key, x, t, ch)
        else:
            ch = self.choose(side, key, x, t)
            first = int(ch[0]) if (ch == ch[0]).all() else -1
        if first >= 0:
            if self.kind != "select":  # the select kernels count their own
                self._dec[first] += len(key)
            t1 = time.perf_counter()
            self.route_seconds += t1 - t0
            c1 = time.thread_time()
            res = self._run_ordered(self.choices[first], side, seqs, key, x, t, mode)
            if self.kind == "select" and self.explore_every and len(key) >= self.cal_min:
                self._calibrate(side, first, time.perf_counter() - t1)
            elif self.kind == "window":
                self._calibrate_window(side, first, len(key), time.thread_time() - c1)
            return res
        ch = ch.copy()
        self.last_choice = ch
        outs = []
        probe = 0.0
        for c in np.unique(ch).tolist():
            idx = np.flatnonzero(ch == c)
            if self.kind != "select":
                self._dec[c] += len(idx)
            sub = (seqs[idx], key[idx], x[idx], t[idx])
            t1, c1 = time.perf_counter(), time.thread_time()
            q, i, o, cnt = self._run_ordered(self.choices[c], side, *sub, mode)
            dt = time.perf_counter() - t1
            probe += dt
            if self.kind == "select" and self.explore_every and len(idx) >= self.cal_min:
                self._calibrate(side, c, dt)
            elif self.kind == "window":
                self._calibrate_window(side, c, len(idx), time.thread_time() - c1)
            outs.append((q, idx[i], o, cnt))
        res = _merge(outs)
        self.route_seconds += time.perf_counter() - t0 - probe
        return res


class Optimum(Dynamic):
    """SJ-Optimum (§5.4): every plan on every tuple, the cheapest one's output kept. Records per
    tuple the time of each plan (``times``, seconds), the cheapest plan (``best``) and what
    ``dynamic`` chose (``dyn``)."""

    name = "optimum"

    def __init__(self, kind: str, output: str = "pairs") -> None:
        super().__init__(kind, output)
        self.times: list[np.ndarray] = []
        self.best: list[int] = []
        self.dyn: list[int] = []

    def _probe(self, side, seqs, key, x, t, mode):
        dyn = self.choose(side, key, x, t)
        for c in self.choices:  # build every plan's per-side index outside the timed calls
            self._run(c, side, seqs[:0], key[:0], x[:0], t[:0], mode)
        outs = []
        for i in range(len(key)):
            sl = slice(i, i + 1)
            ts = np.empty(len(self.choices))
            res = []
            for j, c in enumerate(self.choices):
                t0 = time.perf_counter()
                res.append(self._run(c, side, seqs[sl], key[sl], x[sl], t[sl], mode))
                ts[j] = time.perf_counter() - t0
            b = int(np.argmin(ts))
            q, ii, o, cnt = res[b]
            outs.append((q, ii + i, o, cnt))
            self.times.append(ts)
            self.best.append(b)
            self.dyn.append(int(dyn[i]))
            self._dec[b] += 1
        return _merge(outs)

