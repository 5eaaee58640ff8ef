"""The vectorized decode of plain lookup lines (vigil.jsonline.lookup_lines, used by
oprun.parse_ops): it recognizes exactly the lines it can decode exactly, and every other line
takes the per-line decoder, with the same operation or the same rejection, in its place."""

import json
import random

import pytest

from vigil import jsonline, oprun

ODD = [  # lines the Arrow pass must leave to the per-line decoder (decoded there, or rejected)
    '{"op":"lookup","id":"q\\u0031","at":5}',  # an escape in the id
    '{"op":"lookup","id":"q\\"1","at":5}',
    '{"op":"lookup","id":"q1","at":5.0}',  # another spelling of the integer
    '{"op":"lookup","id":"q1","at":5e0}',
    '{"op":"lookup","id":"q1","at":-0}',
    '{"op":"lookup","id":"q1","at":05}',
    '{"op":"lookup","id":"q1","at":+5}',
    '{"op":"lookup","id":"q1","at":-5}',
    '{"op":"lookup","id":"q1","at":1' + "0" * 18 + "}",  # 19 digits
    '{"op":"lookup","id":"q1","at":9223372036854775808}',
    '{"op":"lookup","id":"q1","at":1e400}',
    '{"op":"lookup","id":"q1","at":NaN}',
    '{"op":"lookup","id":"q1","at":true}',
    '{"op":"lookup","id":"q1","at":5,"at":6}',  # duplicate or unknown members
    '{"op":"lookup","op":"lookup","id":"q1","at":5}',
    '{"op":"lookup","id":"q1","id":"q2","at":5}',
    '{"op":"lookup","id":"q1","at":5,"x":1}',
    '{"op":"lookup","id":"q1"}',  # at missing: 0 by default
    '{"op":"lookup","at":5}',
    '{"op":"lookup","id":5,"at":5}',
    '{"op":"lookup","id":null,"at":5}',
    '{"op":"Lookup","id":"q1","at":5}',
    '{"op":"lookup ","id":"q1","at":5}',
    '{"op":"lookup","id":"q1","at":5,}',  # malformed JSON
    '{"op":"lookup","id":"q1","at":5',
    '{"op":"lookup","id":"q1","at":5}}',
    '{"op":"lookup","id":"q1","at":5} x',
    "\ufeff" + '{"op":"lookup","id":"q1","at":5}',  # a byte-order mark
    '{"op":"lookup","id":"q1","at":5}\x0c',  # \f and \v are not JSON whitespace
    '\x0b{"op":"lookup","id":"q1","at":5}',
    '{"op":"lookup","id":"q\t1","at":5}',  # a control character inside the string
    '{"op":"lookup","id":"q\x001","at":5}',
    "[1]",
    "",
    '"lookup"',
    '{"op":"terminate","id":"q1","at":5}',
    '{"op":"register","at":0,"query":{"type":"window_aggregate","id":"lookup"}}',
]
PLAIN = [  # plain lookup lines: any key order, any JSON whitespace, any unescaped text in the id
    '{"op":"lookup","id":"q1","at":5}',
    '{"at": 0, "op": "lookup", "id": ""}',
    ' \t{ "id" :"é😀\x7f" ,\r\n"op":"lookup" , "at":999999999999999999 }\n',
    '{"id":"at","at":7,"op":"lookup"}',
    '{"op":"lookup","at":12,"id":"a/b\'c{}:, u0031"}',
]


def _expected(lines):
    return [oprun.parse_op(x) for x in lines]


@pytest.mark.timeout(60)
def test_odd_lines_are_left_to_the_decoder():
    got = jsonline.lookup_lines(ODD + PLAIN * 20)
    assert got is not None
    ops, rest = got
    assert rest == list(range(len(ODD)))
    assert ops[:len(ODD)] == [None] * len(ODD)
    for line, op in zip(PLAIN * 20, ops[len(ODD):], strict=True):
        want = json.loads(line)
        assert op == want and list(op) == list(want)  # same values, keys in the same order


@pytest.mark.timeout(60)
def test_parse_ops_equals_the_per_line_decoder():
    rng = random.Random(3)
    plain = [json.dumps({"op": "lookup", "at": rng.randrange(10**6), "id": f"q{rng.randrange(50)}"})
             for _ in range(300)] + PLAIN * 30
    lines = plain + ODD * 3
    rng.shuffle(lines)
    got = oprun.parse_ops(lines)
    want = _expected(lines)
    assert got == want
    assert [list(o) for o, _ in got] == [list(o) for o, _ in want]


@pytest.mark.timeout(60)
def test_lines_the_arrow_pass_cannot_take():
    base = [json.dumps({"op": "lookup", "at": i, "id": "q"}) for i in range(100)]
    for extra in ('{"op":"lookup","id":"q\ud800","at":5}', b'{"op":"lookup","id":"q","at":5}'):
        lines = base + [extra]
        if isinstance(extra, str):
            assert jsonline.lookup_lines(lines) is None
        assert oprun.parse_ops(lines) == _expected(lines)
    regs = ['{"op":"register","at":0,"query":{"type":"window_aggregate"}}'] * 100  # no lookup at all
    assert jsonline.lookup_lines(regs) is None
    assert oprun.parse_ops(regs) == _expected(regs)


@pytest.mark.timeout(60)
def test_equal_lines_decode_once():
    lines = ['{"op":"lookup","at":3,"id":"a"}'] * 200 + ['{"op":"lookup","at":3,"id":"a",}'] * 70
    ops, rest = jsonline.lookup_lines(lines)
    assert rest == list(range(200, 270))
    assert ops[0] is ops[199] and ops[0] == {"op": "lookup", "at": 3, "id": "a"}
    assert oprun.parse_ops(lines) == _expected(lines)
