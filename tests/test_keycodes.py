"""vigil.keycodes.encode_rows gives the codes (and new entries) Codes.encode over the rows' texts gives."""

import numpy as np
import pyarrow as pa
import pytest

from vigil.group import Codes, Cols
from vigil.keycodes import encode_rows


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["str", "int", "missing"])
def test_encode_rows_matches_codes_encode(kind):
    rng = np.random.default_rng(1)
    n = 500
    vals = rng.integers(0, 40, n)
    if kind == "str":
        col = pa.array([None if v == 7 else f"k{v}" for v in vals.tolist()], pa.string())
    else:
        col = pa.array([None if v == 7 else v for v in vals.tolist()], pa.int64())
    t = pa.table({"k": col, "x": np.arange(n)})
    cols = Cols(t)
    name = "nope" if kind == "missing" else "k"
    a, b = Codes(["k3", "12", "zz"]), Codes(["k3", "12", "zz"])
    for lo, hi, step in ((0, 5, 1), (5, 300, 1), (300, 500, 3), (0, 500, 2), (100, 100, 1)):
        rows = np.arange(lo, hi, step)
        got = encode_rows(a, cols, name, rows)
        want = b.encode(cols.get(name, "key")[0][rows])
        assert got.dtype == np.int64 and got.tolist() == want.tolist()
        assert a.values == b.values and a.code == b.code
