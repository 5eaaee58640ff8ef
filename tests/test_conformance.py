"""Every registered implementation of every family against its family's oracle (vigil.checks)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vigil import registry
from vigil.checks import check_family, implementations, logs

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
