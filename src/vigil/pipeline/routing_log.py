"""The routing table of sharded mode (:mod:`.sharded`: per query id, its home shard, kind, family,
liveness, keys...) persisted incrementally: what a batch writes is O(the queries it changed), not
O(the queries registered).

``checkpoint/vigil/routing/routing-G.jsonl`` (a *generation*, named by the batch that started it):
its first line holds the whole tables, each later line the changes of one batch
(``{"set": {table: {id: value}}, "del": {table: [id, ...]}}``), fsync'd before the driver's
snapshot that refers to it. A snapshot records ``[G, bytes]``: the tables are the generation's
lines up to that many bytes, replayed (anything after it was written by an attempt that did not
complete, and is cut off by the next append). A new generation starts when the changes logged
outweigh the whole tables (at least 64 KB of them); generations older than those the kept
snapshots refer to are deleted.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from .config import CheckpointError

_GEN = re.compile(r"^routing-(\d+)\.jsonl$")


class RoutingLog:
    def __init__(self, directory: Path, tables: tuple[str, ...], min_log: int = 1 << 16) -> None:
        self.dir = Path(directory) / "routing"
        self.tables = tables
        self.min_log = min_log  # changes logged before a new generation, at least
        self.gen: int | None = None  # generation being appended to
        self.nbytes = 0  # its length as of the last record this process wrote or read
        self.base = 0  # length of its first (whole-tables) line
        self.written = 0  # bytes written by this process (metrics)

    def path(self, g: int) -> Path:
        return self.dir / f"routing-{g:012d}.jsonl"

    def _line(self, f, obj: Any) -> int:
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        f.write(data)
        self.written += len(data)
        return len(data)

    def write(self, batch: int, st: dict[str, Any], dirty: set[str]) -> list[int]:
        """Persist the tables of ``st`` after ``batch`` (``dirty``: the ids changed since the last
        call); returns the reference a snapshot keeps."""
        self.dir.mkdir(parents=True, exist_ok=True)
        if self.gen is not None and self.nbytes - self.base <= max(self.base, self.min_log):
            rec: dict[str, dict] = {"set": {}, "del": {}}
            for t in self.tables:
                tab = st.get(t, {})
                for i in dirty:
                    if i in tab:
                        rec["set"].setdefault(t, {})[i] = tab[i]
                    else:
                        rec["del"].setdefault(t, []).append(i)
            with open(self.path(self.gen), "r+b" if self.path(self.gen).exists() else "wb") as f:
                f.truncate(self.nbytes)  # an attempt that did not complete
                f.seek(self.nbytes)
                self.nbytes += self._line(f, rec)
                f.flush()
                os.fsync(f.fileno())
            return [self.gen, self.nbytes]
        self.gen = batch
        with open(self.path(batch), "wb") as f:
            self.base = self.nbytes = self._line(f, {t: st.get(t, {}) for t in self.tables})
            f.flush()
            os.fsync(f.fileno())
        return [self.gen, self.nbytes]

    def read(self, ref: list[int]) -> dict[str, dict]:
        """The tables a snapshot's reference points to (and continue appending after it)."""
        g, n = int(ref[0]), int(ref[1])
        p = self.path(g)
        if not p.exists() or p.stat().st_size < n:
            raise CheckpointError(f"{p} is missing or shorter than its snapshot says ({n} bytes)")
        with open(p, "rb") as f:
            lines = f.read(n).splitlines()
        tables = json.loads(lines[0])
        for ln in lines[1:]:
            rec = json.loads(ln)
            for t, kv in rec["set"].items():
                tables.setdefault(t, {}).update(kv)
            for t, ids in rec["del"].items():
                for i in ids:
                    tables.get(t, {}).pop(i, None)
        self.gen, self.nbytes, self.base = g, n, len(lines[0]) + 1
        return tables

    def prune(self, referenced: set[int]) -> None:
        """Delete the generations older than every generation the kept snapshots refer to
        (``referenced``; newer ones, e.g. started by an attempt that did not complete, stay
        until the kept snapshots move past them)."""
        if not self.dir.is_dir() or not referenced:
            return
        oldest = min(referenced)
        for p in self.dir.iterdir():
            m = _GEN.match(p.name)
            if m and int(m.group(1)) < oldest:
                p.unlink(missing_ok=True)
