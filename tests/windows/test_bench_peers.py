"""The windows benchmarks' peers (``vigil.bench.windows_peers``) answer exactly as the windows
oracle: DuckDB's prefix-sum and framed-window formulations, its range join, and bottleneck."""

from __future__ import annotations

import numpy as np
import pytest

from vigil.bench import windows_peers
from vigil.bench.windows_peers import Peer
from vigil.specs import parse_query
from vigil.windows.oracle import WindowOracle

WINDOWS = [(1, 0), (2, 1), (5, 0), (17, 3), (64, 0), (100, 40), (150, 149), (300, 0), (300, 299), (120, 7)]
CASES = [(k, a) for k in ("duckdb", "duckdb_rangejoin") for a in ("sum", "count", "avg", "min", "max", "quantile")]
CASES += [("bottleneck", a) for a in ("sum", "avg", "min", "max")]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("phi", [0.5, 0.3, 0.07, 1.0])
@pytest.mark.parametrize(("kind", "agg"), CASES, ids=[f"{k}-{a}" for k, a in CASES])
def test_peer_answers_as_the_oracle(kind, agg, phi, monkeypatch):
    monkeypatch.setattr(windows_peers, "DELETE_SLACK", 0)
    if agg != "quantile" and phi != 0.5:
        pytest.skip("phi only matters for QUANTILE")
    rng = np.random.default_rng(3)
    n = 1500  # 5x the largest window (with DELETE_SLACK = 0 DuckDB drops rows no window can reach)
    vals = rng.integers(-1000, 1000, n).astype(np.float64)  # integers: every sum is exact in float64
    seqs = np.arange(1, n + 1, dtype=np.int64)
    peer = Peer(kind, agg, n_max=300, phi=phi)
    ref = WindowOracle(agg, False)
    for qid, (nl, nr) in enumerate(WINDOWS):
        peer.register(qid, nl, nr)
        d = {"type": "window_aggregate", "id": f"q{qid}", "agg": agg, "column": "v", "rows": [nl, nr]}
        if agg == "quantile":
            d["phi"] = phi
        ref.register(qid, parse_query(d), 0)
    qids = np.arange(len(WINDOWS))
    pos, checked = 0, 0
    for size in [1, 3, 40, 97, 200, 359, 400, 400]:  # lookups while windows fill, then full ones
        peer.push(vals[pos:pos + size], seqs[pos:pos + size])
        ref.push(vals[pos:pos + size], seqs[pos:pos + size])
        pos += size
        q = np.concatenate([qids, qids[::-1]])  # repeated queries in one batch
        got, want = peer.lookup(q, pos), ref.lookup(q, pos)
        np.testing.assert_array_equal(got, want, err_msg=f"{kind} {agg} after {pos}")
        checked += int(np.sum(~np.isnan(want)))
    assert checked > 100
