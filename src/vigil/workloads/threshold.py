"""Workloads of the threshold family: the experimental setup of paper 000 (Qiao, Gan, Tao,
"Range Thresholding on Streams", SIGMOD 2016), §8.1 (static query insertions) and §8.2
(dynamic query insertions).

Setup reproduced (all sizes are parameters; ``ThresholdWorkloadParams.scaled(f)`` shrinks them):

* data space ``[0, 10^5]^d`` with an integer domain; element values uniform integers in it;
  weights ``round(N(100, 15))``, redrawn while < 1;
* a query is a square (an interval in 1D) of 10% of the data space's volume (side
  ``round(0.1^(1/d) * 10^5)``, integer bounds), centre coordinates ``N(5*10^4, (0.15*5*10^4)^2)``,
  redrawn until the whole square lies in the data space; all queries have threshold tau;
* every element stabs 10% of the queries in expectation, so a query is expected to mature after
  ``tau / (0.1 * 100) = tau / 10`` elements; each alive query is terminated at each timestamp
  with probability ``p_del = 1 - 0.1^(10 / tau)``: 90% of the queries terminate before their
  expected maturity (lifetimes are drawn as Geometric(p_del) at registration);
* modes: ``static`` (§8.1): m queries at the start, the stream runs until every query matured or
  was terminated; ``stochastic`` (§8.2): m queries at the start, then one new query with
  probability p_ins at each timestamp 1..2*10^6, 3*10^6 elements; ``fixed`` (§8.2, fixed load):
  a new query is registered as soon as one matures or is terminated, 3*10^6 elements.

Batching. Operations are applied at batch boundaries (every ``batch`` elements, default 1000):
a registration or termination that the paper schedules at timestamp i is applied at the first
boundary at or after i (a query lives at least one batch). At full scale the shift is at most
0.05% of a query's expected life, and it makes operator calls batch-sized (a Python call per
element would dominate every algorithm's cost).

Feedback. Whether the stream stops (static) and when replacement queries arrive (fixed load)
depends on which queries matured, so a concrete trace is produced by driving an exact operator
(the *resolver*) through the workload: ``generate_trace(params)``. The trace records every step
and the resolver's outputs; every algorithm of a benchmark then replays the same trace and its
outputs can be checked against the recorded ones.

Steps are tuples: ``("register", qids, lo, hi, tau)``, ``("terminate", qids)``,
``("push", points, weights)`` with the dtypes of the ThresholdOperator protocol.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

MODES = ("static", "stochastic", "fixed")


@dataclass(frozen=True)
class ThresholdWorkloadParams:
    dim: int = 1
    m: int = 1_000_000  # queries registered before the stream starts
    tau: int = 20_000_000  # threshold of every query
    mode: str = "static"  # static | stochastic | fixed
    p_ins: float = 0.3  # stochastic mode: registration probability per timestamp
    n_elements: int | None = None  # stream length; None = static default (until all done)
    ins_until: int = 2_000_000  # stochastic mode: registrations at timestamps 1..ins_until
    batch: int = 1000  # elements per push step
    seed: int = 0
    domain: int = 100_000
    volume: float = 0.1  # query volume / data-space volume
    center_mean: float = 50_000.0
    center_sd_frac: float = 0.15  # sd of a centre coordinate, as a fraction of its mean
    weight_mean: float = 100.0
    weight_sd: float = 15.0
    survive: float = 0.1  # probability that a query is still alive at its expected maturity
    max_elements: int | None = None  # safety cap (static); default 3 x expected maturity

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.dim < 1 or self.m < 0 or self.tau < 1 or self.batch < 1:
            raise ValueError(f"bad workload parameters {self}")

    @property
    def expected_maturity(self) -> float:
        """Elements until a query's expected maturity: tau / (volume * mean weight)."""
        return self.tau / (self.volume * self.weight_mean)

    @property
    def p_del(self) -> float:
        return -math.expm1(math.log(self.survive) / self.expected_maturity)

    @property
    def side(self) -> int:
        return int(round(self.volume ** (1.0 / self.dim) * self.domain))

    @property
    def stream_length(self) -> int:
        if self.n_elements is not None:
            return int(self.n_elements)
        if self.mode != "static":
            return 3_000_000
        if self.max_elements is not None:
            return int(self.max_elements)
        return int(3 * self.expected_maturity) + self.batch

    def scaled(self, f: float) -> ThresholdWorkloadParams:
        """Shrink (f < 1) the paper's sizes: m, tau, the stream length and the insertion window
        scale by f, so the expected maturity (in elements) scales by f as well."""
        n = None if self.n_elements is None else max(1, int(round(self.n_elements * f)))
        if n is None and self.mode != "static":
            n = max(1, int(round(3_000_000 * f)))
        return replace(self, m=max(1, int(round(self.m * f))), tau=max(1, int(round(self.tau * f))),
                       n_elements=n, ins_until=max(0, int(round(self.ins_until * f))))

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(expected_maturity=self.expected_maturity, p_del=self.p_del, side=self.side,
                 stream_length=self.stream_length)
        return d


