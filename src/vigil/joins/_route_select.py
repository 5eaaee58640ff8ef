"""SJ-Dynamic's per-tuple choice (paper 003 §4.1) as one numba call over a flat state vector.

The four select-join cost formulas of :mod:`vigil.joins.costs` (C_J, C_S, C_V, C_H, with the
fitted parameters) are evaluated per arriving tuple on the histogram estimates of m', n' and
n'' (:mod:`vigil.joins.histograms`). Everything that does not depend on the tuple (|Q|, |Q^S|,
sum_i sqrt|Q_i^H|, their logarithms, the coverage terms cov and pbar, the parameters, the
histograms' spans) is computed once per
query-set / parameter change into ``sv`` (:func:`state`), so a call costs one dispatch plus
O(1) arithmetic per tuple: the histogram bucket of the key and of the tuple's range value, four
linear formulas and an argmin. No numpy temporaries per call.

Choice rule (ours, on top of the paper's argmin, to keep model error from costing more than it
saves): each plan's estimate is multiplied by a calibration factor (1 unless set); the
*incumbent* is the plan with the lowest exponential average of estimated per-tuple cost over
the recent tuples (kept inside ``sv``; it changes only when another plan's average is 5%
lower); a tuple leaves the incumbent only when its estimated
saving exceeds ``margin_abs + margin_rel x cost(incumbent)``. In a batch, a plan other than the
incumbent keeps its tuples only if their summed estimated saving exceeds ``split_us`` (the
measured fixed cost of probing and merging one more sub-batch); otherwise they go back to the
incumbent. With margins and split_us 0 the rule is the paper's per-tuple argmin.

Calibration (ours): the paper's models with constants fitted once on this machine misjudge
plans outside the fitted grid (e.g. SJ-Hotspot vs SJ-JoinFirst at 1,000 queries). With
exploration on, every few large batches one other plan takes a quarter of the incumbent's
tuples; the operator divides each plan's measured sub-batch time by its uncalibrated
estimate and keeps an exponential average per plan as that plan's factor (``CAL``).

Quiet state (ours, one tuple per call only): routing a tuple costs ~1-1.5 us, a few percent of
a one-tuple call; when the decisions of the recent tuples saved (by the estimates) less than that
over just using the incumbent, the operator sends the next ``quiet_skip`` tuples to the incumbent
without estimating, then routes one again (statistics and averages stay current; any tuple
whose estimate shows a saving ends the quiet state).

Quiet batches (ours): after a batch whose every tuple stayed on the incumbent, the next batches
estimate only every 16th tuple; if none of those would leave the incumbent the whole batch goes
to it (a deviation falls back to the full pass), and every 8th batch is estimated in full.
Routing then costs ~1/16 of the full pass while one plan is undisputed.

No partner (ours, one tuple per call): :func:`partnerless` reads the key's bucket count, an
exact count of the stored keys; when it is 0 the tuple has no partner (m' = 0 exactly) and the
operator answers it with the empty result without calling any plan (every plan would stop after
its key lookup, but a plan call costs 5-17 us of fixed work at 20k-50k queries, measured).

Split (ours): :func:`split` groups a routed batch by plan in one pass (a counting sort) and sets
aside the tuples without a stored partner (exact, as in :func:`partnerless`; their answer is
empty whatever the plan); :func:`probe_routed` probes each plan's group. Before, np.unique, a
flatnonzero per plan and the merge of the plans' outputs cost ~0.1 ms per 1,000 tuples, more than
the cost pass itself (docs/experiments/joins.md, "Where dynamic loses").

Cost: O(1) per tuple, O(plans) extra per batch; space O(buckets) (the histograms, shared).
"""

from __future__ import annotations

import time

import numba
import numpy as np

