"""Decoding (and compact encoding) of JSON operation lines, fast and exactly as the standard library does.

orjson decodes a line ~4x faster than :func:`json.loads`, which matters when a run registers
millions of queries. The standard library stays the definition: a line orjson refuses (NaN,
Infinity, 1e400, a byte-order mark, ...) is decoded (or refused, with its message) by
:func:`json.loads`, and so is a line holding a run of 19 or more digits, because orjson turns an
integer outside the 64-bit range into a float silently, where vigil must see the integer to reject
it (docs/contract.md: integers beyond what float64 holds exactly). One exception: a string with a
lone surrogate (``"\\ud800"``), which json.loads accepts, is refused as malformed: it is no
Unicode text, and no output (ids, reasons, specs) could be written with it."""

from __future__ import annotations

import json
from itertools import permutations, repeat
from typing import Any

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

# every digit becomes "0": a line holds a run of 19 digits iff its image holds "0" * 19
# (bytes.translate is a table lookup in C, far cheaper than a regular expression here)
_DIGITS = bytes.maketrans(b"123456789", b"000000000")
_RUN = b"0" * 19


def loads(line: str | bytes) -> Any:
    """``json.loads(line)``, faster; raises ValueError (json.JSONDecodeError) like it."""
    b = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else bytes(line)
    if _RUN not in b.translate(_DIGITS):
        try:
            return orjson.loads(b)
        except orjson.JSONDecodeError:
            pass
    return _unicode_only(json.loads(line))