def draw_elements(rng: np.random.Generator, n: int, p: ThresholdWorkloadParams):
    """n elements: uniform integer points in [0, domain]^d (float64[n,d]), int64[n] weights
    from N(weight_mean, weight_sd) rounded, redrawn while < 1."""
    pts = rng.integers(0, p.domain + 1, size=(n, p.dim)).astype(np.float64)
    w = np.rint(rng.normal(p.weight_mean, p.weight_sd, n)).astype(np.int64)
    bad = np.flatnonzero(w < 1)
    while bad.shape[0]:
        w[bad] = np.rint(rng.normal(p.weight_mean, p.weight_sd, bad.shape[0])).astype(np.int64)
        bad = bad[w[bad] < 1]
    return pts, w


def draw_queries(rng: np.random.Generator, k: int, p: ThresholdWorkloadParams):
    """k query squares of side ``p.side`` (integer bounds) with N(center_mean, sd) centres,
    redrawn until they lie in [0, domain]^d. Returns lo, hi float64[k,d]."""
    side = p.side
    sd = p.center_sd_frac * p.center_mean
    lo = np.empty((k, p.dim), np.float64)
    todo = np.arange(k)
    while todo.shape[0]:
        c = rng.normal(p.center_mean, sd, size=(todo.shape[0], p.dim))
        low = np.rint(c - side / 2.0)
        ok = np.all((low >= 0) & (low + side <= p.domain), axis=1)
        lo[todo[ok]] = low[ok]
        todo = todo[~ok]
    return lo, lo + side


@dataclass
class ThresholdTrace:
    """A concrete workload: steps + the resolver's outputs per step (None for non-push)."""

    params: ThresholdWorkloadParams
    steps: list[tuple] = field(default_factory=list)
    outputs: list[tuple[np.ndarray, np.ndarray] | None] = field(default_factory=list)
    alive_before: list[int] = field(default_factory=list)  # alive queries before each step
    resolver: str = ""
    resolver_seconds: list[float] = field(default_factory=list)  # per step: the resolver's call time

    def step_ops(self, i: int) -> int:
        """Operations of step i in the paper's sense: one per element, registration,
        termination and maturity."""
        s = self.steps[i]
        if s[0] == "push":
            out = self.outputs[i]
            return s[2].shape[0] + (0 if out is None else out[0].shape[0])
        return s[1].shape[0]

    def stats(self) -> dict[str, int]:
        el = reg = term = mat = 0
        for i, s in enumerate(self.steps):
            if s[0] == "push":
                el += s[2].shape[0]
                mat += self.outputs[i][0].shape[0]
            elif s[0] == "register":
                reg += s[1].shape[0]
            else:
                term += s[1].shape[0]
        return {"elements": el, "registered": reg, "terminated": term, "matured": mat,
                "operations": el + reg + term + mat, "steps": len(self.steps),
                "max_alive": int(max(self.alive_before, default=0))}


def default_resolver(dim: int):
    """The fastest exact operator available for dim: DT if it imports, else a baseline."""
    from ..registry import IMPLEMENTATIONS, resolve

    names = ["dt", "interval_tree" if dim == 1 else "seg_intv" if dim == 2 else "scan", "scan"]
    for name in names:
        try:
            if name not in IMPLEMENTATIONS["threshold"]:
                if name != "dt":
                    continue
                from ..threshold.dt import DT  # before DT is registered

                return DT(dim)
            return resolve("threshold", name)(dim)
        except Exception:  # noqa: BLE001 - DT may be absent or unfinished; fall back
            continue
    from ..threshold.stabbing import Scan

    return Scan(dim)


