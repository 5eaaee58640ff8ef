"""``auto``: the threshold family's default (issue 15, deliverable 3). Per operator (= per engine
group) and per push, a cost model fitted on this machine predicts the cost of the push under each
exact algorithm -- ``dt`` (paper 000, Theorem 1: O(log^(d+1) m) per element, expensive to build),
``sweep`` (the batch sweep, O((B + m) log B) per push, d <= 2), ``scan`` (§3.1 Baseline,
O(B m) per push, nothing to build) and the stabbing structure of the dimension
(``interval_tree`` in 1D, ``seg_intv`` in 2D: O(log m + k) per element and cheap per call, the
fastest for single-element pushes at moderate m here) -- from (alive queries m, batch size B, d),
and runs the push on one of them (d >= 3: dt or scan).

Switching rule (hysteresis, ski rental). For every other algorithm a the operator accumulates a
*regret*: the sum over pushes of max(0, predicted cost of the current algorithm - predicted cost
of a) (reset to 0 whenever a would have been worse on a push). It switches to a once a's regret
exceeds ``HYSTERESIS`` x the predicted cost of moving there (building a on the m alive queries;
DT's build is O(m log^d m), the others' O(m)); after a switch every regret restarts at 0. A
switch costs at most ~HYSTERESIS times what staying would have lost, and no algorithm is left
and re-entered on noise. An empty operator switches for free. Predictions are corrected
online: after every push, the observed seconds of the algorithm in use (the push plus the register/terminate calls since the
previous push) over its prediction update a per-algorithm factor (moving average in log space),
which multiplies that algorithm's later predictions -- so what the model cannot see (this
stream's maturities, DT's terminations and rebuilds, the machine's load) steers the choice.

A switch is exact: the current operator exports every alive query with its exact remaining
threshold (``remaining()``: tau minus the weight seen so far, read from DT's counters or the
baselines' counters) and the new one registers them with those thresholds; a query with
remaining threshold r behaves exactly like a fresh query of threshold r, so outputs never change.

The model (:class:`CostModel`): per dimension and algorithm, seconds per push timed on a grid of
(m, B) and seconds per build timed on a grid of m, interpolated in log-log space (power-law
extrapolation beyond the grid); measured by ``vigil bench threshold --fit`` (fig3's workload;
``vigil.bench.threshold.fit_auto_model``) and shipped in ``_auto_model.py``.

Bounds: those of the algorithm in use, plus O(m) (O(m log^d m) into dt) per switch.
"""

from __future__ import annotations

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


def _classes() -> dict[str, type]:
    from .dt import DT
    from .stabbing import IntervalTreeStabbing, Scan, SegIntvStabbing
    from .sweep import Sweep

    return {"dt": DT, "sweep": Sweep, "scan": Scan, "interval_tree": IntervalTreeStabbing,
            "seg_intv": SegIntvStabbing}


