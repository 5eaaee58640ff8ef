"""engine_path.threshold_workload names queries as it always did (q<qid>, q<qid>_<n> for a qid
registered again while its name is taken), with a set of the names in use (no scan per query)."""

import numpy as np

from vigil.bench.engine_path import threshold_workload
from vigil.workloads.threshold import ThresholdTrace, ThresholdWorkloadParams


def _reg(qids):
    k = len(qids)
    return ("register", np.asarray(qids, np.int64), np.zeros((k, 1)), np.ones((k, 1)), np.full(k, 5, np.int64))


def _old_names(tr):
    """The names as the scan of ``ids.values()`` gave them."""
    ids, gen, out = {}, 0, []
    for s in tr.steps:
        if s[0] == "register":
            for q in s[1].tolist():
                gen += 1
                ids[q] = f"q{q}" if f"q{q}" not in ids.values() else f"q{q}_{gen}"
                out.append(ids[q])
    return out


def test_ids_of_reregistered_qids():
    tr = ThresholdTrace(params=ThresholdWorkloadParams(dim=1, m=3, tau=5))
    tr.steps = [_reg([0, 1, 2]), ("push", np.zeros((2, 1)), np.ones(2, np.int64)), ("terminate", np.array([1])),
                _reg([1, 3]), _reg([1])]
    _, ops = threshold_workload(tr)
    regs = [o["query"]["id"] for o in ops if o["op"] == "register"]
    assert regs == ["q0", "q1", "q2", "q1_4", "q3", "q1"] == _old_names(tr)
    assert [o["id"] for o in ops if o["op"] == "terminate"] == ["q1"]
    assert [o["at"] for o in ops] == [0, 0, 0, 2, 2, 2, 2]
