"""CPU time of Spark's driver JVM as seen from /proc, for the pipeline measurement scripts
(pipeline_threshold.py, pipeline_timeline.py, pipeline_spark_floor.py). Linux only."""

from __future__ import annotations

import os
import re
from pathlib import Path

_TCK = os.sysconf("SC_CLK_TCK")


def _fields(stat: str) -> list[str]:
    return stat[stat.rindex(")") + 2:].split()


def jvm_pids() -> list[int]:
    """PIDs of this process's child JVMs."""
    me, out = os.getpid(), []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if int(_fields((d / "stat").read_text())[1]) == me and b"java" in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except (OSError, ValueError, IndexError):
                pass
    return out


def cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` (threads that exited count)."""
    f = _fields(Path(f"/proc/{pid}/stat").read_text())
    return (int(f[11]) + int(f[12])) / _TCK


def jvm_cpu(pids: list[int] | None = None) -> float:
    """CPU seconds of this process's child JVMs (or of ``pids``)."""
    total = 0.0
    for p in jvm_pids() if pids is None else pids:
        try:
            total += cpu(p)
        except (OSError, ValueError, IndexError):
            pass
    return total


def jvm_threads(pids: list[int] | None = None) -> dict[str, float]:
    """CPU seconds per JVM thread group of the live threads (thread name with digits dropped:
    'C CompilerThre', 'GC Thread#', 'Executor task launch worker for task', ...)."""
    out: dict[str, float] = {}
    for p in jvm_pids() if pids is None else pids:
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for t in tasks:
            try:
                st = (t / "stat").read_text()
                name = re.sub(r"[0-9]+", "", st[st.index("(") + 1:st.rindex(")")]).strip()
                f = _fields(st)
                out[name] = out.get(name, 0.0) + (int(f[11]) + int(f[12])) / _TCK
            except (OSError, ValueError, IndexError):
                pass
    return out


def jvm_jit(pids: list[int] | None = None) -> float:
    """CPU seconds of the live JIT compiler threads of this process's child JVMs."""
    return sum(v for k, v in jvm_threads(pids).items() if "CompilerThre" in k)
