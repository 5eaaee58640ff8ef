"""Shard state kept on the executors in sharded mode (:mod:`.sharded`): a live engine per shard in
the Python worker that runs the shard's tasks, and a durable log per shard on the checkpoint's
(shared) storage. The driver never holds or ships a shard's state.

Live engines. Each engine is cached in its worker process (:data:`_LIVE`, keyed by the run's id
and the shard) with its *version*: the id of the last batch it absorbed. A task of batch K says
which version it builds on (the previous batch, K-1; -1 for a new run) and uses the cached engine
only when the versions match; otherwise (first task of the worker, a task that moved to another
worker or executor, a restart, a batch attempt that failed after this shard had absorbed it) it
restores the engine from the durable log. A cache is a hint; the log is the truth.

Durable log, ``checkpoint/vigil/shards/shard-S/``:

* ``in-K.bin``: the shard's input of batch K (its rows as Arrow IPC, its operations, ownership
  masks, clock, join history and the global position), written by the task before it returns:
  what a batch writes is O(its rows and operations for the shard), not O(state);
* ``snap-K.bin``: ``Engine.snapshot()`` after batch K, written when the inputs logged since the
  previous snapshot outweigh it, or every :data:`MAX_LOGS` batches (compaction).

Restore at version B: the newest snapshot J <= B, then the inputs J+1..B applied again through
the same code as a live task (:func:`apply`; deterministic: same rows, same order, so the same
state). A failed attempt of batch K leaves at most an ``in-K`` that the next attempt rewrites
with the same content. Files no kept driver snapshot can need are deleted by the tasks
(``keep_from``: the oldest driver snapshot the driver keeps).

Executors must reach the checkpoint directory (shared storage on a cluster; any local path on one
machine or ``local-cluster``).
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from vigil.state import bytes_table, pack, unpack

from .config import CheckpointError
from .sinks import atomic_write_bytes

MAX_LOGS = 32  # logged batches between two snapshots of a shard, at most
_LIVE: dict[tuple[str, int], tuple[int, Any]] = {}  # (run id, shard) -> (version, Engine)
LAST_RESTORE: dict[str, float] = {"replayed": -1, "s": 0.0}  # the last engine_at of this worker (metrics)
_FILE = re.compile(r"^(in|snap)-(\d+)\.bin$")


def shard_dir(root: str | Path, shard: int) -> Path:
    return Path(root) / f"shard-{shard:04d}"


def _files(d: Path) -> tuple[list[int], dict[int, int]]:
    """(snapshot versions ascending, {logged batch: bytes})."""
    snaps, logs = [], {}
    if d.is_dir():
        for p in d.iterdir():
            m = _FILE.match(p.name)
            if m:
                k = int(m.group(2))
                if m.group(1) == "snap":
                    snaps.append(k)
                else:
                    logs[k] = p.stat().st_size
    return sorted(snaps), logs


def apply(eng, rows_b: bytes, ops: list[str], extra: dict[str, Any], final: bool = False) -> pa.Table:
    """One batch (or the end of input) of a shard through its engine; returns the outputs."""
    from vigil.engine import Partial

    eng.partial = Partial(own=extra.get("own"), clock=extra.get("clock"))
    try:
        if extra.get("hist"):
            eng.add_history(bytes_table(extra["hist"]))
        if final:
            return eng.finish()
        if ops:
            eng.add_operations(ops)
        out = eng.process(bytes_table(rows_b))
        more = eng.advance(extra["position"])
        return pa.concat_tables([out, more]) if more.num_rows else out
    finally:
        eng.partial = None


def _encode_input(rows_b: bytes, ops: list[str], extra: dict[str, Any]) -> bytes:
    clock = {t: [np.asarray(a), np.asarray(b)] for t, (a, b) in (extra.get("clock") or {}).items()}
    own = {k: np.asarray(v) for k, v in (extra.get("own") or {}).items()}
    return pack({"rows": np.frombuffer(rows_b, np.uint8), "ops": list(ops), "own": own, "clock": clock,
                 "hist": np.frombuffer(extra.get("hist") or b"", np.uint8), "position": int(extra["position"])})


def _decode_input(data: bytes) -> tuple[bytes, list[str], dict[str, Any]]:
    d = unpack(data)
    extra = {"own": d["own"] or None, "clock": {t: (a, b) for t, (a, b) in d["clock"].items()} or None,
             "hist": d["hist"].tobytes(), "position": int(d["position"])}
    return d["rows"].tobytes(), list(d["ops"]), extra


def engine_at(root: str, run: str, shard: int, base: int, settings: dict[str, Any]):
    """The shard's engine at version ``base`` (-1: a new engine): the live one if this worker
    holds it at that version, else restored from the shard's log. The live entry is taken out
    of the cache (put back by :func:`commit`), so a task that fails leaves no half-applied engine."""
    from vigil.engine import Engine

    live = _LIVE.pop((run, shard), None)
    LAST_RESTORE.update(replayed=-1, s=0.0)  # -1: the live engine (or a new one), nothing restored
    if live is not None and live[0] == base:
        return live[1]
    if base < 0:
        return Engine(**settings)
    t0 = time.perf_counter()
    d = shard_dir(root, shard)
    snaps, logs = _files(d)
    usable = [j for j in snaps if j <= base]
    j = usable[-1] if usable else -1
    eng = Engine.restore((d / f"snap-{j:012d}.bin").read_bytes()) if j >= 0 else Engine(**settings)
    for k in range(j + 1, base + 1):
        if k not in logs:
            raise CheckpointError(f"shard {shard}: no logged input of batch {k} in {d} to restore version {base}")
        rows_b, ops, extra = _decode_input((d / f"in-{k:012d}.bin").read_bytes())
        apply(eng, rows_b, ops, extra)
        eng.take_outputs()
    LAST_RESTORE.update(replayed=base - j, s=time.perf_counter() - t0)
    return eng


def log_input(root: str, shard: int, k: int, rows_b: bytes, ops: list[str], extra: dict[str, Any]) -> int:
    """Write the shard's input of batch ``k`` (before the engine applies it); returns its bytes."""
    d = shard_dir(root, shard)
    d.mkdir(parents=True, exist_ok=True)
    data = _encode_input(rows_b, ops, extra)
    atomic_write_bytes(d / f"in-{k:012d}.bin", data)
    return len(data)