# layout of the state vector sv
KLO, KW, E0, W, NL, NR, SE0, SW, SNL, SNR = range(10)
Q, LQ, LQS, SQ, SSH, MABS, MREL, SPLIT, ALPHA, INC = range(10, 20)
EMA = 20  # 4 slots: exponential average of each plan's estimated cost
CAL = 24  # 4 slots: calibration factor of each plan
P = 28  # the 19 select parameters, in vigil.joins.costs.MODELS order
NK, NH, NS = 47, 48, 49  # bucket counts of the key, n' and n'' histograms
DEC = 50  # 4 slots: tuples routed to each plan (the operator's ``decisions``)
OBS = 54  # tuples seen by the averages (0: not started)
XEV, XMIN, XCNT, XRR = 55, 56, 57, 58  # exploration: every XEV-th batch of >= XMIN tuples; counters
SAVE, QUIET = 59, 60  # one-tuple path: average estimated saving of routing (us); below QUIET: quiet
SQS = 61  # sqrt|Q^S|
QB, QBC = 62, 63  # batches: quiet (the last full pass kept every tuple on the incumbent); batch count
COVSQ, PBAR = 64, 65  # cov sqrt|Q| and pbar (vigil.joins.costs: the coverage of the other side's ranges)
KC = 66  # then the key counts, the n' buckets, the n'' buckets
SAMPLE = 16  # quiet batches: every SAMPLE-th tuple is estimated ...
FULL_EVERY = 8  # ... and every FULL_EVERY-th batch is estimated in full
PLANS = 4
SWITCH = 0.05  # relative margin for changing the incumbent
XRATIO = 4.0  # exploration tries plans estimated at most this many times the incumbent's cost


def state(kh, nh, sh, Qn: float, QS: float, sum_sqrt_hot: float, params: np.ndarray, margin_abs: float,
          margin_rel: float, split_us: float, alpha: float, old: np.ndarray | None = None,
          explore_every: int = 0, explore_min: int = 256, quiet_us: float = 0.0, cov: float = 1.0,
          pbar: float = 1.0) -> np.ndarray:
    """The state vector for the current histograms / queries / parameters (``old``: carry the
    incumbent, its averages and the calibration factors over). The key histogram's counts then
    live inside it (``kh.counts`` becomes a view), so absorbing stored keys updates it in place;
    the range histograms are copied (they change only with the queries, which rebuild it)."""
    nk, nn, ns = len(kh.counts), len(nh.h), len(sh.h)
    sv = np.zeros(KC + nk + nn + ns)
    sv[KLO], sv[KW] = kh.lo, (0.0 if kh.empty else kh.w)
    sv[E0:SNR + 1] = nh.e0, nh.w, nh.n_left, nh.n_right, sh.e0, sh.w, sh.n_left, sh.n_right
    sv[Q], sv[LQ], sv[LQS], sv[SQ], sv[SSH] = Qn, np.log2(2.0 + Qn), np.log2(2.0 + QS), np.sqrt(Qn), sum_sqrt_hot
    sv[SQS] = np.sqrt(QS)
    sv[COVSQ], sv[PBAR] = cov * np.sqrt(Qn), pbar
    sv[MABS], sv[MREL], sv[SPLIT], sv[ALPHA] = margin_abs, margin_rel, split_us, alpha
    sv[P:NK] = params
    sv[NK], sv[NH], sv[NS] = nk, nn, ns
    sv[XEV], sv[XMIN], sv[QUIET], sv[SAVE] = explore_every, explore_min, quiet_us, 1e9
    sv[KC:KC + nk] = kh.counts
    sv[KC + nk:KC + nk + nn] = nh.h
    sv[KC + nk + nn:] = sh.h
    kh.counts = sv[KC:KC + nk]
    if old is None:
        sv[CAL:CAL + PLANS] = 1.0
    else:
        sv[INC], sv[EMA:CAL + PLANS], sv[DEC:OBS + 1] = old[INC], old[EMA:CAL + PLANS], old[DEC:OBS + 1]
        sv[XCNT], sv[XRR], sv[SAVE], sv[QB], sv[QBC] = old[XCNT], old[XRR], old[SAVE], old[QB], old[QBC]
    return sv


