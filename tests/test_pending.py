"""vigil.pending.Pending behaves as a sorted list consumed from the front (the engine's queue)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from vigil.pending import Pending

steps = st.lists(st.one_of(
    st.tuples(st.just("add"), st.lists(st.integers(0, 50), max_size=30)),
    st.tuples(st.just("take"), st.integers(0, 40)),
    st.tuples(st.just("upto"), st.integers(-1, 60)),
), max_size=60)


@settings(max_examples=300, deadline=None)
@given(steps)
def test_same_as_a_sorted_list(ops):
    p, ref, arrival = Pending(), [], 0
    for kind, arg in ops:
        if kind == "add":
            new = [(at, arrival + i, f"op{arrival + i}") for i, at in enumerate(arg)]
            arrival += len(arg)
            p.add(new)
            ref = sorted(ref + new, key=lambda e: (e[0], e[1]))
        elif kind == "take":
            k = min(arg, len(ref))
            assert p.take(k) == ref[:k]
            ref = ref[k:]
        else:
            assert p.count_upto(arg) == sum(1 for e in ref if e[0] <= arg)
        assert len(p) == len(ref) and bool(p) == bool(ref) and list(p) == ref
        assert all(p[i] == ref[i] for i in range(len(ref)))


def test_consumed_prefix_is_dropped():
    p = Pending((i, i, None) for i in range(10_000))
    for _ in range(9_000):
        p.take(1)
    assert len(p._items) < 10_000 and len(p) == 1_000 and p[0][0] == 9_000
