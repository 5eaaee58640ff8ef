"""Numba kernels of L-INT (paper 002, §3.1.2, Definition 3.2, Fig. 5, Theorems 3.3-3.4).

Part g (window widths in [w, cw-1], w = W_min = c^k, W_max = cw-1, so W_max/W_min < c; c >= 2 an
integer, 2 by default) has landmarks at the local positions alpha*w (alpha >= 1) and keeps
* ``suf``: for every position x, f(x .. L-1), L the first landmark after x ("ending just before a
  landmark"), computed by one backward pass when the block [L-w, L-1] completes (amortized O(1));
* ``pre``: for every retained landmark L and 0 <= d < rw = min(cw, cap), f(L .. L+d) ("beginning
  at a landmark"), a ring of nl rows of rw slots; an arriving element extends the <= c rows of the
  landmarks in (p-rw, p] (O(c)). A lookup reads d = b - L < cw (the window is narrower than cw)
  and < cap/2 (it lies in the last cap/2 positions), so rw slots suffice.
A lookup (a, b) of width in [w, cw-1] contains a landmark L (the first one >= a) and is
suf[a] (+) pre[L][b-L]: two reads (Theorem 3.3). A window cut shorter than w (by the stream start,
a registration or rejected rows) may contain no landmark: it is scanned (< w elements).
Values and counts (of non-null values) are kept side by side: COUNT, SUM, AVG read both, MIN/MAX
the values (NULL = the identity).
"""

from __future__ import annotations

import numba
import numpy as np

from ._window_kernels import window_bounds


@numba.njit(cache=True, nogil=True)
def _comb(x, y, code):
    if code == 3:
        return x if x < y else y
    if code == 4:
        return x if x > y else y
    return x + y


@numba.njit(cache=True, nogil=True)
def _ident(code):
    if code == 3:
        return np.inf
    if code == 4:
        return -np.inf
    return 0.0


@numba.njit(cache=True, nogil=True)
def lint_push(code, c, pw, pnl, prw, poff, ngroups, sufv, sufc, prev, prec, ring, mask, pos0, vals):
    cap = mask + 1
    idn = _ident(code)
    for g in range(ngroups):
        w = pw[g]
        nl = pnl[g]
        rw = prw[g]
        off = poff[g]
        so = g * cap
        for j in range(len(vals)):
            p = pos0 + 1 + j
            v = vals[j]
            cnt = 1.0
            if v != v:
                v = idn
                cnt = 0.0
            ahi = p // w
            alo = (p - rw + w) // w  # ceil((p - rw + 1) / w): the landmarks whose rows p extends
            if alo < 1:
                alo = 1
            for al in range(alo, ahi + 1):
                d = p - al * w
                row = off + (al & (nl - 1)) * rw
                if d == 0:
                    prev[row] = v
                    prec[row] = cnt
                else:
                    prev[row + d] = _comb(prev[row + d - 1], v, code)
                    prec[row + d] = prec[row + d - 1] + cnt
            if (p + 1) % w == 0:  # block [p-w+1, p] complete: suffixes to the landmark p+1
                av = idn
                ac = 0.0
                x = p
                while x >= p - w + 1 and x >= 1:
                    if x > pos0:
                        y = vals[x - pos0 - 1]
                    else:
                        y = ring[x & mask]
                    if y == y:
                        av = _comb(y, av, code)
                        ac += 1.0
                    sufv[so + (x & mask)] = av
                    sufc[so + (x & mask)] = ac
                    x -= 1


@numba.njit(cache=True, nogil=True)
def lint_lookup(qids, n, q_part, code, c, pw, pnl, prw, poff, sufv, sufc, prev, prec, q_left, q_right, q_start, seqs,
                times, vals, mask, V, m, last_seq, out):
    cap = mask + 1
    idn = _ident(code)
    for k in range(len(qids)):
        q = qids[k]
        a, b = window_bounds(q, n, np.nan, False, q_left, q_right, q_start, seqs, times, mask, V, m, last_seq)
        if a > b:
            out[k] = 0.0 if code == 1 else np.nan
            continue
        g = q_part[q]
        w = pw[g]
        L = ((a + w - 1) // w) * w
        if L > b:  # no landmark inside: a cut window narrower than w
            rv = idn
            rc = 0.0
            for x in range(a, b + 1):
                y = vals[x & mask]
                if y == y:
                    rv = _comb(rv, y, code)
                    rc += 1.0
        else:
            row = poff[g] + ((L // w) & (pnl[g] - 1)) * prw[g] + (b - L)
            rv = prev[row]
            rc = prec[row]
            if a < L:
                rv = _comb(sufv[g * cap + (a & mask)], rv, code)
                rc += sufc[g * cap + (a & mask)]
        if code == 1:
            out[k] = rc
        elif rc == 0:
            out[k] = np.nan
        elif code == 2:
            out[k] = rv / rc
        else:
            out[k] = rv
