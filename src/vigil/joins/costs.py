"""Cost models of the data-sensitive join router (paper 003 §4.1, §4.2; parameters fitted as in
§5.4, Table II).

Per arriving tuple (output cost excluded, as in the paper), with |S| the stored tuples of the
other side, |Q| the alive queries, m' the partners (S.B = r.B), n' / n'' the (scattered) queries
whose arriving-side range holds the tuple, Q_i^H the hotspots, Q^S the scattered queries:

select joins (§4.1, the paper's four formulas; R-tree lookups priced sqrt(n); [terms] ours):
  C_J = alpha_J log|S| + delta_J m' [cov] sqrt|Q| [+ gamma_J m' + eta_J n' log m' + kappa_J m' n' pbar]
                                                                                   (SJ-JoinFirst)
  C_S = alpha_S log|S| + beta_S log|Q| + gamma_S n' log m'                         (SJ-SelectFirst)
  C_V = alpha_V log|S| + gamma_V |Q| log m' [+ eta_V n' log m' + beta_V |Q|]      (SJ-Vanilla)
  C_H = alpha_H log|S| + beta_H log|Q^S| + gamma_H n'' log m' + delta_H sum_i sqrt|Q_i^H|
        [+ eta_H (n' - n'') log m' + zeta_H m' sqrt|Q^S| + theta_H (n' - n'') min(1, m' pbar)]
                                                                                   (SJ-Hotspot)
  Every term but alpha's is multiplied by [m' > 0] (min(1, m') on estimates): each plan
  stops after the key lookup when the tuple has no partner.
window joins (§4.2, Theorem 4; m_b partners inside w_max, m̄_b their skyline points):
  join_first   a log|S| + d m_b sqrt|Q|
  select_first a log|S| + b log|Q| + g n' log m'
  ssi          a log|S| + c m' + d m̄_b sqrt|Q|
  hotspot      a log|S| + c m' + d m̄_b^H sqrt|Q^H| + b log|Q^S| + g n'' log m'
  (c m', not Theorem 4's m_b': fitted when our WJ-SSI recomputed the skylines in one pass over
  the key's whole block at every probe; since the skyline cache (window.py) a fresh key costs
  a pass over its cached points only, so this term now overprices WJ-SSI / WJ-Hotspot until
  the window models are refitted; m̄_b itself is read from the cache where fresh)
band joins (§4.2, Theorem 2; tuple-independent: |Q|, |S|, tau, hotspots):
  ssi a log|S| + b tau log|S|;  qouter a log|S| + b |Q| log|S|;  douter a log|S| + b |S| log|Q|;
  mj b (|S| + |Q|);  hotspot a log|S| + b |J_H| log|S| + c |Q^S| log|S|

Our additions: gamma_J m', the scan of the partners themselves (our R-tree rejects a partner
outside every query's rectangle at its root in O(1); on Table I's workload the rangeC's cover 1%
of S.C, so most partners cost O(1), not sqrt|Q|); eta n' log m', the work per query found (its
partners counted by a binary search in the partner block), which the paper leaves in the output
cost it excludes but which count mode still pays per affected query; beta_V |Q|, SJ-Vanilla's
loop over every query's arriving-side range; zeta_H m' sqrt|Q^S|, SJ-Hotspot's time grows
linearly with the partners (measured: 4 to 167 us for m' from 1-50 to 1,500-2,500 at 50k
queries, which the paper's terms, flat in m', miss), and less so with few scattered queries (with
a flat zeta_H m' the router ranked SJ-JoinFirst first at 1,000 queries where it is the slowest
plan; m' sqrt|Q^S| fits the 1k-50k query rows better, R^2 0.51 -> 0.57). Measured on the fit's rows
(docs/experiments/joins.md): these terms cut the time of the chosen plans from 0.90x to 0.86x of
the best static plan (in sample; R^2 of SJ-Vanilla 0.49 -> 0.92, SJ-Hotspot 0.53 -> 0.60).

Coverage (ours; cov and pbar are per query set and stored side, computed by the router when the
queries change or the stored side doubles, on a sample of <= 4,096 stored values): cov, the
share of the stored side's range values (S.C) inside the union of the queries' ranges on that
side (rangeC), and pbar, the mean over the queries of the share of stored values inside its
range (the mean depth of a stored value over |Q|). A partner outside every rangeC costs
SJ-JoinFirst one test at its R-tree's root, so only m' cov partners descend (the paper's
sqrt|Q| per partner assumes they all do: on fig9's query set, whose rangeC's cover ~1% of S.C's
domain, that priced SJ-JoinFirst ~100x too high, and a fit over both query sets could not rank
the plans of either); each (query, partner) hit, m' n' pbar expected when R.A and S.C are
independent, is one more leaf entry SJ-JoinFirst enumerates; a hot query holding the arriving
value costs SJ-SSI's walk only when some partner falls in its rangeC, min(1, m' pbar).

Logarithms are log2(2 + v) (log m' is log2(1 + m'), zero when no partner). Costs are in
microseconds. Parameters: ``MODELS[kind][strategy]`` lists (parameter, feature); the fitted
values ship in :mod:`vigil.joins._cost_params` (``vigil bench joins --fit``); a run loads
another fitted file from the environment variable ``VIGIL_JOIN_COSTS`` (the JSON --fit
writes). Evaluating one model: O(terms) per tuple, vectorised over a batch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

MODELS: dict[str, dict[str, list[tuple[str, str]]]] = {
    "select": {
        "join_first": [("alpha_J", "log_s"), ("delta_J", "mp_cov_sqrt_q"), ("gamma_J", "mp"), ("eta_J", "np_log_mp"),
                       ("kappa_J", "mp_np_pbar")],
        "select_first": [("alpha_S", "log_s"), ("beta_S", "log_q_any"), ("gamma_S", "np_log_mp")],
        "vanilla": [("alpha_V", "log_s"), ("gamma_V", "q_log_mp"), ("eta_V", "np_log_mp"), ("beta_V", "q_any")],
        "hotspot": [("alpha_H", "log_s"), ("beta_H", "log_qs_any"), ("gamma_H", "npp_log_mp"),
                    ("delta_H", "sum_sqrt_hot_any"), ("eta_H", "nhot_log_mp"), ("zeta_H", "mp_sqrt_qs"),
                    ("theta_H", "nhot_hit")],
    },
    "window": {
        "join_first": [("alpha_J", "log_s"), ("delta_J", "mb_sqrt_q")],
        "select_first": [("alpha_S", "log_s"), ("beta_S", "log_q"), ("gamma_S", "np_log_mp")],
        "ssi": [("alpha_I", "log_s"), ("beta_I", "mp"), ("delta_I", "mbar_sqrt_q")],
        "hotspot": [("alpha_H", "log_s"), ("beta_H", "mp"), ("delta_H", "mbar_h_sqrt_qh"),
                    ("gamma_H", "log_qs"), ("eps_H", "npp_log_mp")],
    },
    "band": {
        "ssi": [("alpha_I", "log_s"), ("beta_I", "tau_log_s")],
        "qouter": [("alpha_Q", "log_s"), ("beta_Q", "q_log_s")],
        "douter": [("alpha_D", "log_s"), ("beta_D", "s_log_q")],
        "mj": [("beta_M", "s_plus_q")],
        "hotspot": [("alpha_H", "log_s"), ("beta_H", "hot_log_s"), ("gamma_H", "qs_log_s")],
    },
}


def lg(v):
    return np.log2(2.0 + np.asarray(v, np.float64))


def features(kind: str, st: dict) -> dict[str, np.ndarray | float]:
    """The model features from the statistics ``st`` (arrays over the tuples of a batch, or
    scalars): S, Q, and per kind mp, np, npp, QS, sum_sqrt_hot / mb, mbar, mbar_h, QH / tau, hot."""
    S, Q = (np.asarray(st[k], np.float64) for k in ("S", "Q"))
    f: dict[str, np.ndarray | float] = {"log_s": lg(S), "log_q": lg(Q)}
    if kind == "band":
        f.update(tau_log_s=st["tau"] * f["log_s"], q_log_s=Q * f["log_s"], s_log_q=S * f["log_q"],
                 s_plus_q=S + Q, hot_log_s=st["hot"] * f["log_s"], qs_log_s=st["QS"] * f["log_s"])
        return f
    mp = np.asarray(st["mp"], np.float64)
    lmp = np.log2(1.0 + mp)
    f.update(log_qs=lg(st["QS"]), np_log_mp=np.asarray(st["np"]) * lmp, npp_log_mp=np.asarray(st["npp"]) * lmp,
             mp=mp)
    if kind == "select":
        any_ = np.minimum(1.0, mp)  # every plan stops after the key lookup when no partner exists
        f.update(mp_sqrt_q=mp * np.sqrt(Q), q_log_mp=Q * lmp, log_q_any=f["log_q"] * any_, q_any=Q * any_,
                 log_qs_any=f["log_qs"] * any_, sum_sqrt_hot_any=np.asarray(st["sum_sqrt_hot"], np.float64) * any_,
                 nhot_log_mp=np.maximum(np.asarray(st["np"]) - np.asarray(st["npp"]), 0.0) * lmp,
                 mp_sqrt_qs=mp * np.sqrt(np.asarray(st["QS"], np.float64)))
        cov = np.asarray(st.get("cov", 1.0), np.float64)
        pbar = np.asarray(st.get("pbar", 1.0), np.float64)
        f.update(mp_cov_sqrt_q=f["mp_sqrt_q"] * cov, mp_np_pbar=mp * np.asarray(st["np"], np.float64) * pbar,
                 nhot_hit=np.maximum(np.asarray(st["np"]) - np.asarray(st["npp"]), 0.0) * np.minimum(1.0, mp * pbar))
    else:
        f.update(mb=np.asarray(st["mb"], np.float64), mb_sqrt_q=np.asarray(st["mb"]) * np.sqrt(Q),
                 mbar_sqrt_q=np.asarray(st["mbar"]) * np.sqrt(Q),
                 mbar_h_sqrt_qh=np.asarray(st["mbar_h"]) * np.sqrt(np.asarray(st["QH"], np.float64)))
    return f


def costs(kind: str, params: dict[str, dict[str, float]], f: dict, n: int, choices: tuple[str, ...]) -> np.ndarray:
    """float64[n, len(choices)]: the estimated cost (us) of each strategy for each tuple."""
    out = np.zeros((n, len(choices)))
    for j, c in enumerate(choices):
        p = params[c]
        for name, feat in MODELS[kind][c]:
            out[:, j] += p[name] * f[feat]
    return out


def design(kind: str, strategy: str, f: dict, n: int) -> np.ndarray:
    """The regression design matrix (one column per parameter) of one strategy's model."""
    return np.stack([np.broadcast_to(np.asarray(f[feat], np.float64), (n,)) for _, feat in MODELS[kind][strategy]], 1)


