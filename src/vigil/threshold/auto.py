"""``auto``: the threshold family's default (vigil's selector, not in the paper). Per operator (= per engine
group) and per push, a cost model fitted on this machine predicts the cost of the push under each
exact algorithm -- ``dt`` (DT, Theorem 1 of Qiao, Gan, Tao: O(log^(d+1) m) per element, expensive to build),
``sweep`` (the batch sweep, O((B + m) log B) per push, d <= 2), ``scan`` (§3.1 Baseline,
O(B m) per push, nothing to build) and the stabbing structure of the dimension
(``interval_tree`` in 1D, ``seg_intv`` in 2D: O(log m + k) per element and cheap per call, the
fastest for single-element pushes at moderate m here) -- from (alive queries m, batch size B, d),
and runs the push on one of them (d >= 3: dt or scan).

Switching rule (hysteresis, ski rental). For every other algorithm a the operator accumulates a
*regret*: the sum over pushes of the predicted cost of the current algorithm minus that of a,
over the pushes where a is predicted at least ``MIN_GAIN`` (15%) cheaper, ``UNSEEN_GAIN`` (50%)
while a was never observed on this stream (reset to 0 on any other push). It switches to a once a's regret
exceeds ``HYSTERESIS`` x the predicted cost of moving there (building a on the m alive queries;
DT's build is O(m log^d m), the others' O(m)); after a switch every regret restarts at 0. A
switch costs at most ~HYSTERESIS times what staying would have lost, and no algorithm is left
and re-entered on noise. An empty operator switches for free. Predictions are corrected
online: after every push, the observed seconds of the algorithm in use (the push plus the register/terminate calls since the
previous push) over its prediction update a per-algorithm factor (moving average in log space),
which multiplies that algorithm's later predictions -- so what the model cannot see (this
stream's maturities, DT's terminations and rebuilds) steers the choice. The machine's load is
taken out first: over one decision period in 8 auto compares the process's CPU time with the
wall time that passed (``load``, >= 1) and divides its observations by it, so they are in the CPU
seconds the model was fitted in; otherwise a loaded machine would make every observed algorithm
look slower than the unobserved ones and auto would leave a good algorithm on load alone.
Terminations count too: the model has a cost per terminated query (its call, plus the rebuild
it brings closer: build(m/2) / (m/2) amortized, since every structure is rebuilt when half of the
queries it was built with are gone), weighted by the observed terminations per push (``trate``).

Start. Until the first push the queries are held by ``scan`` (O(1) per registration, nothing to
build); the first push, whose batch size is then known, moves them to the algorithm with the
cheapest predicted build plus ``FIRST_LOOKAHEAD`` decision periods of such pushes at (m, B), and
at least ``FIRST_ELEMENTS`` elements' worth of them (at B = 1 sixteen periods are only 1,024
elements, too few to pay any index, and scan at m = 50k then cost ~10% of a run) -- one
build, the same as registering there directly; from then on the regret rule decides whether a
costlier build pays.

A switch is exact: the current operator exports every alive query with its exact remaining
threshold (``export()``: tau minus the weight seen so far, read from DT's counters or the
baselines' counters) and the new one registers them with those thresholds; a query with
remaining threshold r behaves exactly like a fresh query of threshold r (a re-arming query carries
its re-arm threshold along), so outputs never change.

The model (:class:`CostModel`): per dimension and algorithm, seconds per push timed on a grid of
(m, B) and seconds per build timed on a grid of m, interpolated in log-log space (power-law
extrapolation beyond the grid); measured by ``vigil bench threshold --fit`` (fig3's workload;
``vigil.bench.threshold_fit.fit_auto_model``) and shipped in ``_auto_model.py``.

Bounds: those of the algorithm in use, plus O(m) (O(m log^d m) into dt) per switch.
"""

from __future__ import annotations

import bisect
import math
import time
from typing import Any

import numpy as np

from . import ThresholdOperator

ALGOS = ("dt", "sweep", "scan")
#: the algorithms auto chooses from, per dimension: dt, sweep, scan, plus the stabbing structure
#: of the dimension (O(log m + k) per element, cheap per call: the best for single elements at
#: moderate m on this machine)
CHOICES = {1: ("dt", "sweep", "scan", "interval_tree"), 2: ("dt", "sweep", "scan", "seg_intv")}


def choices(dim: int) -> tuple[str, ...]:
    return CHOICES.get(dim, ("dt", "scan"))


