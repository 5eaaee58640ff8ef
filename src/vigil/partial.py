"""The engine's sharded-mode hook (re-exported as ``vigil.engine.Partial``)."""

from __future__ import annotations

import numpy as np


class Partial:
    """Sharded-mode hook (:mod:`vigil.pipeline.sharded`): this engine holds one shard and sees only
    the part of the stream routed to it. Set ``engine.partial`` before ``add_operations`` /
    ``process`` / ``finish``; with ``engine.partial = None`` (the default) nothing changes.

    * ``own``: tag -> bool mask over the rows of the next ``process`` batch. A group whose
      ``part_tag()`` is in ``own`` is fed only the rows whose mask is set; tags are
      ``"key:<column>"`` (substream filters keyed by that column: the shard owns those keys),
      ``"join:<left>\\x1f<left_on>\\x1f<right>\\x1f<right_on>"`` (equality join groups: the
      shard's key partition of both relations) and ``"rel"`` (band join groups, and the join
      history the engine keeps). Every received row is still validated against every group,
      exactly as without the hook. A group whose tag is absent sees every row it receives.
    * ``clock``: time column -> (seqs, times), seqs ascending, of the *whole* stream: a substream
      lookup after element n takes t_now = the time at the last seq <= n (an engine that sees the
      whole stream takes the time of its own last element, which is the same).
    """

    def __init__(self, own: dict[str, np.ndarray] | None = None,
                 clock: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> None:
        self.own = dict(own or {})
        self.clock = dict(clock or {})
