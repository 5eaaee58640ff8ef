"""The routing log of sharded mode: the routing tables persisted as per-batch changes."""

from __future__ import annotations

from vigil.pipeline.routing_log import RoutingLog

T = ("home", "alive")


def _st(n: int) -> dict:
    return {"home": {f"q{i}": i % 4 for i in range(n)}, "alive": {f"q{i}": -1 for i in range(n)}}


def test_changes_are_appended_and_read_back(tmp_path):
    log = RoutingLog(tmp_path, T)
    st = _st(1_000)
    ref0 = log.write(0, st, set())
    full = log.written
    st["home"]["new"], st["alive"]["new"] = 2, -1
    del st["alive"]["q5"]
    ref1 = log.write(1, st, {"new", "q5"})
    assert ref1[0] == ref0[0] and log.written - full < 200  # O(changes), not O(queries)
    assert RoutingLog(tmp_path, T).read(ref1) == st
    back = RoutingLog(tmp_path, T).read(ref0)
    assert back == _st(1_000)


def test_an_attempt_that_did_not_complete_is_cut_off(tmp_path):
    log = RoutingLog(tmp_path, T)
    st = _st(10)
    ref0 = log.write(0, st, set())
    st["alive"]["q1"] = 7
    log.write(1, st, {"q1"})  # batch 1's attempt fails before its snapshot is saved
    again = RoutingLog(tmp_path, T)
    st2 = again.read(ref0)
    st2["alive"]["q2"] = 9
    ref1 = again.write(1, st2, {"q2"})
    got = RoutingLog(tmp_path, T).read(ref1)
    assert got["alive"]["q1"] == -1 and got["alive"]["q2"] == 9


def test_a_new_generation_when_changes_outweigh_the_tables_and_old_ones_pruned(tmp_path):
    log = RoutingLog(tmp_path, T, min_log=1024)
    st = _st(10)
    refs = [log.write(0, st, set())]
    for k in range(1, 400):
        st["alive"][f"q{k % 10}"] = k
        refs.append(log.write(k, st, {f"q{k % 10}"}))
    gens = sorted({r[0] for r in refs})
    assert len(gens) > 1
    assert RoutingLog(tmp_path, T).read(refs[-1]) == st
    log.prune({refs[-1][0], refs[-2][0]})
    assert len(list((tmp_path / "routing").iterdir())) == 1
    assert RoutingLog(tmp_path, T).read(refs[-1]) == st