#: weight of the newest observation in the correction factors; their range
ALPHA = 0.2
FACTOR_RANGE = (0.1, 30.0)
#: a switch happens once the accumulated regret exceeds this multiple of its predicted cost
HYSTERESIS = 1.0
#: an algorithm gathers regret only while predicted at least this much cheaper (relative): two
#: algorithms of nearly equal cost (sweep and scan at moderate m) are not alternated on noise
MIN_GAIN = 0.15
#: ... and this much while it was never observed on this stream (its prediction is the model's
#: alone; a detour into a costly build on a near tie costs more than it can win)
UNSEEN_GAIN = 0.5
#: pushes smaller than this are decided on (and observed over) this many elements at a time
SMALL_BATCH = 64
#: the first push moves the queries held so far to the algorithm with the cheapest predicted
#: build plus this many decision periods of pushes like it (a stream goes on after its first push)
FIRST_LOOKAHEAD = 16
FIRST_ELEMENTS = 16_384
#: CPU seconds a cold numba cache takes to compile an algorithm's kernels (DT's push is the
#: largest kernel of the project; the others compile in a few seconds), charged to a move there
#: while they are not compiled (``vigil.jit``: a first run), like a build: on a fresh install a
#: workload that DT would serve only slightly better is not held up a minute to compile it
COMPILE_SECONDS = {"dt": 60.0}
#: an observation counts as at most OUTLIER x (at least 1/OUTLIER x) the current correction factor
OUTLIER = 2.0


def _classes() -> dict[str, type]:
    from .dt import DT
    from .stabbing import IntervalTreeStabbing, Scan, SegIntvStabbing
    from .sweep import Sweep

    return {"dt": DT, "sweep": Sweep, "scan": Scan, "interval_tree": IntervalTreeStabbing,
            "seg_intv": SegIntvStabbing}


_compiled: set[str] = set()
_looked: set[str] = set()


def _compile(name: str) -> float:
    """Seconds of compilation a move to ``name`` would cost now: 0 once its kernels are loaded in
    this process or were found in the numba cache (looked up once per process)."""
    if name not in COMPILE_SECONDS or name in _compiled:
        return 0.0
    from . import dt

    if dt._warm or (name not in _looked and dt.is_compiled()):
        _compiled.add(name)
        return 0.0
    _looked.add(name)
    return COMPILE_SECONDS[name]


