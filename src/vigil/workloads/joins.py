"""Workloads of paper 003 §5 (Table I): tables R(A, B) and S(B, C), 100,000 tuples each, 100,000
continuous queries, then a stream of insertions into R.

Table I, and where we had to choose:

* R.B ~ Uni(0, D), S.B ~ Normal(D/2, (D/10)^2) discretised to [0, D]; the paper's D = 10,000,
  but it also states that an incoming R tuple joins ~1,000 S tuples on average (Fig. 7), which
  needs |S| / D ~ 1,000: ``b_domain`` D is a parameter (select joins default D = 100: the join
  rate the paper states; band joins D = 10,000 as in Table I).
* R.A, S.C ~ Uni(0, 1,000,000).
* rangeA midpoints ~ Normal(mu1, sigma1^2), lengths ~ Normal(a_len, (a_len/5)^2): a_len sets the
  event selection rate (fraction of queries whose rangeA holds an incoming R.A), 0.1 by default.
* rangeC midpoints ~ Uni(0, c_domain), lengths ~ Normal(c_len, (c_len/5)^2). Table I's row
  "Midpoint of rangeB_i, rangeC_i: Uni(0, 10000)" gives one domain for both, but rangeB lives on
  the B domain [0, 10,000] and rangeC on S.C's [0, 10^6]; the text says only that "the midpoints
  of rangeC_i are uniformly distributed", and its findings (SJ-JoinFirst below 5% of SJ-SSI, its
  R-tree slower as the query rectangles overlap more) need the rangeC's spread where the S.C
  values are. Default c_domain = 10^6 (S.C's whole domain: the paper's workload);
  c_domain = 10^4 is the "clustered C" variant (midpoints Uni(0, 10,000) read literally: only
  S tuples with C < ~10,000, 1% of them, can be in any rangeC, and an R-tree of the query
  rectangles rejects the other 99% of a tuple's partners at its root). c_len sets the stabbing
  number tau; by default c_len = 600 c_domain / 10^4 (60,000 on S.C's domain, 600 on the
  clustered variant), which gives tau ~ 30-40 at 10^4-10^5 queries, the "roughly 30" of Fig. 7(i).
* band ranges rangeB: midpoints ~ Uni(-D/2, D/2), lengths ~ Normal(b_len, (b_len/5)^2).
Lengths are clipped to >= 0. Query tables are float64 rows (alo, ahi, clo, chi) or (lo, hi).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Spec:
    """A minimal stand-in for vigil.specs join specs (what the join operators read), so that a
    benchmark registers 10^5 queries without validating 10^5 pydantic models."""

    id: str
    type: str
    band: tuple[float, float] | None = None
    left_range: dict = field(default_factory=dict)
    right_range: dict = field(default_factory=dict)
    window: float | None = None

    def range_bounds(self, side: str) -> dict[str, tuple[float, float]]:
        return dict(self.left_range if side == "left" else self.right_range)


def _lengths(rng, n, mean):
    return np.clip(rng.normal(mean, mean / 5, n), 0, None)


def select_workload(n_queries=100_000, n_tuples=100_000, n_arrivals=10_000, b_domain=100, a_len=100_000.0,
                    a_mid_sigma=250_000.0, c_len=None, seed=0, window=None, c_domain=1_000_000.0):
    rng = np.random.default_rng(seed)
    D = b_domain
    s_key = np.clip(np.rint(rng.normal(D / 2, D / 10, n_tuples)), 0, D).astype(np.int64)
    s_c = rng.uniform(0, 1e6, n_tuples).round()
    r_key = rng.integers(0, D + 1, n_tuples).astype(np.int64)
    r_a = rng.uniform(0, 1e6, n_tuples).round()
    in_key = rng.integers(0, D + 1, n_arrivals).astype(np.int64)
    in_a = rng.uniform(0, 1e6, n_arrivals).round()
    amid = rng.normal(500_000, a_mid_sigma, n_queries)
    alen = _lengths(rng, n_queries, a_len)
    cmid = rng.uniform(0, c_domain, n_queries)
    clen = _lengths(rng, n_queries, 600.0 * c_domain / 10_000 if c_len is None else c_len)
    rows = np.stack([amid - alen / 2, amid + alen / 2, cmid - clen / 2, cmid + clen / 2], 1).round()
    w = None if window is None else rng.uniform(window / 2, window, n_queries)
    return {"s_key": s_key, "s_x": s_c, "r_key": r_key, "r_x": r_a, "in_key": in_key, "in_x": in_a,
            "rows": rows, "w": w}


def cluster_rangec(w: dict, hot_frac: float, seed: int, c_domain: float = 10_000.0) -> dict:
    """Fig. 9's query set (in place on a select workload ``w``): a fraction ``hot_frac`` of the
    rangeC's drawn around 20 hot centres in [0, c_domain / 2] (spread c_domain / 500, lengths ~
    Normal(c_domain / 50, (c_domain / 500)^2)), the rest short ranges (~ Normal(c_domain / 5,000,
    (c_domain / 20,000)^2)) scattered over the disjoint [c_domain / 2, c_domain]. c_domain =
    10^4 (the default, ``bench joins --preset fig9``): the positions of Table I's rangeC row read
    literally, so the rangeC's cover ~1% of S.C's domain [0, 10^6]; c_domain = 10^6: the same
    query set (the same stabbing groups) spread over S.C's domain, as the default select
    workload spreads its rangeC's (``select_workload``'s c_domain)."""
    rng = np.random.default_rng(seed + 1)
    n = len(w["rows"])
    f = c_domain / 10_000
    hot = rng.random(n) < hot_frac
    centres = rng.uniform(0, 5_000, 20)
    mid = np.where(hot, centres[rng.integers(0, 20, n)] + rng.normal(0, 20, n), rng.uniform(5_000, 10_000, n))
    ln = np.where(hot, np.abs(rng.normal(200, 20, n)), np.abs(rng.normal(2, 0.5, n)))
    w["rows"][:, 2] = (f * (mid - ln / 2)).round()
    w["rows"][:, 3] = (f * (mid + ln / 2)).round()
    return w


def band_workload(n_queries=100_000, n_tuples=100_000, n_arrivals=10_000, b_domain=10_000, b_len=40.0, seed=0,
                  centres=0):
    """``centres`` > 0: our clustered, selective variant (not Table I): the band midpoints are
    drawn around that many uniform centres (spread b_len), keys are real-valued, so most bands
    of a group miss every stored key near r.B + centre (few affected queries per tuple)."""
    rng = np.random.default_rng(seed)
    D = b_domain
    rnd = (lambda a: a) if centres else np.rint
    s_key = np.clip(rnd(rng.normal(D / 2, D / 10, n_tuples)), 0, D).astype(np.float64)
    r_key = (rng.uniform(0, D, n_tuples) if centres else rng.integers(0, D + 1, n_tuples)).astype(np.float64)
    in_key = (rng.uniform(0, D, n_arrivals) if centres else rng.integers(0, D + 1, n_arrivals)).astype(np.float64)
    mid = rng.uniform(-D / 2, D / 2, n_queries)
    if centres:
        c = rng.uniform(-D / 2, D / 2, int(centres))
        mid = c[rng.integers(0, int(centres), n_queries)] + rng.normal(0, b_len / 4, n_queries)
    ln = _lengths(rng, n_queries, b_len)
    rows = np.stack([mid - ln / 2, mid + ln / 2], 1)
    if not centres:
        rows = rows.round(1)
    return {"s_key": s_key, "r_key": r_key, "in_key": in_key, "rows": rows}


def specs(kind: str, rows: np.ndarray, w: np.ndarray | None = None) -> list[Spec]:
    out = []
    for i, r in enumerate(rows.tolist()):
        if kind == "band":
            out.append(Spec(f"q{i}", "band_join", band=(r[0], r[1])))
        else:
            s = Spec(f"q{i}", "select_join" if kind == "select" else "window_join",
                     left_range={"A": (r[0], r[1])}, right_range={"C": (r[2], r[3])})
            if kind == "window":
                s.window = float(w[i])
            out.append(s)
    return out


def arrivals(n: int, b_domain: int, rng, key_spread: float | None = None, a_sigma: float | None = None):
    """Incoming R tuples for the data-sensitive experiments (paper 003 §5.4): keys ~ Normal(D/2,
    (key_spread D)^2) rounded and clipped to [0, D] (a small spread puts them where S.B is dense:
    a higher event join rate, Fig. 15; None: Uni(0, D) as Table I), R.A ~ Normal(500,000,
    a_sigma^2) (a small sigma puts them where the rangeA's are dense: a higher event selection
    rate, Fig. 18; None: Uni(0, 10^6) as Table I)."""
    D = b_domain
    if key_spread is None:
        key = rng.integers(0, D + 1, n)
    else:
        key = np.clip(np.rint(rng.normal(D / 2, key_spread * D, n)), 0, D)
    a = rng.uniform(0, 1e6, n) if a_sigma is None else rng.normal(500_000, a_sigma, n)
    return key.astype(np.int64), a.round()
