"""Band joins with an equality key (issue 26 item 4): r.sym = s.sym AND lo <= s.price - r.price <=
hi, partitioned by key value (vigil.joins.keyed_band), exact against a brute force of the
definition for every band strategy, at several batch sizes, across snapshots."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, run_log


def _stream(n, seed):
    rng = np.random.default_rng(seed)
    price = np.round(rng.uniform(0, 10, n), 1)
    price[rng.random(n) < 0.03] = np.nan
    sym = rng.choice(["AAPL", "MSFT", "IBM", "7"], n).astype(object)
    sym[rng.random(n) < 0.03] = None  # a null key: the row is rejected for the keyed join
    return pa.table({"rel": rng.choice(["R", "S"], n), "sym": pa.array(sym.tolist(), pa.string()), "price": price})


def _q(qid, band, keyed=True):
    q = {"id": qid, "type": "band_join", "left": "R", "right": "S", "left_on": "price", "right_on": "price",
         "band": band}
    if keyed:
        q.update(left_key="sym", right_key="sym")
    return q


def _ops():
    return [{"op": "register", "at": 0, "query": _q("k1", [-1, 1])},
            {"op": "register", "at": 40, "query": _q("k2", [0, 2.5])},
            {"op": "register", "at": 40, "query": _q("u", [-1, 1], keyed=False)},
            {"op": "terminate", "at": 200, "id": "k1"},
            {"op": "register", "at": 120, "query": _q("k3", [-0.5, 0])}]


def _brute(t, ops):
    rel, sym, price = (t.column(c).to_pylist() for c in ("rel", "sym", "price"))
    out = set()
    for op in ops:
        if op["op"] != "register":
            continue
        q = op["query"]
        end = next((o["at"] for o in ops if o["op"] == "terminate" and o["id"] == q["id"]), 10**9)
        for j in range(op["at"], min(end, len(rel))):  # seq j + 1 arrives while q is alive
            for i in range(j):
                if rel[i] == rel[j] or price[i] != price[i] or price[j] != price[j]:
                    continue
                r, s = (i, j) if rel[i] == "R" else (j, i)
                if q.get("left_key") and (sym[r] is None or sym[r] != sym[s]):
                    continue
                if q.get("left_key") and (sym[i] is None or sym[j] is None):
                    continue
                if q["band"][0] <= price[s] - price[r] <= q["band"][1]:
                    out.add((q["id"], r + 1, s + 1))
    return out


@pytest.mark.timeout(600)
@pytest.mark.parametrize("algo", ["oracle", "ssi", "hotspot", "qouter", "douter", "mj", "dynamic"])
def test_keyed_band_is_exact(algo):
    t = _stream(300, 11)
    ops = _ops()
    want = _brute(t, ops)
    assert len({w for w in want if w[0].startswith("k")}) > 30
    base = None
    for batch, cut in ((1, None), (13, 150), (300, 77)):
        out = run_log(Log(t, ops), {"joins": algo}, batch=batch, cut=cut)
        got = {(r["id"], r["r"], r["s"]) for r in out if r["event"] == "join"}
        keyed_rows_rejected = {r["at"] for r in out if r["event"] == "rejected"}
        assert keyed_rows_rejected  # null keys (rows without a key are no tuple of the keyed group)
        assert {g for g in got if g[0] != "u"} == {w for w in want if w[0] != "u"}, (algo, batch)
        base = base or out
        assert out == base


def test_keyed_band_spec_needs_both_keys():
    from vigil.specs import SpecError, parse_query

    with pytest.raises(SpecError, match="both or neither"):
        parse_query({**_q("x", [0, 1], keyed=False), "left_key": "sym"})