def commit(root: str, run: str, shard: int, k: int, eng, keep_from: int) -> int:
    """After batch ``k``: cache the engine at version k, write a snapshot when the inputs logged
    since the last one outweigh it (or after MAX_LOGS batches), delete what no kept driver
    snapshot (``>= keep_from``) can need. Returns the bytes written."""
    d = shard_dir(root, shard)
    snaps, logs = _files(d)
    last = snaps[-1] if snaps else -1
    since = sum(b for j, b in logs.items() if last < j <= k)
    snap_size = (d / f"snap-{last:012d}.bin").stat().st_size if last >= 0 else 0
    written = 0
    if k - last >= MAX_LOGS or (since > snap_size and k - last > 1):
        data = eng.snapshot()
        atomic_write_bytes(d / f"snap-{k:012d}.bin", data)
        written = len(data)
        snaps.append(k)
    base = max([j for j in snaps if j <= keep_from], default=-1)  # the newest snapshot a kept version needs
    for j in snaps:
        if j < base:
            (d / f"snap-{j:012d}.bin").unlink(missing_ok=True)
    for j in logs:
        if j <= base:
            (d / f"in-{j:012d}.bin").unlink(missing_ok=True)
    keep_live(run, shard, k, eng)
    return written


def keep_live(run: str, shard: int, version: int, eng) -> None:
    """Cache a shard's engine at its version. A worker keeps the engines of one run: those of any
    other run are dropped (a finished or restarted run's engines would otherwise stay in memory;
    two runs sharing workers stay correct, they only restore more often)."""
    for key in [key for key in _LIVE if key[0] != run]:
        del _LIVE[key]
    _LIVE[(run, shard)] = (version, eng)


def seed(root: str, shard: int, k: int, blob: bytes) -> None:
    """A shard snapshot at version ``k`` from an older checkpoint's in-snapshot blob (migration)."""
    d = shard_dir(root, shard)
    d.mkdir(parents=True, exist_ok=True)
    if blob and not (d / f"snap-{k:012d}.bin").exists():
        atomic_write_bytes(d / f"snap-{k:012d}.bin", blob)
