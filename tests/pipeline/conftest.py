"""One SparkSession for every pipeline test (starting one costs 5-12 s)."""

import os

import pytest

os.environ.setdefault("NUMBA_CACHE_DIR", os.path.join(os.path.dirname(__file__), "..", "..", ".numba_cache"))


@pytest.fixture(scope="session")
def spark():
    from vigil.pipeline.session import get_session

    s = get_session("local[2]", app_name="vigil-tests")
    yield s
    s.stop()
