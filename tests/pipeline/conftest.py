"""One SparkSession for every pipeline test (starting one costs 5-12 s)."""


import pytest


@pytest.fixture(scope="session")
def spark():
    from vigil.pipeline.session import get_session

    s = get_session("local[2]", app_name="vigil-tests")
    yield s
    s.stop()