class CostModel:
    """Predicted seconds per push and per build, from timings taken on this machine
    (``vigil bench threshold --fit``). ``tables[str(d)][algo]`` holds ``ms`` and ``Bs`` (grid of
    alive queries and batch sizes), ``push`` (seconds per push at every grid point) and
    ``build`` (seconds to register ms[i] queries at once). A prediction interpolates
    log(seconds) bilinearly in (log m, log B) and extrapolates linearly beyond the grid (the
    slope of the last two grid points: a power law). d >= 3 uses d = 2's tables."""

    _default: CostModel | None = None  # the fitted model, made once per process (default())

    def __init__(self, tables: dict[str, Any]) -> None:
        self.tables = tables
        self._cache: dict[tuple[str, str], tuple] = {}
        self._preds: dict[int, dict] = {}  # dim -> Auto's predictions (see predictions())

    @classmethod
    def default(cls) -> CostModel:
        """The fitted model (:mod:`._auto_model`): one instance per process for this class (its
        tables are read-only), a new one for a subclass."""
        if cls is not CostModel:
            from ._auto_model import MODEL

            return cls(MODEL["tables"])
        m = CostModel._default
        if m is None:
            from ._auto_model import MODEL

            m = CostModel._default = cls(MODEL["tables"])
        return m

    def predictions(self, dim: int) -> dict:
        """The table of :meth:`Auto._predict` (quantised (m, B, rho) -> every choice's predicted
        costs) shared by every Auto of dimension ``dim`` that uses this model: a prediction
        depends only on the model, ``dim`` and the key, so the threshold groups of an engine
        (one Auto each) compute each key once, not once per group."""
        return self._preds.setdefault(dim, {})

    def _t(self, algo: str, d: int):
        """(log(ms + 1), log(Bs), log push[i][j], log build[i]) as Python lists: a prediction is a
        few dozen float operations (numpy scalars made one miss of auto's cache cost ~180 us)."""
        key = (str(min(d, 2)), algo)
        t = self._cache.get(key)
        if t is None:
            tab = self.tables[key[0]][algo]
            t = ([math.log(x + 1.0) for x in tab["ms"]], [math.log(x) for x in tab["Bs"]],
                 [[math.log(max(x, 1e-9)) for x in row] for row in tab["push"]],
                 [math.log(max(x, 1e-9)) for x in tab["build"]])
            self._cache[key] = t
        return t

    @staticmethod
    def _cell(grid: list[float], v: float) -> tuple[int, float]:
        n = len(grid)
        if n == 1:
            return 0, 0.0
        i = min(max(bisect.bisect_left(grid, v) - 1, 0), n - 2)
        return i, (v - grid[i]) / (grid[i + 1] - grid[i])

    def push(self, algo: str, m: int, B: int, d: int, rho: float | None = None) -> float:
        """Seconds per push of B elements at m alive queries. ``rho`` = mean threshold / (m x
        mean element weight): DT's rounds scale with 1/rho, so for a table with a second push
        grid at ``rho_hi`` the log-cost is interpolated in log rho between the two tables'
        ``rho`` (extrapolated down to a tenth of the lower one; not beyond the upper one)."""
        lm, lb, P, _ = self._t(algo, d)
        z = self._grid(lm, lb, P, m, B)
        if rho is not None and rho > 0:
            hi = self._hi(algo, d)
            if hi is not None:
                r0, r1, P1 = hi
                t = min(max((math.log(rho) - r0) / (r1 - r0), -1.0), 1.0)
                z1 = self._grid(lm, lb, P1, m, B)
                z = z + t * (z1 - z)
        return float(math.exp(min(z, 50.0)))

    def _hi(self, algo: str, d: int):
        key = (str(min(d, 2)), algo, "hi")
        if key not in self._cache:
            tab = self.tables[key[0]][algo]
            self._cache[key] = None if "push_hi" not in tab else (
                math.log(tab["rho"]), math.log(tab["rho_hi"]),
                [[math.log(max(x, 1e-9)) for x in row] for row in tab["push_hi"]])
        return self._cache[key]

    def _grid(self, lm, lb, P, m: int, B: int) -> float:
        i, u = self._cell(lm, math.log(m + 1.0))
        j, v = self._cell(lb, math.log(max(B, 1)))
        i1 = min(i + 1, len(lm) - 1)
        j1 = min(j + 1, len(lb) - 1)
        uc = min(max(u, 0.0), 1.0)
        vc = min(max(v, 0.0), 1.0)
        z = ((1 - uc) * (1 - vc) * P[i][j] + uc * (1 - vc) * P[i1][j] + (1 - uc) * vc * P[i][j1]
             + uc * vc * P[i1][j1])
        # beyond the grid: a power law whose exponent is the edge cell's, within [0, 1.5]
        if u != uc and i1 > i:
            gm = lm[i1] - lm[i]
            e = min(max((P[i1][j] + vc * (P[i1][j1] - P[i1][j]) - P[i][j] - vc * (P[i][j1] - P[i][j])) / gm,
                        0.0), 1.5)
            z += (u - uc) * gm * e
        if v != vc and j1 > j:
            gb = lb[j1] - lb[j]
            e = min(max((P[i][j1] + uc * (P[i1][j1] - P[i][j1]) - P[i][j] - uc * (P[i1][j] - P[i][j])) / gb,
                        0.0), 1.5)
            z += (v - vc) * gb * e
        return z

    def term(self, algo: str, m: int, d: int) -> float:
        """Seconds per terminated query at m alive queries (0 for a model fitted without them)."""
        tab = self.tables.get(str(min(d, 2)), {}).get(algo, {})
        if "term" not in tab:
            return 0.0
        lm = self._t(algo, d)[0]
        i, u = self._cell(lm, math.log(m + 1.0))
        i1 = min(i + 1, len(lm) - 1)
        uc = min(max(u, 0.0), 1.0)
        t = tab["term"]
        return float(math.exp((1 - uc) * math.log(max(t[i], 1e-12)) + uc * math.log(max(t[i1], 1e-12))))

    def build(self, algo: str, m: int, d: int) -> float:
        lm, _, _, Bd = self._t(algo, d)
        i, u = self._cell(lm, math.log(m + 1.0))
        i1 = min(i + 1, len(lm) - 1)
        uc = min(max(u, 0.0), 1.0)
        z = (1 - uc) * Bd[i] + uc * Bd[i1]
        if u != uc and i1 > i:
            gm = lm[i1] - lm[i]
            z += (u - uc) * gm * min(max((Bd[i1] - Bd[i]) / gm, 1.0), 1.5)
        return float(math.exp(min(z, 50.0)))


