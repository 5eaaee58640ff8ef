"""Numba kernels of the DT operator (``vigil.threshold.dt``): flat-array endpoint trees, per-node
priority queues and the distributed-tracking simulation. Everything here works on numpy arrays
only; the Python class in ``dt.py`` owns the arrays (allocated in numpy, reusing the memory of a
structure being replaced) and calls these kernels once per batch.

Key space
---------
Coordinates are mapped to int64 by an order-preserving bijection (:func:`float_keys`), so that a
closed range ``[lo, hi]`` becomes the half-open key range ``[key(lo), key(hi) + 1)`` — the
paper's "infinitesimal trick" of §4 (``[x, y] = [x, y + eps)``), with ``eps`` one unit in the last
place. Every endpoint tree has the sentinel key ``INT64_MIN`` as its leftmost endpoint, so every
point falls in exactly one leaf.

Endpoint tree layout (one tree = one contiguous block of rows of ``NR``)
-----------------------------------------------------------------------
A tree on ``L`` sorted distinct endpoint keys ``K[0] < ... < K[L-1]`` is the perfect binary tree of
height ``H = ceil(log2 L)`` whose leaf ``i`` has jurisdiction ``[K[i], K[i+1])``; only nodes whose
leaf range starts before ``L`` exist. Level ``t`` (root = 0) holds ``((L-1) >> (H-t)) + 1`` nodes,
stored left to right after the levels above it (BFS order: the top levels are contiguous and stay
in cache; the path to leaf i is known by arithmetic, node ``i >> (H-t)`` of level t).
``NR`` is ``int64[rows, 4]``:

* col 0: split key of an internal node (first key of its right subtree; ``INT64_MAX`` if the
  right child does not exist), so an element descends with one comparison per level;
* col 1: in a tree of the last dimension, the node counter ``c(u)`` (sum of weights of the
  elements in the node's region since the tree was built); in a tree of an earlier dimension,
  the id of the node's secondary tree (§6) or -1;
* col 2: minimum key of the node's queue ``H(u)`` (``INT64_MAX`` if empty), so an element inspects
  one queue top per node with no extra memory access (§4, steps 1-2);
* col 3: ``offset << 32 | size``: where H(u) lives in the pool ``tt`` and how many entries it has.

Trees of all dimensions of one logarithmic-method structure share ``NR``; tree ``t`` is described by
``tbase[t], tL[t], tH[t], tdim[t]``; tree 0 is the primary (dimension-0) tree.

Participants, entries and the queues H(u)
-----------------------------------------
An *entry* is a pair (query q, node u in q's canonical node set U_q), with key sigma_q(u). The
min-heap H(u) of §4 is an array-embedded 4-ary tournament (winner) tree: the entries of u are
its leaves, which never move, and every internal node holds the minimum of its 4 children, so a
key change re-plays the matches on one leaf-to-root path (O(log_4 n), stopping when a winner is
unchanged) and needs no position index. Arrays (interleaved: one slot / one query = one miss):

* ``tt int64[slots, 2]``: the pool; H(u) occupies ``region(n)`` slots: its n leaves, then each
  internal level, root last; a leaf = (key, ``q << 32 | share``) (the entry's slack share of
  the current round, see ``_dt_push``), an internal slot = (key, ``q << 32 | winning leaf
  slot``); a queue of one entry is its own root. Keys of removed entries are ``INT64_MAX``;
* ``qn int32[E, 2]``: query-major (node, leaf slot) pairs: the participants of local query q are
  ``qn[qr[q,3] : qr[q+1,3]]``;
* ``qr int64[k+1, 4]``: per local query (tgt, lam, acc, first entry). Tracking state, absolute in
  the structure's counters (which start at 0 at build): q matures when
  ``sum_{u in U_q} c(u) >= tgt``; ``lam`` is the slack of the current round (0 = direct mode,
  tau <= DIRECT h; -1 = dead; in round mode the slack *unit*); ``acc`` counts the units the
  round still misses (round mode) or is the exact known sum ``sum (sigma_u - 1)`` (direct mode).

The kernels live in four modules by concern — ``_dt_keys`` (key space, constants), ``_dt_build``
(trees, canonical sets), ``_dt_queues`` (queues H(u), termination), ``_dt_push`` (elements and
tracking) — and are re-exported here, the one namespace ``dt.py`` uses.
"""

from __future__ import annotations

from ._dt_bucket import MAX_BUCKET, bucketize, chunk_mins, fold_tags, link_buckets  # noqa: F401
from ._dt_build import level_canonical, level_fill, level_sizes, merge_order, next_groups  # noqa: F401
from ._dt_keys import (  # noqa: F401
    CHUNK_BITS,
    I64_MAX,
    I64_MIN,
    KINF1,
    N_STATS,
    ST_DIRECT,
    ST_MATURED,
    ST_PURGED,
    ST_ROUNDS,
    ST_SIGNALS,
    float_keys,
    keys_to_float,
)
from ._dt_push import push_dt  # noqa: F401
from ._dt_queues import build_heaps, heap_layout, kill, remaining  # noqa: F401
