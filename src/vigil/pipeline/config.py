"""Settings of ``vigil run`` and the error a checkpoint raises: shared by driver and sharded mode
(both import this module; it imports neither)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .reorder import DEFAULT_MAX_REORDER_ROWS


@dataclass
class RunConfig:
    stream: str
    queries: str
    out: str
    checkpoint: str
    fmt: str = "parquet"
    schema: str | None = None
    trigger: str = "available-now"
    max_files_per_batch: int | None = None
    max_op_files_per_batch: int | None = None
    mode: str = "driver"
    shards: int = 2
    master: str | None = None
    algos: dict[str, str] = field(default_factory=dict)
    options: dict[str, str] = field(default_factory=dict)
    quantile_epsilon: float = 0.005
    join_output: str = "pairs"
    join_history: str | None = None  # "COLUMN:H": keep join history within H only (vigil.history)
    finish: bool | None = None  # default: True with available-now
    timeout: float | None = None  # stop a processing-time run after this many seconds
    quiet: bool = False
    keep_snapshots: int = 2
    max_reorder_rows: int = DEFAULT_MAX_REORDER_ROWS  # rows held beyond a gap in seq (see .reorder)

    def fingerprint(self) -> dict[str, Any]:
        """Settings a checkpoint is bound to (changing them mid-run would change the results)."""
        return {
            "mode": self.mode,
            "shards": self.shards if self.mode == "sharded" else None,
            "algos": dict(sorted(self.algos.items())),
            "quantile_epsilon": self.quantile_epsilon,
            "join_output": self.join_output,
            **({"join_history": self.join_history} if self.join_history else {}),
            "fmt": self.fmt,
        }


class CheckpointError(RuntimeError):
    pass