class _Predictions(dict):
    """The model's predictions at one quantised key (m, B, rho) of :meth:`Auto._predict`, each
    computed on first read: ``a`` (seconds per push of algorithm ``a``), ``"build:" + a`` (seconds
    to register the m queries in it) and ``"term:" + a`` (seconds per terminated query, its call
    plus its share of the next global rebuild: every structure rebuilds on the alive queries when
    half of those it was built with are gone, DT's §4: build(m/2) / (m/2) amortized)."""

    __slots__ = ("model", "dim", "m", "B", "rho")

    def __init__(self, model: CostModel, dim: int, key: tuple[int, int, int | None]) -> None:
        super().__init__()
        self.model, self.dim = model, dim
        self.m = max(0, int(round(2 ** (key[0] / 4) - 1)))
        self.B = max(1, int(round(2 ** (key[1] / 4))))
        self.rho = None if key[2] is None else 2 ** (key[2] / 4)

    def __missing__(self, name: str) -> float:
        model, m, d = self.model, self.m, self.dim
        kind, _, algo = name.rpartition(":")
        if not kind:
            v = model.push(algo, m, self.B, d, self.rho)
        elif kind == "build":
            v = model.build(algo, m, d)
        else:
            h = max(1, m // 2)
            v = model.term(algo, m, d) + model.build(algo, h, d) / h
        self[name] = v
        return v


class Auto(ThresholdOperator):
    """Picks dt, sweep, scan or the stabbing structure per push by a fitted cost model with
    hysteresis and online correction (module docstring).
    Extra API: :meth:`switch_to` (force a switch; exact), ``current`` (name of the algorithm in
    use), ``switches`` (number of switches so far)."""

    name = "auto"

    def __init__(self, dim: int, model: CostModel | None = None, start: str | None = None,
                 adapt: bool = True) -> None:
        super().__init__(dim)
        if self.dim < 1:
            raise ValueError("dim must be >= 1")
        self.model = model or CostModel.default()
        self.algos = choices(self.dim)
        self.current = start or "scan"
        self._fresh = start is None  # no push yet: the first push picks the algorithm (module doc)
        self.op = _classes()[self.current](self.dim)
        self.regret = dict.fromkeys(self.algos, 0.0)
        self.switches = 0
        # observed / predicted cost per algorithm (log-space moving average, 1 = the model is
        # right): what the model cannot see -- this stream's maturities and signals, the
        # register/terminate calls between pushes, the machine's load -- corrects its predictions
        self.factor = dict.fromkeys(self.algos, 1.0)
        self.nobs = dict.fromkeys(self.algos, 0)  # observations per algorithm
        self.load = 1.0  # wall / CPU seconds of this process, measured every 8 periods
        self.nload = 0
        self._nper = 0
        self._lw = self._lc = -1.0
        self.adapt = bool(adapt)
        # (m, B, rho) quantised -> predictions; the default model's table is shared by every Auto
        # of this dimension (CostModel.predictions), another model's (a test's) is this Auto's own
        self._pred: dict[tuple[int, int, int | None], dict[str, float]] = (
            self.model.predictions(self.dim) if model is None else {})
        self._t_calls = 0.0  # seconds in register/terminate since the last push
        self._nterm = 0  # queries terminated in the current decision period
        self.trate = 0.0  # terminations per push (moving average): their cost counts in the choice
        self._left = 0  # elements left in the current decision period (see _begin)
        self._obs = 0.0  # seconds observed in the current decision period
        self._k = 0  # pushes in the current decision period
        self._built = False  # a switch happened: the next period's observation is skipped
        self._period: tuple[int, int, str] = (0, 1, self.current)
        # rho = mean registered threshold / (alive queries x mean element weight): DT's rounds
        # scale with 1/rho (CostModel.push)
        self._tau_sum = 0.0
        self._tau_n = 0
        self._w_sum = 0.0
        self._w_n = 0

    # ------------------------------------------------------------------ delegation
    def register(self, qids, lo, hi, tau, repeat=None) -> None:
        self.op.register(qids, lo, hi, tau, repeat)  # (a build cost, in the model's build: not observed)
        if len(tau):
            self._tau_sum += float(np.sum(tau, dtype=np.float64))
            self._tau_n += len(tau)

    def terminate(self, qids) -> None:
        self._nterm += len(qids)
        t0 = time.perf_counter()
        self.op.terminate(qids)
        self._t_calls += time.perf_counter() - t0

    def alive(self) -> int:
        return self.op.alive()

    def remaining(self):
        return self.op.remaining()

    def export(self):
        return self.op.export()

    def rho(self, m: int) -> float | None:
        """Mean registered threshold / (m x mean element weight so far), None before both exist."""
        if not (self._tau_n and self._w_n and m):
            return None
        w = self._w_sum / self._w_n
        return self._tau_sum / self._tau_n / (m * w) if w > 0 else None

    def _predict(self, m: int, B: int) -> dict[str, float]:
        """Model predictions for every choice at (m, B, rho) quantised to quarter powers of two (a
        dictionary hit per push: this runs before every push, including single elements). Each
        entry is computed when first read (:class:`_Predictions`)."""
        rho = self.rho(m)
        kr = None if rho is None else int(4 * math.log2(rho) + 0.5)
        key = (int(4 * math.log2(m + 1) + 0.5), int(4 * math.log2(B) + 0.5), kr)
        p = self._pred.get(key)
        if p is None:
            p = self._pred[key] = _Predictions(self.model, self.dim, key)
        return p

    def push(self, points, weights):
        B = len(weights)
        if not B:
            return self.op.push(points, weights)
        if self._left <= 0 or (B >= SMALL_BATCH and self._k):
            if self._left > 0:
                self._end()  # a large push is a period of its own
            if self._w_n < 1_000_000:  # the mean element weight, from each period's first push
                self._w_sum += float(np.sum(weights, dtype=np.float64))
                self._w_n += B
            self._begin(B)
        perf = time.perf_counter
        t0 = perf()
        out = self.op.push(points, weights)
        self._obs += perf() - t0
        self._k += 1
        self._left -= B
        if self._left <= 0:
            self._end()
        return out

    def _begin(self, B: int) -> None:
        """Start a decision period: choose, then push without deciding until the period holds
        SMALL_BATCH elements (a push of at least SMALL_BATCH elements is a period of its own), so
        auto's bookkeeping stays a few percent of a single-element push. The regret counts the
        expected ``k`` pushes of the period."""
        m = self.op.alive()
        k = 1 if B >= SMALL_BATCH else -(-SMALL_BATCH // B)
        if self._fresh:
            self._fresh = False
            if m:
                pred = self._predict(m, B)
                n = max(FIRST_LOOKAHEAD * k, -(-FIRST_ELEMENTS // B))
                self.switch_to(min(self.algos, key=lambda a: n * pred[a] + pred["build:" + a] + _compile(a)))
        self._decide(m, B, k)
        if self._nper % 8 == 0:  # sample the load over this period (see _end)
            self._lw, self._lc = time.perf_counter(), time.process_time()
        self._left = max(B, SMALL_BATCH)
        self._k = 0
        self._period = (m, B, self.current)
        self._obs = self._t_calls
        self._t_calls = 0.0

    def _end(self) -> None:
        """End of a decision period: fold the observed seconds into the correction factors."""
        m, B, cur = self._period
        k = self._k
        obs = self._obs + self._t_calls
        nterm, self._nterm, self._t_calls, self._left = self._nterm, 0, 0.0, 0
        self.trate = (1 - ALPHA) * self.trate + ALPHA * nterm / k
        self._nper += 1
        if self._lc >= 0:  # the machine's load: wall / CPU seconds over this period
            w, c = time.perf_counter(), time.process_time()
            if c > self._lc:
                ld = min(max((w - self._lw) / (c - self._lc), 1.0), 16.0)
                self.nload += 1
                al = max(ALPHA, 1.0 / self.nload)
                self.load = math.exp((1 - al) * math.log(self.load) + al * math.log(ld))
            self._lc = -1.0
        if not (m and self.adapt and cur == self.current) or self._built:
            self._built = False  # the first period after a switch pays lazy index builds: not observed
            return
        pred = self._predict(m, B)
        r = obs / self.load / max(k * pred[cur] + (nterm * pred["term:" + cur] if nterm else 0), 1e-9)
        r = min(max(r, FACTOR_RANGE[0]), FACTOR_RANGE[1])
        # one period counts as at most OUTLIER x the current factor (the model's 1 at first): on a
        # loaded machine a preemption of a few ms inside a period is not the algorithm's cost
        f = self.factor[cur]
        r = min(max(r, f / OUTLIER), f * OUTLIER)
        n = self.nobs[cur] = self.nobs[cur] + 1
        al = max(ALPHA, 1.0 / n)  # the first observations of an algorithm count fully
        self.factor[cur] = math.exp((1 - al) * math.log(self.factor[cur]) + al * math.log(r))

    # ------------------------------------------------------------------ choice
    def _decide(self, m: int, B: int, k: int = 1) -> None:
        """Regret bookkeeping for the next ``k`` pushes of ``B`` elements at ``m`` alive queries,
        and the switch it calls for (module doc)."""
        pred = self._predict(m, B)
        tr = self.trate
        # (entries are computed when read: a term is read only when terminations count, a build
        # only when the regret could exceed it; the values are those of reading every entry)
        cost = {a: ((pred[a] + tr * pred["term:" + a]) if tr else pred[a]) * self.factor[a] for a in self.algos}
        if m == 0:  # nothing to carry: take the best for this push
            best = min(self.algos, key=lambda a: cost[a] + _compile(a))
            if best != self.current:
                self.switch_to(best)
            return
        cur = cost[self.current]
        target, margin = None, 0.0
        for a in self.algos:
            if a == self.current:
                continue
            gain = k * (cur - cost[a])
            need = 1.0 + (MIN_GAIN if self.nobs[a] else UNSEEN_GAIN)
            reg = self.regret[a] = self.regret[a] + gain if cost[a] * need < cur else 0.0
            c = _compile(a)
            if reg - c > margin:  # else over <= reg - c <= margin (a build is >= 0)
                over = reg - HYSTERESIS * pred["build:" + a] - c
                if over > margin:
                    target, margin = a, over
        if target is not None:
            self.switch_to(target)

    def switch_to(self, name: str) -> None:
        """Move every alive query, with its exact remaining threshold, to algorithm ``name``."""
        if name not in self.algos:
            raise ValueError(f"auto cannot switch to {name!r} in d={self.dim}; expected one of {self.algos}")
        if name != self.current:
            qids, lo, hi, rem, rep = self.op.export()
            new = _classes()[name](self.dim)
            if len(qids):
                new.register(qids, lo, hi, rem, rep)
            self.op = new
            self.current = name
            self.switches += 1
            self._built = True
        self.regret = dict.fromkeys(self.algos, 0.0)

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict[str, Any]:
        return {
            "dim": self.dim,
            "current": self.current,
            "inner": self.op.state(),
            "regret": np.array([self.regret[a] for a in self.algos], np.float64),
            "factor": np.array([self.factor[a] for a in self.algos], np.float64),
            "switches": self.switches,
            "load": self.load,
            "nobs": np.array([self.nobs[a] for a in self.algos], np.int64),
            "fresh": self._fresh,
            "trate": self.trate,
            "rho_sums": np.array([self._tau_sum, self._tau_n, self._w_sum, self._w_n], np.float64),
        }

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> Auto:
        op = cls(int(s["dim"]), start=str(s["current"]))
        op.op = _classes()[op.current].from_state(s["inner"])
        reg = np.asarray(s.get("regret", np.zeros(len(op.algos))), np.float64)
        op.regret = {a: float(reg[i]) for i, a in enumerate(op.algos)}
        op.switches = int(s.get("switches", 0))
        fac = np.asarray(s.get("factor", np.ones(len(op.algos))), np.float64)
        op.factor = {a: float(fac[i]) for i, a in enumerate(op.algos)}
        op.load = float(s.get("load", 1.0))
        nobs = np.asarray(s.get("nobs", np.zeros(len(op.algos), np.int64)), np.int64)
        op.nobs = {a: int(nobs[i]) for i, a in enumerate(op.algos)}
        op._fresh = bool(s.get("fresh", False))
        op.trate = float(s.get("trate", 0.0))
        if "rho_sums" in s:
            ts, tn, ws, wn = (float(x) for x in np.asarray(s["rho_sums"], np.float64))
            op._tau_sum, op._tau_n, op._w_sum, op._w_n = ts, int(tn), ws, int(wn)
        return op
