"""Soak: long randomized event logs per family, the default implementation against the oracle
(``make test-all``; run by hand before an issue is resolved).

Each (family, seed) is one test: ``vigil.checks.random_log(family, seed, ROWS)`` — rejected rows
(null, NaN, bad weights), a seq column from 1, across 2^53 or from 2^60 with gaps in half the
logs, many keys, registrations at 0, anywhere and late, terminations, windows from 1 row to
longer than the stream, batches of 64 rows to the whole log — replayed through the Engine with
the family's oracle and with its default implementation (snapshot and restore half-way), the
outputs compared by :func:`vigil.checks.check_family` (exact families row for row, quantiles and
epsilon substream filters against their bounds, notify queries at every row). Each test runs
under a timeout (thread method: a hang in a compiled kernel is stopped too, and the failing
test names its family and seed): a hang is a failure.

Sizes: ``VIGIL_SOAK_SEEDS`` (default 10; 20 for the run by hand before an issue is resolved)
seeds x ``VIGIL_SOAK_ROWS`` (default 20,000) rows per family (threshold, windows, substream:
1-7 s a log), except joins, ``VIGIL_SOAK_JOIN_ROWS`` (default 10,000: the join oracle and the
output rows of both runs, about one pair per row and query, take 4 s a log at 10,000 rows, 13 s
at 20,000) and quantiles, ``VIGIL_SOAK_QUANTILE_ROWS`` (default 5,000: the default
implementation's notify queries over rows windows (Sliding) merge summaries in Python at every
row: 7-18 s a log at 5,000 rows, 38 s at 20,000). Measured on a 2-core machine at load 2-3:
10 seeds 204 s (threshold 64, quantiles 88, joins 37, substream 8, windows 6); 20 seeds about
8.5 minutes. ``VIGIL_SOAK_FAMILIES`` (comma-separated) picks families. Reproduce one failure
with ``check_family(family, DEFAULTS[family], random_log(family, seed, rows), cut=rows // 2)``.
"""

from __future__ import annotations

import os

import pytest

from vigil import registry
from vigil.checks import check_family, random_log

SEEDS = int(os.environ.get("VIGIL_SOAK_SEEDS", "10"))
ROWS = int(os.environ.get("VIGIL_SOAK_ROWS", "20000"))
JOIN_ROWS = int(os.environ.get("VIGIL_SOAK_JOIN_ROWS", str(min(ROWS, 10000))))
QUANTILE_ROWS = int(os.environ.get("VIGIL_SOAK_QUANTILE_ROWS", str(min(ROWS, 5000))))
FAMILIES = [f for f in os.environ.get("VIGIL_SOAK_FAMILIES", ",".join(registry.FAMILIES)).split(",") if f]
TIMEOUT = max(120, ROWS // 50)  # s per log: ~10x the slowest family's time on a loaded 2-core machine

CASES = [(f, s) for f in FAMILIES for s in range(SEEDS)]


@pytest.mark.slow
@pytest.mark.timeout(TIMEOUT, method="thread")
@pytest.mark.parametrize(("family", "seed"), CASES, ids=[f"{f}-seed{s}" for f, s in CASES])
def test_soak_default_matches_oracle(family, seed):
    rows = {"joins": JOIN_ROWS, "quantiles": QUANTILE_ROWS}.get(family, ROWS)
    log = random_log(family, seed, rows)
    check_family(family, registry.DEFAULTS[family], log, cut=rows // 2)