def fit(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least squares y ~ X theta (no intercept, as the paper's models) constrained to theta >= 0
    (a cost component cannot be negative; active set: a column whose coefficient comes out
    negative is dropped and the rest refitted), with 95% confidence half-widths of the kept
    coefficients from the residual variance (0 for dropped ones): (theta, half_width)."""
    n, k = X.shape
    keep = np.ones(k, bool)
    theta = np.zeros(k)
    while keep.any():
        th, *_ = np.linalg.lstsq(X[:, keep], y, rcond=None)
        if (th >= 0).all():
            theta[:] = 0
            theta[keep] = th
            break
        keep[np.flatnonzero(keep)[np.argmin(th)]] = False
    hw = np.zeros(k)
    if keep.any():
        A = X[:, keep]
        r = y - X @ theta
        s2 = float(r @ r) / max(1, n - int(keep.sum()))
        hw[keep] = 1.96 * np.sqrt(np.clip(np.diag(s2 * np.linalg.pinv(A.T @ A)), 0, None))
    return theta, hw


def nnls(A: np.ndarray, b: np.ndarray, iters: int = 200) -> np.ndarray:
    """argmin ||A x - b|| subject to x >= 0 (Lawson-Hanson active set; k columns, k small)."""
    k = A.shape[1]
    x = np.zeros(k)
    P = np.zeros(k, bool)
    w = A.T @ (b - A @ x)
    tol = 1e-10 * max(1.0, float(np.abs(w).max(initial=0.0)))
    for _ in range(iters):
        if P.all() or (w[~P] <= tol).all():
            break
        P[np.flatnonzero(~P)[np.argmax(w[~P])]] = True
        while True:
            z = np.zeros(k)
            z[P] = np.linalg.lstsq(A[:, P], b, rcond=None)[0]
            if (z[P] > 0).all():
                x = z
                break
            neg = P & (z <= 0)
            a = float(np.min(x[neg] / np.maximum(x[neg] - z[neg], 1e-300)))
            x = x + a * (z - x)
            P &= x > 1e-15
            x[~P] = 0.0
        w = A.T @ (b - A @ x)
    return x


FLOOR = 0.005  # each term explains at least this share of a median row's cost (fit_bounded)


def fit_bounded(X: np.ndarray, y: np.ndarray, floor: float = FLOOR) -> tuple[np.ndarray, np.ndarray]:
    """The constrained fit of the shipped select models: minimise the squared *relative* error
    sum ((X theta - y) / y)^2 (batches of 50 us and of 50 ms weigh alike, as the router compares
    plans at every size) subject to theta_i >= lower_i, lower_i = ``floor`` x the median over the
    rows of y / X_i (the coefficient at which term i alone would be ``floor`` of the cost): every
    term of the paper's model prices real work, so none is fitted to 0 (a plan whose terms are
    all 0 looks free wherever its remaining feature is small). Returns (theta, lower)."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y, np.float64)
    k = X.shape[1]
    lower = np.zeros(k)
    for i in range(k):
        m = X[:, i] > 0
        if m.any():
            lower[i] = floor * float(np.median(y[m] / X[m, i]))
    w = 1.0 / np.maximum(y, max(float(np.median(y)) * 1e-3, 1e-9))
    A = X * w[:, None]
    theta = lower + nnls(A, (y - X @ lower) * w)
    return theta, lower


COV_SAMPLE = 4096  # stored values sampled for the coverage statistics (costs: cov, pbar)


def coverage(vals: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[float, float]:
    """(cov, pbar) of vigil.joins.costs: the share of the values ``vals`` inside the union of the
    ranges [lo, hi], and the mean over the ranges of the share of values inside each (the mean
    number of ranges holding a value, over their count). No values or no ranges: (1, 1), the
    paper's model (every partner probes the query index). O((v + n) log n)."""
    if len(vals) == 0 or len(lo) == 0:
        return 1.0, 1.0
    o = np.argsort(lo, kind="stable")
    slo, shi = lo[o], np.maximum.accumulate(hi[o])  # a value v is covered iff max hi of ranges with lo <= v >= v
    j = np.searchsorted(slo, vals, "right") - 1
    cov = float(np.mean((j >= 0) & (shi[np.maximum(j, 0)] >= vals)))
    depth = np.searchsorted(slo, vals, "right") - np.searchsorted(np.sort(hi), vals, "left")
    return cov, float(np.mean(depth)) / len(lo)


def load_params(path: str | Path | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """kind -> strategy -> parameter -> value: the file ``path`` (or $VIGIL_JOIN_COSTS), else the
    shipped fit; a file lacking a kind or strategy falls back to the shipped values for it."""
    from ._cost_params import PARAMS

    out = {k: {s: dict(p) for s, p in v.items()} for k, v in PARAMS.items()}
    path = path or os.environ.get("VIGIL_JOIN_COSTS")
    if path:
        doc = json.loads(Path(path).read_text())
        for kind, strat in doc.get("params", doc).items():
            for s, p in strat.items():
                # merged over the shipped values: a file fitted before a term existed keeps it
                out.setdefault(kind, {}).setdefault(s, {}).update(
                    {k: float(v["value"] if isinstance(v, dict) else v) for k, v in p.items()})
    return out
