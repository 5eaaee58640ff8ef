"""Every registered implementation of every family against its family's oracle (vigil.checks)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil import registry
from vigil.checks import check_family, implementations, logs, pool_logs, random_log

CASES = [(f, n) for f in registry.FAMILIES for n in implementations(f)]


@pytest.mark.parametrize(("family", "name"), CASES, ids=[f"{f}={n}" for f, n in CASES])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_agrees_with_oracle(family, name, data):
    try:
        registry.resolve(family, name)
    except ImportError as e:  # pragma: no cover - a module still being written
        pytest.skip(str(e))
    log = data.draw(logs(family), label="log")
    cut = data.draw(st.integers(0, log.stream.num_rows), label="cut")
    check_family(family, name, log, cut=cut)


JOIN_IMPLS = implementations("joins")


@pytest.mark.parametrize("name", JOIN_IMPLS)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_joins_affected_mode_agrees_with_oracle(name, data):
    log = data.draw(logs("joins", output="affected"), label="log")
    check_family("joins", name, log, cut=data.draw(st.integers(0, log.stream.num_rows), label="cut"))


POOL = pool_logs()
POOL_CASES = [(case, n) for case, (f, _) in POOL.items() for n in implementations(f)]


@pytest.mark.timeout(300, method="thread")
@pytest.mark.parametrize(("case", "name"), POOL_CASES, ids=[f"{c}={n}" for c, n in POOL_CASES])
def test_pool_pressure_agrees_with_oracle(case, name):
    """Hundreds to thousands of rows that fill an operator's pool: many keys, keys first seen in a
    push of hundreds of rows, seq from 2^60 (vigil.checks_logs.pool_logs). A hang is a failure."""
    family, log = POOL[case]
    check_family(family, name, log)
    check_family(family, name, log, cut=log.stream.num_rows // 2)


LONG_ROWS = 1000
# one seed per implementation, a different one for each implementation of a family (different shapes)
LONG_CASES = [(f, n, s) for f in registry.FAMILIES for s, n in enumerate(implementations(f))]


@pytest.mark.timeout(300, method="thread")
@pytest.mark.parametrize(("family", "name", "seed"), LONG_CASES, ids=[f"{f}={n}-seed{s}" for f, n, s in LONG_CASES])
def test_long_random_logs_agree_with_oracle(family, name, seed):
    """Seeded logs of 1,000 rows (vigil.checks.random_log: rejected rows, seq across 2^53 or from
    2^60, many keys, late registrations of every query type, windows longer than the stream,
    batches up to the whole log); larger ones run in the soak (tests/test_soak_logs.py)."""
    try:
        registry.resolve(family, name)
    except ImportError as e:  # pragma: no cover - a module still being written
        pytest.skip(str(e))
    check_family(family, name, random_log(family, seed, LONG_ROWS), cut=LONG_ROWS // 2)


@pytest.mark.parametrize("name", ["casu", "sliding"])
def test_notify_rows_lookup_between_rows(name):
    """rows 2 over 5, 7, 1, 3: the window ending at 9 (beyond the last row) is empty: null."""
    import pyarrow as pa

    from vigil.checks import Log, run_log

    ops = [{"op": "register", "at": 0, "query": {"type": "quantile", "id": "q", "column": "v", "phi": 1.0,
                                                 "epsilon": 0.01, "rows": 2, "notify": True}},
           {"op": "lookup", "at": 9, "id": "q"}]
    got = [r["value"] for r in run_log(Log(pa.table({"v": [5.0, 7.0, 1.0, 3.0]}), ops), {"quantiles": name}) if r["event"] == "answer"]
    assert got == [None]


@pytest.mark.parametrize("name", ["casu", "sliding", "oracle"])
def test_notify_rows_window_empties_in_a_seq_gap(name):
    """rows 2 over 5, 7, 1 at seqs 1, 2, 3, then 4 at seq 2^60: the window is empty from position 5
    on, so the value turns null there (an update inside the gap), and 4 at the last row."""
    import pyarrow as pa

    from vigil.checks import Log, run_log

    ops = [{"op": "register", "at": 0, "query": {"type": "quantile", "id": "q", "column": "v", "phi": 1.0,
                                                 "epsilon": 0.01, "rows": 2, "notify": True}}]
    log = Log(pa.table({"v": [5.0, 7.0, 1.0, 4.0], "seq": [1, 2, 3, 2**60]}), ops, batch=2)
    got = [(r["at"], r["value"]) for r in run_log(log, {"quantiles": name}) if r["event"] == "update"]
    assert got == [(1, 5.0), (2, 7.0), (4, 1.0), (5, None), (2**60, 4.0)]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["casu", "sliding"])
def test_notify_rows_window_with_seq_gaps(name):
    """3,000 rows, seq steps 1-100 (a rows window of 1,000 positions holds ~60 elements), three
    notify queries rows 1000 eps 0.01 (summary eps 0.05): every position's value within bound
    (the partial block is kept exactly: its in-window elements, whatever the gaps)."""
    import numpy as np
    import pyarrow as pa

    from vigil.checks import Log, check_quantile_updates, run_log

    rng = np.random.default_rng(0)
    seq = np.cumsum(rng.choice([1, 1, 1, 2, 5, 100], 3000)).astype(np.int64)
    log = Log(pa.table({"v": rng.integers(0, 21, 3000).astype(float), "seq": seq}),
              [{"op": "register", "at": 0, "query": {"type": "quantile", "id": f"q{j}", "column": "v", "phi": phi,
                                                     "epsilon": 0.01, "rows": 1000, "notify": True}}
               for j, phi in enumerate([0.25, 0.5, 0.75])], quantile_epsilon=0.05, batch=64)
    check_quantile_updates(log, run_log(log, {"quantiles": name}))