def generate_trace(params: ThresholdWorkloadParams, resolver=None, on_step=None) -> ThresholdTrace:
    """Drive ``resolver`` (an exact ThresholdOperator of dimension params.dim; default
    ``default_resolver``) through the workload and record the concrete trace. Deterministic for
    a given seed as long as the resolver is exact. ``on_step(elements_so_far)`` is called after
    every push (progress reporting). The time of every resolver call is recorded in
    ``trace.resolver_seconds`` (only the operator call, not the generation)."""
    p = params
    op = resolver if resolver is not None else default_resolver(p.dim)
    ss = np.random.SeedSequence(p.seed)
    rng_q, rng_e, rng_i = (np.random.default_rng(s) for s in ss.spawn(3))
    B = p.batch
    n_end = p.stream_length
    p_del = p.p_del
    trace = ThresholdTrace(params=p, resolver=getattr(op, "name", type(op).__name__))
    alive = np.zeros(max(16, p.m), np.bool_)
    n_q = 0  # queries created so far (qids 0..n_q-1)
    n_alive = 0
    term_at: dict[int, list[np.ndarray]] = {}

    def new_queries(k: int, boundary: int):
        nonlocal n_q, alive, n_alive
        qids = np.arange(n_q, n_q + k, dtype=np.int64)
        lo, hi = draw_queries(rng_q, k, p)
        life = rng_q.geometric(p_del, size=k).astype(np.int64) if p_del > 0 else np.full(k, 2**62)
        death = np.maximum(-(-(boundary * B + life) // B), boundary + 1)  # first boundary >= death
        for b in np.unique(death):
            if b * B < n_end:
                term_at.setdefault(int(b), []).append(qids[death == b])
        if n_q + k > alive.shape[0]:
            alive = np.concatenate([alive, np.zeros(max(n_q + k, 2 * alive.shape[0]) - alive.shape[0], np.bool_)])
        alive[n_q:n_q + k] = True
        n_q += k
        n_alive += k
        return ("register", qids, lo, hi, np.full(k, p.tau, np.int64))

    perf = time.perf_counter

    def apply(step, out=None):
        trace.alive_before.append(n_alive)
        trace.steps.append(step)
        trace.outputs.append(out)

    replace_next = 0  # fixed load: replacements owed for maturities of the previous push
    k = 0
    t = 0
    while t < n_end:
        # 1. terminations due at this boundary
        due = term_at.pop(k, None)
        n_term = 0
        if due:
            ids = np.concatenate(due)
            ids = ids[alive[ids]]
            if ids.shape[0]:
                step = ("terminate", ids)
                apply(step)
                t0 = perf()
                op.terminate(ids)
                trace.resolver_seconds.append(perf() - t0)
                alive[ids] = False
                n_alive -= ids.shape[0]
                n_term = ids.shape[0]
        # 2. registrations at this boundary
        if k == 0:
            n_new = p.m
        elif p.mode == "stochastic":
            lo_t, hi_t = (k - 1) * B, min(k * B, p.ins_until)  # arrivals at timestamps (lo_t, hi_t]
            n_new = int(rng_i.binomial(hi_t - lo_t, p.p_ins)) if hi_t > lo_t else 0
        elif p.mode == "fixed":
            n_new = n_term + replace_next
        else:
            n_new = 0
        if n_new:
            step = new_queries(n_new, k)
            apply(step)
            t0 = perf()
            op.register(*step[1:])
            trace.resolver_seconds.append(perf() - t0)
        # 3. the batch of elements
        n = min(B, n_end - t)
        pts, w = draw_elements(rng_e, n, p)
        trace.alive_before.append(n_alive)
        t0 = perf()
        q, o = op.push(pts, w)
        trace.resolver_seconds.append(perf() - t0)
        q = np.asarray(q, dtype=np.int64)
        o = np.asarray(o, dtype=np.int64)
        trace.steps.append(("push", pts, w))
        trace.outputs.append((q, o))
        alive[q] = False
        n_alive -= q.shape[0]
        replace_next = q.shape[0]
        t += n
        k += 1
        if on_step is not None:
            on_step(t)
        if p.mode == "static" and n_alive == 0:
            break
    return trace
