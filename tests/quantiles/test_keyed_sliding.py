"""keyed_sliding pushes and looks up every key's rows-window operator in one call, with the
operators' own results: the same updates, lookups and state as each key's own push and lookup."""

import numpy as np
import pyarrow as pa
import pytest

from vigil.checks import Log, check_family
from vigil.quantiles import _sliding_kernels as K
from vigil.quantiles.keyed_sliding import SlidingKeys
from vigil.quantiles.sliding import Sliding


def _live(op: Sliding) -> dict:
    """The operator's state with its ring offsets made relative (where the arrays were last
    compacted depends on how much room each push asked for, not on the elements)."""
    s = op.state()
    m = s["meta"].copy()
    bh, bt, sh, st = (int(m[i]) for i in (K.M_BH, K.M_BT, K.M_SH, K.M_ST))
    blk = s["blk"][:, bh:bt].copy()
    blk[K.B_OFF] -= sh
    mi = s["mi"].copy()
    mi[K.I_B] -= bh
    for i in (K.M_BH, K.M_BT, K.M_MH, K.M_FX):
        if i != K.M_FX or m[i] >= 0:
            m[i] -= bh
    m[K.M_SH] -= sh
    m[K.M_ST] -= sh
    m[K.M_NOUT] = 0  # the last push's output count (scratch)
    # caches of the sweeps' held-value counts (kept only by the operator's own push: its ring)
    m[K.M_XACT:K.M_RA + 1] = 0
    qi = s["qi"].copy()
    qi[[K.Q_HINT, K.Q_VER]] = 0
    s = {k: v for k, v in s.items() if k not in ("ring_v", "ring_q")} | {"qi": qi}
    oc, pc = int(m[K.M_OC]), int(m[K.M_PC])  # the open block and the front: their used prefixes
    ob = np.concatenate([s["ob"][0, :oc], s["ob"][1, :pc]])
    obs = np.concatenate([s["obs"][0, :oc], s["obs"][1, :pc]])
    return {**s, "meta": m, "ob": ob, "obs": obs, "blk": blk, "sv": s["sv"][sh:st], "si": s["si"][:, sh:st], "mi": mi}


def _same_state(a: Sliding, b: Sliding) -> None:
    sa, sb = _live(a), _live(b)
    assert sa.keys() == sb.keys()
    for k in sa:
        if isinstance(sa[k], np.ndarray):
            np.testing.assert_array_equal(sa[k], sb[k], err_msg=k)
        else:
            assert sa[k] == sb[k], k


@pytest.mark.timeout(900)
@pytest.mark.parametrize("rows", [5, 60, 700])
def test_one_call_for_every_key_equals_each_operator(rows):
    rng = np.random.default_rng(rows)
    nk = 7
    mine = [Sliding(0.01, rows) for _ in range(nk)]  # pushed through SlidingKeys
    ref = [Sliding(0.01, rows) for _ in range(nk)]  # pushed by their own push
    sk = SlidingKeys(0.01)
    slot = 0
    qs = []  # (qid, phi, notify)
    for op_m, op_r in zip(mine, ref, strict=True):
        for phi, notify in ((0.5, False), (0.9, True), (0.1, True)):
            for op in (op_m, op_r):
                op.register(slot, phi, 0.01, 0, notify=notify)
            qs.append(slot)
            slot += 1
        sk.add(op_m)
    count = np.zeros(nk, np.int64)
    grew = False
    for step in range(120):
        m = int(rng.integers(1, 300 if step % 10 == 0 else 25))  # now and then a long batch: room, buffers
        keys = rng.integers(0, nk, m)
        x = np.round(rng.normal(100, 10, m), 1)
        order = np.argsort(keys, kind="stable")
        ks = keys[order]
        starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
        ucode = ks[starts]
        bounds = np.r_[starts, m]
        sizes = np.diff(bounds)
        local = np.arange(1, m + 1) - np.repeat(starts - count[ucode], sizes)
        for c in ucode.tolist():
            if mine[c].first_seq < 0:
                mine[c].first_seq = 1
        xs = np.ascontiguousarray(x[order])
        got = sk.push(mine, ucode, bounds, xs, local)
        grew = grew or bool(sk.stale)
        want = [], [], []
        for u, c in enumerate(ucode.tolist()):
            b0, b1 = bounds[u], bounds[u + 1]
            s, o, v = ref[c].push(xs[b0:b1].copy(), local[b0:b1].copy())
            want[0].append(s)
            want[1].append(o + b0)
            want[2].append(v)
        want = [np.concatenate(w) for w in want]
        og, ow = np.lexsort((got[0], got[1])), np.lexsort((want[0], want[1]))
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g[og], w[ow])
        count[ucode] += sizes
        if step == 50:  # a query registered mid-stream in every key (its start: the key's position)
            for c in range(nk):
                for op in (sk.fresh(mine, c), ref[c]):  # fresh: the arrays the pushes grew
                    op.register(slot, 0.25, 0.01, int(count[c]), notify=True)
                sk.sync(c, mine[c])
                qs.append(slot)
                slot += 1
        if step == 80:  # terminations
            for c in range(nk):
                for op in (sk.fresh(mine, c), ref[c]):
                    op.terminate(3 * c + 1)
                sk.sync(c, mine[c])
        live = [(c, q) for c in range(nk) for q in sorted(mine[c].q)]
        codes = np.array([c for c, _ in live], np.int64)
        slots = np.array([q for _, q in live], np.int64)
        e = [mine[c].q[q] for c, q in live]
        got = sk.lookup(mine, codes, np.array([x[0] for x in e]), np.array([x[2] for x in e], np.int64),
                        np.array([x[4] if x[3] else -1 for x in e], np.int64), slots, count[codes])
        want = np.array([ref[c].lookup(np.array([q]), int(count[c]))[0] for c, q in live])
        np.testing.assert_array_equal(got, want)
    assert grew  # keys grew in the compiled push (their operators re-read the arrays: fresh)
    for c, b in enumerate(ref):
        _same_state(sk.fresh(mine, c), b)


