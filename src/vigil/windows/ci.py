"""CI-COUNT and CI-SUM: collective indexes for substream filters (paper 002, §4.1 Fig. 7, the
parameterized version §4.1.2, CI-SUM §4.2), with the exact post-filter of §4.1 (ASW lookups on
per-key rings, as :mod:`vigil.windows.substream_naive`).

Queries: keys whose COUNT / SUM over the last T time units lies in the open range (v1, v2).

* One range side (v, inf): the keys whose entry at level l (the largest level whose distances
  are all <= v + 1) lies in the window: a superset of the exact answer whose members have an
  aggregate >= their entry's distance d_k. With epsilon the keys with d_k > v (1 - eps) are
  reported as they are; the others (and, without epsilon, every key with d_k <= v) get an exact
  per-key lookup. Relative gap of the level used: about 2/p (p levels per size, §4.1.2; p = 1 is
  Fig. 7's CI-COUNT with epsilon 3/4).
* (0, v) / (-inf, v): the keys with an element in the window (heap row 0) minus those whose
  entry at the smallest level with distances >= v lies in the window; kept keys are decided by
  their d_k (aggregate <= d_k - 1) or looked up.
* Two-sided ranges (v1, v2) (exact only, as the spec allows): the candidates of (v1, inf), then
  the exact per-key lookup.

SUM follows §4.2: an element of value a is a copies; levels live in weight space so an element
updates O(p log a) level entries, not O(a). It needs integer values >= 0 (the paper's model):
once a pushed value is negative, non-integer or infinite, or a running total reaches 2^53, the
operator answers every query by the exact per-key lookups of every key with an element in the
window (still exact; sublinear lookups lost), and says so in ``state()["nonneg"]/["integral"]``.

Costs (K keys, K_o keys reported, W elements of a key in the window, p levels per size):
update O(p log K) amortized for COUNT (2p level entries per element, each an O(log K) sift-up in
the level's heap), O(p log a (log K + log W)) for SUM; lookup O(K_ao + K_check log W) where K_ao
is the candidate set (at most the exact answer plus the keys within the level's 2/p relative gap)
and K_check the candidates the level does not decide; space O(K p log N_max) for the levels (dense
heap rows: 28 bytes per (key, level)) plus O(elements inside the longest registered window) for
the exact post-filter's rings.
Lemma 4.1 / Theorem 4.1 are the bounds checked by tests/windows/test_substream_ci.py.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._ci_kernels import fill_levels
from ._ci_lookup import lookup_ci_batch
from .substream_naive import SubstreamNaive

DEFAULT_P = 8
NONE = 1 << 40  # lmin when no level is maintained


class CI(SubstreamNaive):
    """CI-COUNT (agg count) / CI-SUM (agg sum) with p levels per size (epsilon about 2/p)."""

    name = "ci"
    uses_levels = True

    def __init__(self, agg: str, p: int = DEFAULT_P) -> None:
        super().__init__(agg)
        if p < 1:
            raise ValueError("p must be >= 1")
        self.p = int(p)
        self.G = 1
        self.lmin = NONE  # levels below lmin are not maintained (no registered query uses them)
        self.want: dict[int, tuple[str, int]] = {}  # qid -> ("lower" | "upper", level it uses)
        lev = np.arange(64 * self.p)
        self.w_tab = 2.0 ** (lev // self.p)
        self.lo_tab = self.p * (self.w_tab - 1.0) + (lev % self.p) * self.w_tab
        self.checked = 0  # exact per-key lookups done by the post-filter (for the benchmarks)
        self._alloc_heaps(1 + self.p * self.G, len(self.a["k_off"]))

    def _alloc_heaps(self, rows: int, cap: int) -> None:
        """Heap rows: H[r, i] = (seq, time, key) of slot i (seq and key int64, through the view
        ``Hi``), hp[r, k] = slot of key k; key k starts at slot k with entry (0, -inf), the
        minimum, so appending keys keeps every row a heap."""
        self.H = np.zeros((rows, cap, 3), np.float64)
        self.Hi = self.H.view(np.int64)
        self.H[:, :, 1] = -np.inf
        self.Hi[:, :, 2] = np.arange(cap, dtype=np.int64)
        self.hp = np.zeros((rows, cap), np.int32)
        self.hp[:] = np.arange(cap, dtype=np.int32)
        self.stack = np.zeros(cap + 1, np.int64)
        self.cand = np.zeros(cap + 1, np.int64)

    def _ensure_keys(self, nkeys: int) -> None:
        cap = len(self.a["k_off"])
        super()._ensure_keys(nkeys)
        new = len(self.a["k_off"])
        if new > cap:
            Hi, hp = self.Hi, self.hp
            self._alloc_heaps(Hi.shape[0], new)
            self.Hi[:, :cap] = Hi  # bit copy (seq and key are int64)
            self.hp[:, :cap] = hp

    def register(self, qid: int, spec: Any, start: int = 0) -> None:
        super().register(qid, spec, start)
        lo, hi = spec.bounds()
        if lo >= 0:  # candidates from the largest level whose distances are all <= floor(lo) + 1
            self.want[int(qid)] = ("lower", int(np.searchsorted(self.lo_tab + self.w_tab, math.floor(lo) + 1.0,
                                                                 side="right")) - 1)
        elif hi < math.inf:  # exclusions from the smallest level whose distances are all >= ceil(hi)
            self.want[int(qid)] = ("upper", int(np.searchsorted(self.lo_tab + 1.0, math.ceil(hi), side="left")))
        self._sync_levels()

    def terminate(self, qid: int) -> None:
        super().terminate(qid)
        self.want.pop(int(qid), None)
        self._sync_levels()

    def _sync_levels(self) -> None:
        """Maintain every level some registered query uses (the lowest one and all above it), and
        no level below: a query registered while the levels were few uses the top level, and
        once more levels exist (:meth:`_more_groups`) or it ends, the levels below its own stop
        being maintained (an element updates O(p log a) levels of CI-SUM above lmin, so a stale
        low lmin cost the tour's SUM filters ~3.7 us per element). Levels that become needed
        again are rebuilt from the rings (``fill_levels``)."""
        nlev = self.p * self.G
        use = [min(lv, nlev - 1) if kind == "lower" else lv for kind, lv in self.want.values()]
        use = [lv for lv in use if lv < nlev]
        lo = min(use) if use else NONE
        if lo < self.lmin:
            self._fill(lo, min(self.lmin, nlev))
        self.lmin = lo

    def _fill(self, l0: int, l1: int) -> None:
        a = self.a
        fill_levels(l0, l1, self.nkeys, self.p, self.agg == "count", a["p_seq"], a["p_time"], a["p_cumb"],
                    a["k_off"], a["k_cap"], a["k_head"], a["k_tail"], a["k_m"], self.H, self.hp)

    def _heaps(self) -> tuple[np.ndarray, ...]:
        return self.H, self.hp

    def _levels_args(self) -> tuple[int, int, int, bool]:
        return self.p, self.G, min(self.lmin, self.p * self.G), self.agg == "count"

    def _more_groups(self) -> None:
        """Add two groups of p levels (a key's retained weight outgrew p (2^G - 1))."""
        old_rows = self.H.shape[0]
        G = self.G + 2
        rows = 1 + self.p * G
        Hi, hp = self.Hi, self.hp
        self._alloc_heaps(rows, Hi.shape[1])
        self.Hi[:old_rows] = Hi
        self.hp[:old_rows] = hp
        if self.lmin < rows - 1:
            self._fill(max(self.lmin, old_rows - 1), rows - 1)
        self.G = G
        self._sync_levels()

    def ci_ok(self) -> bool:
        return self.agg == "count" or (self.integral and self.nonneg)

    def lookup_flat(self, qids: np.ndarray, n: int, t_now: float = math.nan) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`lookup`'s key codes as one array and offsets: query ``i``'s codes are
        ``codes[offs[i]:offs[i + 1]]``."""
        self._check_position(n)
        Q = self._query_rows(np.asarray(qids, dtype=np.int64))
        a = self.a
        ip = self._ip(self.nkeys, min(self.lmin, self.p * self.G), self.p * self.G, self.agg == "sum",
                      self.agg == "count" or self.integral, self.ci_ok(), self.agg == "count")
        out, offs, checked = lookup_ci_batch(Q, float(t_now), ip, self.lo_tab, self.w_tab, a["pool"], a["krec"],
                                             a["kf"], self.H, self.hp, self.stack, self.cand)
        self.checked += int(checked)
        return out, offs

    def state(self) -> dict[str, Any]:
        s = super().state()
        nk = self.nkeys
        s.update({"p": self.p, "G": self.G, "lmin": self.lmin,
                  "want": np.array([[q, kind == "lower", lv] for q, (kind, lv) in sorted(self.want.items())],
                                   dtype=np.int64).reshape(-1, 3),
                  "heap_seq": self.Hi[:, :nk, 0].copy(), "heap_time": self.H[:, :nk, 1].copy(),
                  "heap_key": self.Hi[:, :nk, 2].copy(), "heap_pos": self.hp[:, :nk].copy()})
        return s

    @classmethod
    def from_state(cls, s: dict[str, Any]) -> CI:
        op = cls(s["agg"], int(s["p"]))
        op.G = int(s["G"])
        op.lmin = int(s["lmin"])
        op._alloc_heaps(1 + op.p * op.G, len(op.a["k_off"]))
        op._load(s)  # grows the heaps to the key capacity
        nk = int(s["nkeys"])
        if "heap" in s:  # older snapshots: one float64 array (seq, time, key)
            s = {**s, "heap_seq": s["heap"][..., 0].astype(np.int64), "heap_time": s["heap"][..., 1],
                 "heap_key": s["heap"][..., 2].astype(np.int64)}
        op.Hi[:, :nk, 0] = s["heap_seq"]
        op.H[:, :nk, 1] = s["heap_time"]
        op.Hi[:, :nk, 2] = s["heap_key"]
        op.hp[:, :nk] = s["heap_pos"]
        op.want = {int(q): ("lower" if low else "upper", int(lv)) for q, low, lv in s["want"]}
        return op
