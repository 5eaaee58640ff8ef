"""A first run's compilation on every core: the kernels a workload needs, compiled in parallel
before the run needs them.

numba compiles one kernel at a time per process, so a first run on a cold cache (``vigil.jit``)
spends its first minute on one core. :func:`precompile` splits the workload's query types into
``workers`` shares of about equal compile cost, runs each share's registrations and lookups on a
small sample of the stream (the first ``rows`` rows) through an :class:`~vigil.engine.Engine` --
share 0 in this process, the others in spawned processes at the same time -- and so fills the
cache; the real run then loads every kernel the sample reached in milliseconds. What the sample
does not reach (say a choice of ``threshold=auto`` that only a large batch makes) still compiles
lazily, in sight of :class:`vigil.jit.CompileWatch`. Outputs of the sample are discarded; a share
that fails costs only its compilation (the run itself reports real errors).

A stamp in the cache (keyed by vigil's source files, numba's version and the workload's query
types and ``--algo`` choices) makes later runs of the same shape skip it.

:func:`start` runs it in a background thread (driver mode: while Spark starts) and
:func:`wait` blocks until it is done (before the first batch).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa

from . import jit

#: relative compile cost of each query type's kernels on a cold cache (seconds of CPU measured on
#: the tour's workload: quantiles' trigger kernels ~50, window joins' skyline kernels ~40, substream
#: filters ~15, window aggregates ~10, threshold ~10); only the balance of the shares uses it
COST = {"quantile": 5, "window_join": 4, "select_join": 2, "band_join": 2, "substream_filter": 2,
        "window_aggregate": 1, "threshold": 1}


def shares(ops: list, workers: int) -> list[list[dict]]:
    """The register operations (dicts or JSON lines) split by query type into ``workers`` lists of about equal
    compile cost (largest first onto the lightest share), each with lookups of its queries."""
    by_type: dict[str, list[dict]] = {}
    for o in ops:
        if isinstance(o, str | bytes):  # a JSON line as read from a file (malformed ones: skipped)
            try:
                o = json.loads(o)
            except ValueError:
                continue
        if isinstance(o, dict) and o.get("op") == "register" and "sql" in o:  # compiled as the engine does
            from .oprun import check_op

            o = check_op(o)[0]
        if isinstance(o, dict) and o.get("op") == "register" and isinstance(o.get("query"), dict):
            by_type.setdefault(str(o["query"].get("type")), []).append(o)
    out: list[list[dict]] = [[] for _ in range(max(1, workers))]
    load = [0.0] * len(out)
    for t in sorted(by_type, key=lambda t: -COST.get(t, 1)):
        i = min(range(len(out)), key=load.__getitem__)
        out[i].extend(by_type[t])
        load[i] += COST.get(t, 1)
    return [s for s in out if s]


def _sample_ops(regs: list[dict], rows: int) -> list[dict]:
    """Registrations early in the sample, and a lookup of each query in its middle and at its end
    (lookups reach the lookup kernels; unknown ids or queries that matured are only rejected)."""
    ops = []
    for o in regs:
        q = o["query"]
        ops.append({"op": "register", "at": min(int(o.get("at", 0) or 0), rows // 4), "query": q})
    for at in (rows // 2, rows):
        ops += [{"op": "lookup", "at": at, "id": o["query"].get("id")} for o in regs]
    return ops


def _run_share(ipc: bytes, ops: list[dict], kwargs: dict[str, Any], rows: int) -> None:
    from .engine import Engine

    table = pa.ipc.open_stream(ipc).read_all()
    eng = Engine(**kwargs, columns=set(table.column_names))
    eng.add_operations(_sample_ops(ops, rows))
    half = max(1, table.num_rows // 2)
    eng.process(table.slice(0, half))
    eng.process(table.slice(half))
    eng.finish()


def _share_main(ipc: bytes, ops: list[dict], kwargs: dict[str, Any], rows: int) -> None:
    try:
        _run_share(ipc, ops, kwargs, rows)
    except Exception:  # noqa: BLE001 - best effort: the real run reports real errors
        pass


def _key(parts: list[list[dict]], kwargs: dict[str, Any]) -> tuple[str, list[str]]:
    types = sorted({str(o["query"].get("type")) for s in parts for o in s})
    algos = sorted(f"{k}={v}" for k, v in (kwargs.get("algos") or {}).items())
    group = "workload-" + "+".join(types + algos).replace("/", "_")[:150]
    return group, [str(p) for p in sorted(Path(__file__).parent.rglob("*.py"))]


def precompile(stream: pa.Table, ops: list[dict], *, workers: int = 2, rows: int = 4000,
               **engine_kwargs: Any) -> bool:
    """Compile, on ``workers`` processes at once, the kernels that ``ops``' query types need on
    ``stream``'s first ``rows`` rows (``engine_kwargs``: ``algos``, ``quantile_epsilon``,
    ``join_output``, ``join_history`` as given to the run's Engine). Returns False when the cache
    was already warm for this workload's shape (nothing done)."""
    parts = shares(ops, workers)
    if not parts or stream.num_rows == 0:
        return False
    group, sources = _key(parts, engine_kwargs)  # the operations are parsed once (shares)
    if jit.is_warm(group, sources):
        return False
    sample = stream.slice(0, rows).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, sample.schema) as w:
        w.write_table(sample)
    ipc = sink.getvalue().to_pybytes()
    n = sample.num_rows
    procs = []
    ctx = mp.get_context("spawn")
    for part in parts[1:]:
        p = ctx.Process(target=_share_main, args=(ipc, part, engine_kwargs, n), daemon=True)
        p.start()
        procs.append(p)
    _share_main(ipc, parts[0], engine_kwargs, n)
    for p in procs:
        p.join()
    jit.mark_warm(group, sources)
    return True


_done = threading.Event()
_done.set()


def start(stream: pa.Table, ops: list[dict], **kwargs: Any) -> None:
    """:func:`precompile` in a background thread (e.g. while Spark starts); :func:`wait` joins it."""
    import numba  # noqa: F401  (imported here first: numba imported by two threads at once can fail
    # half-initialised, "partially initialized module 'numba.core.event'", seen with vigil demo)

    _done.clear()

    def body() -> None:
        try:
            precompile(stream, ops, **kwargs)
        except Exception as e:  # never fatal: the run then compiles each kernel on first use
            import sys

            print(f"vigil: precompiling skipped ({type(e).__name__}: {e}); kernels compile on first use",
                  file=sys.stderr)
        finally:
            _done.set()

    threading.Thread(target=body, name="vigil-precompile", daemon=True).start()


def wait(timeout: float | None = None) -> None:
    """Block until a :func:`start`-ed precompilation is done (at once if none runs)."""
    _done.wait(timeout)