class CostModel:
    """Predicted seconds per push and per build, from timings taken on this machine
    (``vigil bench threshold --fit``). ``tables[str(d)][algo]`` holds ``ms`` and ``Bs`` (grid of
    alive queries and batch sizes), ``push`` (seconds per push at every grid point) and
    ``build`` (seconds to register ms[i] queries at once). A prediction interpolates
    log(seconds) bilinearly in (log m, log B) and extrapolates linearly beyond the grid (the
    slope of the last two grid points: a power law). d >= 3 uses d = 2's tables."""

    def __init__(self, tables: dict[str, Any]) -> None:
        self.tables = tables
        self._cache: dict[tuple[str, str], tuple] = {}

    @classmethod
    def default(cls) -> CostModel:
        from ._auto_model import MODEL

        return cls(MODEL["tables"])

    def _t(self, algo: str, d: int):
        key = (str(min(d, 2)), algo)
        t = self._cache.get(key)
        if t is None:
            tab = self.tables[key[0]][algo]
            t = (np.log(np.asarray(tab["ms"], float) + 1.0), np.log(np.asarray(tab["Bs"], float)),
                 np.log(np.maximum(np.asarray(tab["push"], float), 1e-9)),
                 np.log(np.maximum(np.asarray(tab["build"], float), 1e-9)))
            self._cache[key] = t
        return t

    @staticmethod
    def _cell(grid: np.ndarray, v: float) -> tuple[int, float]:
        if grid.shape[0] == 1:
            return 0, 0.0
        i = int(np.clip(np.searchsorted(grid, v) - 1, 0, grid.shape[0] - 2))
        return i, (v - grid[i]) / (grid[i + 1] - grid[i])

    def push(self, algo: str, m: int, B: int, d: int) -> float:
        lm, lb, P, _ = self._t(algo, d)
        i, u = self._cell(lm, math.log(m + 1.0))
        j, v = self._cell(lb, math.log(max(B, 1)))
        i1 = min(i + 1, lm.shape[0] - 1)
        j1 = min(j + 1, lb.shape[0] - 1)
        uc = min(max(u, 0.0), 1.0)
        vc = min(max(v, 0.0), 1.0)
        z = ((1 - uc) * (1 - vc) * P[i, j] + uc * (1 - vc) * P[i1, j] + (1 - uc) * vc * P[i, j1]
             + uc * vc * P[i1, j1])
        # beyond the grid: a power law whose exponent is the edge cell's, within [0, 1.5]
        if u != uc and i1 > i:
            gm = lm[i1] - lm[i]
            e = min(max((P[i1, j] + vc * (P[i1, j1] - P[i1, j]) - P[i, j] - vc * (P[i, j1] - P[i, j])) / gm,
                        0.0), 1.5)
            z += (u - uc) * gm * e
        if v != vc and j1 > j:
            gb = lb[j1] - lb[j]
            e = min(max((P[i, j1] + uc * (P[i1, j1] - P[i, j1]) - P[i, j] - uc * (P[i1, j] - P[i, j])) / gb,
                        0.0), 1.5)
            z += (v - vc) * gb * e
        return float(math.exp(min(z, 50.0)))

    def build(self, algo: str, m: int, d: int) -> float:
        lm, _, _, Bd = self._t(algo, d)
        i, u = self._cell(lm, math.log(m + 1.0))
        i1 = min(i + 1, lm.shape[0] - 1)
        uc = min(max(u, 0.0), 1.0)
        z = (1 - uc) * Bd[i] + uc * Bd[i1]
        if u != uc and i1 > i:
            gm = lm[i1] - lm[i]
            z += (u - uc) * gm * min(max((Bd[i1] - Bd[i]) / gm, 1.0), 1.5)
        return float(math.exp(min(z, 50.0)))


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
        self.current = start or ("sweep" if self.dim <= 2 else "scan")
        self.op = _classes()[self.current](self.dim)
        self.regret = dict.fromkeys(self.algos, 0.0)
        self.switches = 0
        # observed / predicted cost per algorithm (log-space moving average, 1 = the model is
        # right): what the model cannot see -- this stream's maturities and signals, the
        # register/terminate calls between pushes, the machine's load -- corrects its predictions
        self.factor = dict.fromkeys(self.algos, 1.0)
        self.adapt = bool(adapt)
        self._pred: dict[tuple[int, int], dict[str, float]] = {}  # (m, B) quantised -> predictions
        self._t_calls = 0.0  # seconds in register/terminate since the last push

    # ------------------------------------------------------------------ delegation
    def register(self, qids, lo, hi, tau) -> None:
        t0 = time.perf_counter()
        self.op.register(qids, lo, hi, tau)
        self._t_calls += time.perf_counter() - t0

    def terminate(self, qids) -> None:
        t0 = time.perf_counter()
        self.op.terminate(qids)
        self._t_calls += time.perf_counter() - t0

    def alive(self) -> int:
        return self.op.alive()

    def remaining(self):
        return self.op.remaining()

    def _predict(self, m: int, B: int) -> dict[str, float]:
        """Model predictions for every choice at (m, B) quantised to quarter powers of two (a
        dictionary hit per push: this runs before every push, including single elements)."""
        key = (int(4 * math.log2(m + 1) + 0.5), int(4 * math.log2(B) + 0.5))
        p = self._pred.get(key)
        if p is None:
            mq = max(0, int(round(2 ** (key[0] / 4) - 1)))
            bq = max(1, int(round(2 ** (key[1] / 4))))
            p = {a: self.model.push(a, mq, bq, self.dim) for a in self.algos}
            p.update({"build:" + a: self.model.build(a, mq, self.dim) for a in self.algos})
            self._pred[key] = p
        return p

    def push(self, points, weights):
        B = int(np.asarray(weights).shape[0])
        if not B:
            return self.op.push(points, weights)
        m = self.op.alive()
        self._decide(m, B)
        t0 = time.perf_counter()
        out = self.op.push(points, weights)
        obs = time.perf_counter() - t0 + self._t_calls
        self._t_calls = 0.0
        if m and self.adapt:
            pred = self._predict(m, B)[self.current]
            r = min(max(obs / max(pred, 1e-9), FACTOR_RANGE[0]), FACTOR_RANGE[1])
            f = self.factor[self.current]
            self.factor[self.current] = math.exp((1 - ALPHA) * math.log(f) + ALPHA * math.log(r))
        return out

    # ------------------------------------------------------------------ choice
    def _decide(self, m: int, B: int) -> None:
        pred = self._predict(m, B)
        cost = {a: pred[a] * self.factor[a] for a in self.algos}
        if m == 0:  # nothing to carry: take the best for this push
            best = min(self.algos, key=cost.__getitem__)
            if best != self.current:
                self.switch_to(best)
            return
        cur = cost[self.current]
        target, margin = None, 0.0
        for a in self.algos:
            if a == self.current:
                continue
            gain = cur - cost[a]
            self.regret[a] = self.regret[a] + gain if gain > 0 else 0.0
            over = self.regret[a] - HYSTERESIS * pred["build:" + a]
            if over > margin:
                target, margin = a, over
        if target is not None:
            self.switch_to(target)

    def switch_to(self, name: str) -> None:
        """Move every alive query, with its exact remaining threshold, to algorithm ``name``."""
        if name not in self.algos:
            raise ValueError(f"auto cannot switch to {name!r} in d={self.dim}; expected one of {self.algos}")
        if name != self.current:
            qids, lo, hi, rem = self.op.remaining()
            new = _classes()[name](self.dim)
            if len(qids):
                new.register(qids, lo, hi, rem)
            self.op = new
            self.current = name
            self.switches += 1
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
        return op
