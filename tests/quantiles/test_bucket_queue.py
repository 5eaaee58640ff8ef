"""The trigger list's bucket queue (:mod:`vigil.quantiles._bucket_queue`) against a sorted list:
random adds, removals and re-keys with keys >= the stream size (near, a few blocks ahead, far,
INF_DEADLINE), the minimum (key, then cluster id with ``canon``) after each step."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.quantiles import _bucket_queue as B
from vigil.quantiles._gk_kernels import INF_DEADLINE


@pytest.mark.timeout(300)
@pytest.mark.parametrize("seed", range(6))
def test_bucket_queue_matches_a_sorted_list(seed):
    rng = np.random.default_rng(seed)
    k = 60
    bq = B.new_bq(0)
    bnx, bpv, bky = (np.full(k, -1, np.int64) for _ in range(3))
    keys: dict[int, int] = {}
    n = 0
    spans = [3, 50, B.W, 3 * B.W, B.C * B.W, 5 * B.C * B.W]
    for _ in range(20_000):
        u = rng.random()
        c = int(rng.integers(k))
        if u < 0.45:
            if rng.random() < 0.03:
                key = int(INF_DEADLINE)
            else:
                key = n + int(rng.integers(0, spans[int(rng.integers(len(spans)))]))
            if c in keys:
                B.bq_move(bq, bnx, bpv, bky, c, key)
            else:
                B.bq_add(bq, bnx, bpv, bky, c, key)
            keys[c] = key
        elif u < 0.55 and c in keys:
            B.bq_remove(bq, bnx, bpv, bky, c)
            del keys[c]
        elif u < 0.75:  # the stream grows (keys below n are allowed: expired, not yet fired)
            n += int(rng.choice([1, 7, 400, B.W, 3 * B.W]))
        canon = bool(rng.random() < 0.5)
        got = B.bq_min(bq, bnx, bpv, bky, n, canon)
        if not keys:
            assert got == -1
            continue
        best = min(keys.values())
        assert got >= 0 and keys[got] == best and bky[got] == best
        if canon:
            assert got == min(q for q, v in keys.items() if v == best)
        if best < n:  # fire the expired minimum: re-key it at or after n
            nk = n + int(rng.integers(0, spans[int(rng.integers(len(spans)))]))
            B.bq_move(bq, bnx, bpv, bky, got, nk)
            keys[got] = nk


def test_trigger_kernels_name_the_queue_they_compiled():
    """numba caches the trigger kernels by their own file's content, with the queue compiled in: a
    change of the queue must come with a change of that file (BUCKET_QUEUE_SHA), or a stale
    kernel keeps running."""
    import hashlib
    from pathlib import Path

    from vigil.quantiles import _trigger_kernels as T

    assert T.BUCKET_QUEUE_SHA == hashlib.sha256(Path(B.__file__).read_bytes()).hexdigest()[:16]