def _unicode_only(v: Any) -> Any:
    """``v`` (decoded by :func:`json.loads` from a line orjson refused), or ValueError when a string
    of it holds a lone surrogate (``"\\ud800"``): json.loads accepts one, but it is no Unicode
    text, and no output (ids, reasons, specs) could be written with it."""
    try:
        json.dumps(v, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        bad = e.object[e.start:e.end].encode("unicode_escape").decode()
        raise ValueError(f"lone surrogate {bad} in a string (not valid Unicode)") from None
    return v


def loads_many(lines: list) -> list:
    """``[loads(x) for x in lines]`` with each error returned in its place (a ValueError instance,
    which no decoded JSON value can be) instead of raised. One digit-run check over the whole text
    instead of one per line: when no line holds a run of 19 digits (the common case), each line
    goes to orjson directly, and only the lines it refuses to :func:`loads`."""
    if lines and set(map(type, lines)) == {str} and _RUN not in "\n".join(lines).encode(
            "utf-8", "surrogatepass").translate(_DIGITS):
        try:  # every line decodes (the common case): one C-level pass
            return list(map(orjson.loads, lines))
        except orjson.JSONDecodeError:
            pass
        out = []
        for x in lines:
            try:
                out.append(orjson.loads(x))
            except orjson.JSONDecodeError:
                out.append(_loads_or_error(x))
        return out
    return [_loads_or_error(x) for x in lines]


# ----------------------------------------------------------------------------- plain lookup lines

# JSON whitespace (not RE2's \s, which also takes \f and \v)
_WS = r"[ \t\n\r]*"
# the members of a plain lookup line: "at" a non-negative integer of at most 18 digits (< 2^63, no
# leading zero, no fraction or exponent), "id" a string without escapes or control characters
# (its text between the quotes is the decoded string)
_MEMBER = {"op": rf'"op"{_WS}:{_WS}"lookup"',
           "at": rf'"at"{_WS}:{_WS}(?P<at>0|[1-9][0-9]{{0,17}})',
           "id": rf'"id"{_WS}:{_WS}"(?P<id>[^"\\\x00-\x1f]*)"'}
_ORDERS = [("op", "at", "id"), *(o for o in permutations(("op", "at", "id")) if o != ("op", "at", "id"))]
_LOOKUP_RE = {o: rf"^{_WS}\{{{_WS}" + rf"{_WS},{_WS}".join(_MEMBER[k] for k in o) + rf"{_WS}\}}{_WS}$"
              for o in _ORDERS}
LOOKUP_MIN = 64  # fewer lines: the per-line decoder (the Arrow pass costs more to set up)


def lookup_lines(lines: list) -> tuple[list, list[int]] | None:
    """(for each of ``lines`` (texts) the operation of a *plain lookup line*, or None where the
    line is anything else, the indices of those other lines, ascending), or None when fewer than
    none may be a plain lookup (decode them all one by one, :func:`loads`).

    A plain lookup line is a JSON object of exactly the members ``"op": "lookup"``, ``"at"`` (an
    integer 0 <= at < 10^18 written without sign, leading zero, fraction or exponent) and ``"id"``
    (a string without escapes or control characters), in any order, with any JSON whitespace.
    Such a line decodes, by :func:`loads`, to the returned dict (the same keys in the same order,
    the same values; equal lines share one dict: operations are not changed after decoding);
    every other line (escapes, duplicate or unknown members, another spelling of the integer,
    malformed JSON) is left to the full decoder. The distinct lines are recognized and
    their ``at`` and ``id`` extracted by one Arrow regular expression per key order (the first
    order over the candidate lines, each other over the lines left): well under 1 us per line,
    where orjson and the field checks in Python cost ~1-2 us."""
    try:
        arr = pa.array(lines, pa.string())
    except (pa.ArrowException, UnicodeError, TypeError):  # a lone surrogate, bytes, ...
        return None
    if not pc.any(pc.match_substring(arr, '"lookup"')).as_py():  # a log of registrations
        return None
    enc = arr.dictionary_encode()  # each distinct line recognized once (in first-seen order)
    got = _lookups(enc.dictionary)
    if got is None:
        return None
    ops, rest = got
    if len(enc.dictionary) == len(lines):  # every line distinct: the dictionary is the lines
        return ops, rest
    codes = enc.indices.to_numpy()
    if rest:
        bad = np.zeros(len(ops), bool)
        bad[rest] = True
        rest = np.flatnonzero(bad[codes]).tolist()
    return list(map(ops.__getitem__, codes.tolist())), rest  # equal lines share one dict


def _lookups(arr: pa.Array) -> tuple[list, list[int]] | None:
    """:func:`lookup_lines` over an Arrow string array."""
    look = pc.match_substring(arr, '"lookup"')  # the candidates
    n_look = pc.sum(look).as_py() or 0
    if not n_look:
        return None
    lines = arr
    out: list = [None] * len(lines)
    left, where = arr, np.arange(len(lines))  # the lines not recognized yet, their indices in ``lines``
    if n_look < len(lines):
        okn = look.to_numpy(zero_copy_only=False)
        where, left = where[okn], arr.filter(look)
    for order in _ORDERS:
        ex = pc.extract_regex(left, _LOOKUP_RE[order])
        ok = ex.is_valid()
        n_ok = pc.sum(ok).as_py() or 0
        if n_ok:
            if n_ok < len(left):
                ex = ex.filter(ok)
            ats = pc.cast(ex.field("at"), pa.int64()).to_pylist()
            ids = ex.field("id").to_pylist()
            if order == _ORDERS[0]:
                ops = [{"op": "lookup", "at": a, "id": i} for a, i in zip(ats, ids, strict=True)]
            else:
                col = {"op": repeat("lookup"), "at": ats, "id": ids}
                ops = [dict(zip(order, t, strict=True)) for t in zip(*(col[k] for k in order), strict=False)]
            if n_ok == len(lines):
                return ops, []
            okn = ok.to_numpy(zero_copy_only=False)
            for i, op in zip(where[okn].tolist(), ops, strict=True):
                out[i] = op
            if n_ok == len(left):
                break
            where, left = where[~okn], left.filter(pa.array(~okn))
    return out, [i for i, op in enumerate(out) if op is None]


def _loads_or_error(line: str | bytes) -> Any:
    try:
        return loads(line)
    except ValueError as e:
        return e


def dumps(obj: Any) -> str | None:
    """Compact JSON of a decoded JSON value, or None when orjson cannot encode it exactly (types
    JSON does not have, integers beyond 64 bits, non-finite floats, which orjson writes as null)."""
    try:
        out = orjson.dumps(obj)
    except TypeError:
        return None
    if b"null" in out and _has_nonfinite(obj):
        return None
    return out.decode()


def dumps_any(obj: Any) -> str:
    """JSON text of decoded JSON values: :func:`dumps` (orjson, ~10x json.dumps) when it is exact,
    else ``json.dumps`` (both decode to the same values)."""
    return dumps(obj) or json.dumps(obj)


def _has_nonfinite(obj: Any) -> bool:
    if isinstance(obj, float):
        return obj != obj or obj in (float("inf"), float("-inf"))
    if isinstance(obj, dict):
        return any(_has_nonfinite(v) for v in obj.values())
    if isinstance(obj, list | tuple):
        return any(_has_nonfinite(v) for v in obj)
    return False