def test_a_key_grown_in_the_push_is_fresh_before_python_changes_it():
    """A key whose arrays grew in the compiled push is stale until fresh; sync refuses it (its
    operator's arrays would be the old ones), fresh gives the operator the grown arrays."""
    op = Sliding(0.01, 700)
    op.register(0, 0.5, 0.01, 0)
    sk = SlidingKeys(0.01)
    sk.add(op)
    before = op.ob
    op.first_seq = 1  # as the per-key group sets it before a key's first push
    x = np.arange(200, dtype=np.float64)
    sk.push([op], np.array([0]), np.array([0, 200]), x, np.arange(1, 201, dtype=np.int64))
    assert sk.stale == {0} and op.ob is before
    with pytest.raises(RuntimeError):
        sk.sync(0, op)
    assert sk.fresh([op], 0) is op and op.ob is not before and not sk.stale
    ref = Sliding(0.01, 700)
    ref.register(0, 0.5, 0.01, 0)
    ref.push(x, np.arange(1, 201, dtype=np.int64))
    _same_state(op, ref)
    sk.sync(0, op)


@pytest.mark.timeout(900)
def test_a_per_key_group_made_where_another_ended_in_the_same_batch():
    """A per-key group whose queries all end is dropped; one made after it in the same batch keys
    its own rows (its key codes are its own, whatever object took the dropped group's place)."""
    rng = np.random.default_rng(3)
    n = 400
    t = pa.table({"x": np.round(rng.normal(50, 10, n), 1), "k": rng.choice(["a", "b", "c"], n),
                  "j": rng.choice(["u", "v", "w", "z"], n)})
    ops = []
    for i in range(6):  # groups come and go inside one batch
        q = {"id": f"q{i}", "type": "quantile", "column": "x", "phi": 0.5, "epsilon": 0.01, "rows": 10 + i,
             "group_by": "k" if i % 2 else "j"}
        ops += [{"op": "register", "at": 60 * i, "query": q}, {"op": "terminate", "at": 60 * i + 50, "id": f"q{i}"}]
        ops += [{"op": "lookup", "at": a, "id": f"q{i}"} for a in range(60 * i + 5, 60 * i + 50, 9)]
    check_family("quantiles", "casu", Log(t, ops, quantile_epsilon=0.01, batch=n))



@pytest.mark.timeout(900)
@pytest.mark.parametrize("rows", [4, 90, 3000])
def test_rank_in_one_call_equals_the_merged_summary(rows):
    """SlidingKeys.rank: rank_from_summary(op.summary(...)) of each key, bit for bit (sampled and
    exact blocks, the open block, the front, queries registered inside the window, ties)."""
    from vigil.quantiles.rank import rank_from_summary

    rng = np.random.default_rng(rows)
    eps = 0.05 if rows == 3000 else 0.01  # 3000 rows at 0.05: sampled blocks
    ops = [Sliding(eps, rows) for _ in range(3)]
    for op in ops:
        op.register(0, 0.5, eps, 0)
    sk = SlidingKeys(eps)
    for op in ops:
        sk.add(op)
    count = np.zeros(3, np.int64)
    slot = 1
    for step in range(60):
        c = int(rng.integers(0, 3))
        m = int(rng.integers(1, 200))
        x = np.round(rng.normal(50, 5, m), 0)  # ties
        seqs = np.arange(count[c] + 1, count[c] + m + 1, dtype=np.int64)
        if ops[c].first_seq < 0:
            ops[c].first_seq = 1
        sk.push(ops, np.array([c]), np.array([0, m]), x, seqs)
        count[c] += m
        if step % 15 == 7:  # a query registered inside the window
            sk.fresh(ops, c).register(slot, 0.5, eps, int(count[c]))  # fresh: the arrays the push grew
            sk.sync(c, ops[c])
            slot += 1
        live = [(k, q) for k in range(3) if count[k] for q in sorted(ops[k].q)]
        codes = np.array([k for k, _ in live], np.int64)
        slots = np.array([q for _, q in live], np.int64)
        start = np.array([ops[k].q[q][2] for k, q in live], np.int64)
        for v in (float(rng.normal(50, 5)), 50.0, -1e9, 1e9):
            got = sk.rank(ops, codes, start, slots, count[codes], np.full(len(codes), v))
            want = [rank_from_summary(sk.fresh(ops, k).summary(q, int(count[k])), v) for k, q in live]
            np.testing.assert_array_equal(got, np.array(want))
