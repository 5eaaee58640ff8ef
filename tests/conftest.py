"""Hypothesis profiles.

- ``gate`` (the default, what ``make test`` and CI run): derandomized, so a given commit passes or
  fails the same way on every machine and every run; a red CI always names a change, never luck.
- ``explore`` (``make explore``): random seeds, to hunt for the cases the fixed seeds miss; run
  it (several times) before a change lands: a failure prints the example's blob to reproduce it,
  and Hypothesis's local example database replays it in later runs.
"""

import os

from hypothesis import settings

settings.register_profile("gate", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("VIGIL_HYPOTHESIS", "gate"))


def pytest_configure(config):
    """``make test`` runs on every core (pytest-xdist). Each worker compiles the numba kernels its
    tests need, and DT's (the largest: ~1-2 min of one core per dimension) would be compiled by
    every worker at once. The controller compiles them first, one process per dimension in
    parallel, into the shared numba cache (vigil.jit): the workers then load them."""
    import os
    import subprocess
    import sys

    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return  # a worker, or a run without xdist: kernels compile where they are first used
    if os.environ.get("VIGIL_TEST_PRECOMPILE", "1") == "0":
        return
    code = "import sys; from vigil.bench.threshold import warm_up; warm_up('dt', int(sys.argv[1]))"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(d)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for d in (1, 2)]
    for p in procs:
        try:
            p.wait(timeout=900)
        except subprocess.TimeoutExpired:  # the tests compile what is missing
            p.kill()
