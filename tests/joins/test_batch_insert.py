"""One operator call per batch with both relations interleaved (JoinBase.insert_both, module
vigil.joins._batch) gives exactly what inserting the batch run by run gives, for every strategy,
join kind and output mode; the engine's join groups make one call per segment."""

from __future__ import annotations

import numpy as np
import pytest

from vigil import registry
from vigil.joins import JoinOperator
from vigil.specs import parse_query

CHANGE = 200
NAMES = ["ssi", "hotspot", "join_first", "select_first", "vanilla", "qouter", "douter", "mj", "dynamic"]


def _specs(kind, rng, n=25):
    out = []
    for j in range(n):
        q = {"id": f"q{j}", "type": f"{kind}_join", "left": "R", "right": "S", "left_on": "B", "right_on": "B"}
        if kind == "band":
            a = int(rng.integers(-3, 4))
            q["band"] = [a, a + int(rng.integers(0, 4))]
        else:
            lo = int(rng.integers(0, 15))
            q["left_range"] = {"A": [lo, lo + int(rng.integers(0, 10))]}
            q["right_range"] = {"C": [None, int(rng.integers(5, 21))]}
            if kind == "window":
                ivs = [[-float(rng.integers(0, 6)), float(rng.integers(0, 8))], [2.0, 6.0], [-6.0, -1.0], [0.0, 0.0]]
                q["window"] = ivs[j % 8 // 2] if j % 2 == 0 else float(rng.integers(1, 9))
                q["time_column"] = "T"
        out.append(parse_query(q))
    return out


def _batches(rng, n, kind):
    seqs = np.arange(1, n + 1)
    side = rng.integers(0, 2, n)
    key = rng.integers(0, 8, n).astype(np.float64 if kind == "band" else np.int64)
    x = rng.integers(0, 21, n).astype(np.float64)
    t = np.cumsum(rng.integers(0, 3, n)).astype(np.float64)
    return seqs, side, key, x, t


def _run(op, kind, specs, data, sizes, both: bool):
    seqs, side, key, x, t = data
    for j, s in enumerate(specs[:-15]):
        op.register(j, s)
    out = []
    a, k = 0, 0
    while a < len(seqs):
        b = min(len(seqs), a + sizes[k % len(sizes)])
        if a < CHANGE < b:
            b = CHANGE
        k += 1
        if a == CHANGE:  # queries change between two batches
            for j, s in enumerate(specs[-15:], len(specs) - 15):
                op.register(j, s)
            op.terminate(1)
        blocks = {}
        for v, name in enumerate(("left", "right")):
            m = np.flatnonzero(side[a:b] == v) + a
            attrs = np.zeros((len(m), 0)) if kind == "band" else x[m].reshape(-1, 1)
            blocks[name] = (seqs[m], key[m], attrs, t[m] if kind == "window" else None)
        res = op.insert_both(blocks) if both else JoinOperator.insert_both(op, blocks)
        out.append(np.stack(res, 1))
        a = b
    return np.concatenate(out)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", [pytest.param("band", marks=pytest.mark.slow), "select", "window"])  # band ~19 s
@pytest.mark.parametrize("output", ["pairs", "affected"])
def test_insert_both_equals_run_by_run(kind, output):
    rng = np.random.default_rng([7, len(kind), len(output)])
    specs = _specs(kind, rng, 90 if output == "pairs" else 25)  # > 64 queries: the R-tree path of the kernel
    data = _batches(rng, 600, kind)
    oracle = registry.resolve("joins", "oracle")
    want = _run(oracle(kind, output), kind, specs, data, [600], both=False)
    assert len(want) > 50
    for name in NAMES:
        impl = registry.resolve("joins", name)
        op = impl(kind, output)
        if kind not in getattr(op, "kinds", (kind,)):
            continue
        for sizes in ([1], [7, 50], [600]):
            got = _run(impl(kind, output), kind, specs, data, sizes, both=True)
            assert np.array_equal(got, want), (name, sizes)


def test_engine_makes_one_operator_call_per_segment(monkeypatch):
    import pyarrow as pa

    from vigil.checks import Log, run_log

    n = 400
    t = pa.table({"rel": ["R", "S"] * (n // 2), "k": ["1"] * n, "ts": np.arange(n, dtype=np.float64)})
    q = {"id": "w", "type": "window_join", "left": "R", "right": "S", "left_on": "k", "right_on": "k", "window": 3.0}
    calls = []
    real = JoinOperator.insert_both

    def spy(self, blocks):
        calls.append(sum(len(b[0]) for b in blocks.values()))
        return real(self, blocks)

    monkeypatch.setattr(JoinOperator, "insert_both", spy)
    out = run_log(Log(t, [{"op": "register", "at": 0, "query": q}]), {"joins": "oracle"}, batch=n)
    assert calls == [n]
    assert sum(r["event"] == "join" for r in out) == n - 1  # neighbours (1 apart); 3 apart is outside
