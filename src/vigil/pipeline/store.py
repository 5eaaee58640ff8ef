"""What ``vigil run`` keeps beside Spark's checkpoint, in ``checkpoint/vigil/``: engine snapshots
(:class:`SnapshotStore`), the append-only query log (:class:`QueryLog`) and the per-batch
manifests (:class:`ManifestLog`: the input files of a batch *in the order they were applied*,
so that a batch read again after a crash is applied in exactly the same order)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from .config import CheckpointError, RunConfig
from .sinks import atomic_write_bytes

SNAP_RE = re.compile(r"^snapshot-(\d+)\.bin$")


class SnapshotStore:
    """Engine snapshots beside Spark's checkpoint: ``checkpoint/vigil/snapshot-K.bin``."""

    def __init__(self, checkpoint: str | Path, keep: int = 2) -> None:
        self.dir = Path(checkpoint) / "vigil"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.keep = max(2, keep)
        self.written = 0  # bytes written durably by this process (metrics: state_bytes_written)

    def path(self, k: int) -> Path:
        return self.dir / f"snapshot-{k:012d}.bin"

    def ids(self) -> list[int]:
        return sorted(int(m.group(1)) for p in self.dir.iterdir() if (m := SNAP_RE.match(p.name)))

    def latest(self) -> int | None:
        ids = self.ids()
        return ids[-1] if ids else None

    def load(self, k: int) -> bytes | None:
        p = self.path(k)
        return p.read_bytes() if p.exists() else None

    def save(self, k: int, data: bytes) -> None:
        atomic_write_bytes(self.path(k), data)
        self.written += len(data)
        for old in self.ids()[: -self.keep]:
            self.path(old).unlink(missing_ok=True)

    def check_config(self, cfg: RunConfig) -> None:
        p = self.dir / "config.json"
        fp = cfg.fingerprint()
        if p.exists():
            old = json.loads(p.read_text())
            diff = {k: (old.get(k), v) for k, v in fp.items() if old.get(k) != v}
            if diff:
                raise CheckpointError(
                    f"checkpoint {self.dir.parent} was written with other settings {diff}; "
                    "use a new --checkpoint (and --out) to change them"
                )
        else:
            atomic_write_bytes(p, json.dumps(fp).encode())


class QueryLog:
    """``checkpoint/vigil/queries.jsonl``: the id and spec of every query the engine registered,
    append-only; each line is ``[[ids...], [specs...]]`` of one batch (the specs are joined as
    the engine encoded them at registration: nothing is encoded again)."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / "queries.jsonl"
        self.written = 0  # bytes appended by this process

    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def append(self, ids: list, specs: list[str]) -> int:
        """Append one record (fsync'd); returns the log's size in bytes. ``specs`` are JSON."""
        with open(self.path, "ab") as f:
            self.written += f.write(f"[{json.dumps(ids)},[{','.join(specs)}]]\n".encode())
            f.flush()
            os.fsync(f.fileno())
            return f.tell()

    def read(self, nbytes: int, n: int) -> tuple[list, list]:
        """The first ``n`` (id, spec) pairs, from the first ``nbytes`` of the log, which is cut
        to that length (anything after it was written by an attempt that did not complete)."""
        if self.size() < nbytes:
            raise CheckpointError(f"{self.path} is shorter than its snapshot says ({self.size()} < {nbytes} bytes)")
        ids: list = []
        specs: list = []
        if nbytes:
            with open(self.path, "r+b") as f:
                data = f.read(nbytes)
                f.truncate(nbytes)
            for line in data.splitlines():
                a, b = json.loads(line)
                ids.extend(a)
                specs.extend(json.dumps(q, separators=(",", ":")) for q in b)
        else:
            self.path.unlink(missing_ok=True)
        if len(ids) != n:
            raise CheckpointError(f"{self.path} holds {len(ids)} queries where its snapshot says {n}")
        return ids, specs


class ManifestLog:
    """``checkpoint/vigil/manifests/batch-K.json``: the input files of batch K in the order they
    are applied (operation files, then stream files, each by (modification time, path)), written
    (fsync) before the batch's rows reach the engine. Read back (a) to apply again a batch Spark
    committed before the engine absorbed it (input files are immutable in a file source), and
    (b) to apply a batch Spark runs again after a crash in the order of the interrupted attempt,
    whatever the files' modification times say now. Manifests of older checkpoints list the
    files by path, which was their order."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory) / "manifests"

    def path(self, k: int) -> Path:
        return self.dir / f"batch-{k:012d}.json"

    def write(self, k: int, files: list[str]) -> int:
        """Write the manifest of batch ``k``; returns its size in bytes."""
        self.dir.mkdir(parents=True, exist_ok=True)
        data = json.dumps({"batch": k, "files": files}).encode()
        atomic_write_bytes(self.path(k), data)
        return len(data)

    def read(self, k: int) -> list[str] | None:
        p = self.path(k)
        return json.loads(p.read_text())["files"] if p.exists() else None

    def ids(self) -> list[int]:
        return sorted(int(p.stem.split("-")[1]) for p in self.dir.glob("batch-*.json")) if self.dir.is_dir() else []

    def prune(self, upto: int) -> None:
        """Drop the manifests of batches ``<= upto`` (covered by a snapshot)."""
        for k in self.ids():
            if k <= upto:
                self.path(k).unlink(missing_ok=True)
