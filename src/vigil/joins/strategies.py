"""The registry's join strategies (``--algo joins=NAME``), each a :class:`~vigil.joins._base.JoinBase`
that delegates query indexing and probing to the plan of its join type:

=================  ===========  =============  ==============
name               band         select         window
=================  ===========  =============  ==============
``ssi``            BJ-SSI       SJ-SSI         WJ-SSI
``hotspot``        BJ-Hotspot   SJ-Hotspot     WJ-Hotspot
``join_first``     -            SJ-JoinFirst   WJ-JoinFirst
``select_first``   -            SJ-SelectFirst WJ-SelectFirst
``vanilla``        -            SJ-Vanilla     -
``qouter``         BJ-QOuter    -              -
``douter``         BJ-DOuter    -              -
``mj``             BJ-MJ        -              -
=================  ===========  =============  ==============

A query whose type the strategy does not define is rejected with
:class:`~vigil.errors.Unsupported` (paper 003 defines each strategy for the types above).
Bounds: see band.py, select.py and window.py.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from . import band, select, window
from ._base import JoinBase


class _Strategy(JoinBase):
    plans: ClassVar[dict[str, type]] = {}

    def __init__(self, kind: str, output: str = "pairs") -> None:
        super().__init__(kind, output)
        self.kinds = tuple(self.plans)
        self.plan = self.plans[kind](self) if kind in self.plans else None

    def _on_register(self, qid, row):
        self.plan.add(qid, row)

    def _on_terminate(self, qid, row):
        self.plan.remove(qid, row)

    def _queries_changed(self):
        self.plan.rebuild()

    def _probe(self, side, seqs, key, x, t, mode):
        """Run the plan over each sorted part of the other side (main index and buffer)."""
        parts = self.sides["right" if side == "left" else "left"].parts()
        if hasattr(self.plan, "probe_parts"):  # WJ-SSI / WJ-Hotspot: one call over both parts
            return self.plan.probe_parts(side, seqs, key, x, t, mode, parts)
        outs = []
        for part in parts:
            self.cur = part
            outs.append(self.plan.probe(side, seqs, key, x, t, mode))
        if len(outs) == 1:
            return outs[0]
        return (np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs]),
                np.concatenate([o[2] for o in outs]), sum(o[3] for o in outs))


class SSI(_Strategy):
    name = "ssi"
    plans = {"band": band.BJSSI, "select": select.SJSSI, "window": window.WJSSI}


class Hotspot(_Strategy):
    name = "hotspot"
    plans = {"band": band.BJHotspot, "select": select.SJHotspot, "window": window.WJHotspot}


class JoinFirst(_Strategy):
    name = "join_first"
    plans = {"select": select.SJJoinFirst, "window": window.WJJoinFirst}


class SelectFirst(_Strategy):
    name = "select_first"
    plans = {"select": select.SJSelectFirst, "window": window.WJSelectFirst}


class Vanilla(_Strategy):
    name = "vanilla"
    plans = {"select": select.SJVanilla}


class QOuter(_Strategy):
    name = "qouter"
    plans = {"band": band.BJQOuter}


class DOuter(_Strategy):
    name = "douter"
    plans = {"band": band.BJDOuter}


class MJ(_Strategy):
    name = "mj"
    plans = {"band": band.BJMJ}


_Strategy.shadow_cls = SelectFirst  # queries registered between full builds (module _delta)