@numba.njit(cache=True, nogil=True, inline="always")
def _range(a, e0, w, sv, o, nb, n_left, n_right):
    if a != a:
        return 0.0
    if a < e0:
        return n_left
    if a >= e0 + nb * w:
        return n_right
    return sv[o + min(nb - 1, int((a - e0) / w))]


@numba.njit(cache=True, nogil=True, inline="always")
def _costs(b, a, ls, sv):
    """(C_J, C_S, C_V, C_H) of one tuple (key b, range value a), calibrated."""
    mp = 0.0
    kw = sv[KW]
    nk, nn, ns = int(sv[NK]), int(sv[NH]), int(sv[NS])
    if kw > 0 and b >= sv[KLO]:
        j = int((b - sv[KLO]) // kw)
        if j < nk:
            mp = sv[KC + j] / kw
    if mp == 0.0:  # no partner (estimate): every term but the alpha's is 0
        return sv[P] * ls * sv[CAL], sv[P + 5] * ls * sv[CAL + 1], sv[P + 8] * ls * sv[CAL + 2], sv[P + 12] * ls * sv[CAL + 3]
    lmp = np.log2(1.0 + mp)
    n1 = _range(a, sv[E0], sv[W], sv, KC + nk, nn, sv[NL], sv[NR])
    n2 = _range(a, sv[SE0], sv[SW], sv, KC + nk + nn, ns, sv[SNL], sv[SNR])
    an = min(1.0, mp)
    q = sv[Q]
    nhot = max(n1 - n2, 0.0)
    cj = (sv[P] * ls + sv[P + 1] * mp * sv[COVSQ] + sv[P + 2] * mp + sv[P + 3] * n1 * lmp
          + sv[P + 4] * mp * n1 * sv[PBAR])
    cs = sv[P + 5] * ls + sv[P + 6] * sv[LQ] * an + sv[P + 7] * n1 * lmp
    cv = sv[P + 8] * ls + sv[P + 9] * q * lmp + sv[P + 10] * n1 * lmp + sv[P + 11] * q * an
    ch = (sv[P + 12] * ls + sv[P + 13] * sv[LQS] * an + sv[P + 14] * n2 * lmp + sv[P + 15] * sv[SSH] * an
          + sv[P + 16] * nhot * lmp + sv[P + 17] * mp * sv[SQS] + sv[P + 18] * nhot * min(1.0, mp * sv[PBAR]))
    return cj * sv[CAL], cs * sv[CAL + 1], cv * sv[CAL + 2], ch * sv[CAL + 3]


@numba.njit(cache=True, nogil=True, inline="always")
def _pick(c, inc, sv):
    b = 0
    for j in range(1, PLANS):
        if c[j] < c[b]:
            b = j
    if b != inc and c[inc] - c[b] <= sv[MABS] + sv[MREL] * c[inc]:
        return inc
    return b


@numba.njit(cache=True, nogil=True, inline="always")
def _average(tot, n, sv):
    """Fold a batch's mean estimated costs into the averages; the incumbent is their argmin."""
    a = 1.0 if sv[OBS] == 0 else min(1.0, sv[ALPHA] * n)
    sv[OBS] += n
    inc = int(sv[INC])
    for j in range(PLANS):
        sv[EMA + j] = (1.0 - a) * sv[EMA + j] + a * tot[j] / n
    for j in range(PLANS):  # a new incumbent must be clearly cheaper on average (its index is cold)
        if sv[EMA + j] < (1.0 - SWITCH) * sv[EMA + inc]:
            inc = j
    sv[INC] = inc


@numba.njit(cache=True, nogil=True)
def partnerless(b, sv):
    """True iff no stored tuple has key b: its key-histogram bucket is empty or b lies outside
    the span (the counts are exact counts of the stored keys, so this is exact, not an estimate;
    a bucket that is not empty says nothing: its keys may differ from b)."""
    kw = sv[KW]
    if kw <= 0:  # no histogram yet: do not skip
        return False
    if not b >= sv[KLO]:
        return True
    j = int((b - sv[KLO]) // kw)
    if j >= int(sv[NK]):
        return True
    return sv[KC + j] == 0.0


@numba.njit(cache=True, nogil=True)
def route_one(b, a, S, sv):
    """The plan of one tuple (key b, range value a); S = |S| of the other side (counted in sv).
    Returns plan + PLANS when quiet: the plan is the incumbent and the average estimated saving
    of the recent decisions over the incumbent is below sv[QUIET] (the cost of routing)."""
    c = _costs(float(b), float(a), np.log2(2.0 + S), sv)
    inc = int(sv[INC])
    k = _pick(c, inc, sv)
    _average(c, 1, sv)
    sv[DEC + k] += 1.0
    s = c[inc] - c[k]  # the estimated saving of this decision over the incumbent
    sv[SAVE] = s if sv[SAVE] >= 1e9 else (1.0 - sv[ALPHA]) * sv[SAVE] + sv[ALPHA] * s
    if k == int(sv[INC]) and sv[SAVE] < sv[QUIET]:
        return k + PLANS  # quiet: routing saves less than it costs; the caller may skip a few
    return k


@numba.njit(cache=True, nogil=True)
def route_batch(key, x, S, sv, out, est):
    """The plans of a batch into ``out``; returns the plan if all tuples got the same one, else -1.
    ``est[j]``: the uncalibrated estimated cost (us) of the tuples sent to plan j (for the
    calibration). Exploration (sv[XEV] > 0): every XEV-th batch of at least XMIN tuples, one
    other plan (round robin, only if its estimate for the batch is within XRATIO x of the
    incumbent's) takes every 4th of the incumbent's tuples, so that its factor is measured."""
    n = len(key)
    ls = np.log2(2.0 + S)
    inc = int(sv[INC])
    sv[QBC] += 1
    if sv[QB] > 0 and n >= 2 * SAMPLE and sv[QBC] % FULL_EVERY != 0 and sv[XEV] == 0:
        # quiet: estimate a sample; if no sampled tuple leaves the incumbent, the batch stays on it
        tot = np.zeros(PLANS)
        m = 0
        dev = False
        for i in range(0, n, SAMPLE):
            c = _costs(float(key[i]), float(x[i]), ls, sv)
            for j in range(PLANS):
                tot[j] += c[j]
            m += 1
            if _pick(c, inc, sv) != inc:
                dev = True
                break
        if not dev:
            _average(tot, m, sv)
            if int(sv[INC]) == inc:
                for j in range(PLANS):
                    est[j] = 0.0
                est[inc] = tot[inc] / sv[CAL + inc] * n / m
                for i in range(n):
                    out[i] = inc
                sv[DEC + inc] += n
                return inc
    cost = np.empty((n, PLANS))
    tot = np.zeros(PLANS)
    gain = np.zeros(PLANS)
    for i in range(n):
        c = _costs(float(key[i]), float(x[i]), ls, sv)
        for j in range(PLANS):
            cost[i, j] = c[j]
            tot[j] += c[j]
    _average(tot, n, sv)  # the batch's own estimates update the incumbent first
    inc = int(sv[INC])
    for i in range(n):
        c = (cost[i, 0], cost[i, 1], cost[i, 2], cost[i, 3])
        k = _pick(c, inc, sv)
        out[i] = k
        gain[k] += c[inc] - c[k]
    xp = -1
    if sv[XEV] > 0 and n >= sv[XMIN]:
        sv[XCNT] += 1
        if sv[XCNT] >= sv[XEV]:
            sv[XCNT] = 0
            for step in range(1, PLANS):
                j = (int(sv[XRR]) + step) % PLANS
                if j != inc and tot[j] <= XRATIO * tot[inc]:
                    xp = j
                    sv[XRR] = j
                    break
    for j in range(PLANS):
        est[j] = 0.0
    first = -2
    for i in range(n):
        if out[i] != inc and gain[out[i]] <= sv[SPLIT]:
            out[i] = inc
        if xp >= 0 and out[i] == inc and i % 4 == 0:
            out[i] = xp
        est[out[i]] += cost[i, out[i]] / sv[CAL + out[i]]
        sv[DEC + out[i]] += 1.0
        if first == -2:
            first = out[i]
        elif out[i] != first:
            first = -1
    sv[QB] = 1.0 if first == inc else 0.0
    return first


@numba.njit(cache=True, nogil=True)
def split(key, out, sv, skip_min, first, order, counts):
    """Group a routed batch by plan in one pass (a counting sort: no numpy call per plan).
    ``out``: the plan per tuple (route_batch); ``first``: route_batch's answer (the plan if all
    got the same). Tuples whose key has no stored partner (:func:`partnerless`, exact) are set
    aside as plan PLANS (their answer is empty whatever the plan; their decision is taken back
    from sv's counts) when there are at least ``skip_min`` of them or the batch is split anyway
    (``skip_min`` < 0: never). Returns the plan that takes the whole batch unchanged, or -1:
    then ``order[:n]`` lists the tuple indexes plan by plan (ascending within each plan, the
    set-aside ones last) and ``counts[j]`` the tuples of plan j (``counts[PLANS]``: set aside)."""
    n = len(key)
    for j in range(PLANS + 1):
        counts[j] = 0
    npl = 0
    if skip_min >= 0:
        for i in range(n):
            if partnerless(key[i], sv):
                npl += 1
    if first >= 0 and (skip_min < 0 or npl < skip_min):
        return first
    for i in range(n):
        c = out[i]
        if npl > 0 and partnerless(key[i], sv):
            sv[DEC + c] -= 1.0
            c = PLANS
            out[i] = c
        counts[c] += 1
    pos = np.empty(PLANS + 1, np.int64)
    s = 0
    for j in range(PLANS + 1):
        pos[j] = s
        s += counts[j]
    for i in range(n):
        c = out[i]
        order[pos[c]] = i
        pos[c] += 1
    return -1


def probe_routed(op, side, seqs, key, x, t, mode, ch, first, t0):
    """Select joins: probe a batch routed by :func:`route_batch` (plans in ``ch``, ``first``) on
    the operator ``op`` (a ``Dynamic``): :func:`split` groups it by plan in one pass and sets
    aside the tuples without a stored partner; each plan probes its sub-batch; count mode adds
    the counts, the other modes concatenate the outputs with the tuple indexes mapped back (the
    caller restores the protocol's order). ``op.route_seconds`` gets everything but the plans'
    probes (``t0``: when routing started). O(n) besides the probes."""
    n = len(key)
    if len(op._order) < n:
        op._order = np.empty(2 * n, np.int64)
    order, counts = op._order, op._counts
    skip = op.skip_min if op.skip_partnerless else -1
    one = split(key, ch, op._fast[side][2], skip, first, order, counts)
    if one >= 0:
        t1 = time.perf_counter()
        op.route_seconds += t1 - t0
        res = op._run_ordered(op.choices[one], side, seqs, key, x, t, mode)
        if op.explore_every and n >= op.cal_min:
            op._calibrate(side, one, time.perf_counter() - t1)
        return res
    op.no_partner += int(counts[PLANS])
    op.last_choice = ch.copy()
    outs, probe, s, cnt = [], 0.0, 0, 0
    for c in range(PLANS):
        m = int(counts[c])
        if m == 0:
            continue
        idx = order[s:s + m]
        s += m
        t1 = time.perf_counter()
        q, i, o, k = op._run_ordered(op.choices[c], side, seqs[idx], key[idx], x[idx], t[idx], mode)
        dt = time.perf_counter() - t1
        probe += dt
        if op.explore_every and m >= op.cal_min:
            op._calibrate(side, c, dt)
        cnt += k
        if mode != 2:
            outs.append((q, idx[i], o))
    e = np.empty(0, np.int64)
    if not outs:
        res = (e, e, e.copy(), cnt)
    elif len(outs) == 1:
        res = (*outs[0], cnt)
    else:
        res = (np.concatenate([v[0] for v in outs]), np.concatenate([v[1] for v in outs]),
               np.concatenate([v[2] for v in outs]), cnt)
    op.route_seconds += time.perf_counter() - t0 - probe
    return res
