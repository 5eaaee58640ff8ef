"""The Python API: :class:`Monitor`, one :class:`vigil.engine.Engine` driven from a notebook or a
service instead of from event-log files. It is the engine of ``vigil replay``, not a second path:
every call becomes the contract's query operations (docs/contract.md) at the current stream
position, through ``Engine.add_operations``, so validation, order and outputs are replay's.

Example (``push`` returns the output events of the rows it applied, as an Arrow table)::

    >>> import vigil
    >>> m = vigil.Monitor()
    >>> m.register({"id": "q1", "type": "threshold", "where": {"price": [100, 105]},
    ...             "weight": "shares", "threshold": 300})
    'q1'
    >>> m.register('{"id": "a1", "type": "window_aggregate", "agg": "sum", "column": "shares", "rows": [2, 0]}')
    'a1'
    >>> out = m.push({"price": [101.0, 99.0, 104.5], "shares": [200, 50, 100]})
    >>> vigil.Monitor.rows(out)
    [{'event': 'matured', 'id': 'q1', 'at': 3}]
    >>> m.lookup("a1")   # sum of shares over the last 2 elements
    150

Differences from a replay, all on purpose (the API is interactive): an operation applies at once,
at the current position (``position``, the seq of the last element pushed); a rejected operation
raises ``ValueError`` with the contract's reason instead of becoming a ``rejected`` event
(``register_many`` returns them instead); a lookup returns its value instead of an ``answer``
event. Rejected *rows* stay ``rejected`` events in ``push``'s output, as in a replay.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import pyarrow as pa

from .engine import Engine
from .events import output_rows

Output = Literal["arrow", "pandas", "rows"]


def to_table(batch: Any) -> pa.Table:
    """A batch of stream rows as an Arrow table: a ``pyarrow.Table`` or ``RecordBatch``, a pandas
    DataFrame (its index is dropped; a NaN there is a missing value, null, as pandas means it), any object with ``to_arrow()`` (a polars DataFrame), a
    mapping of column name to numpy array or list, or anything ``pyarrow.table`` accepts (the
    Arrow PyCapsule stream protocol). Raises ``TypeError`` for anything else."""
    if isinstance(batch, pa.Table):
        return batch
    if isinstance(batch, pa.RecordBatch):
        return pa.Table.from_batches([batch])
    if isinstance(batch, Mapping):
        return pa.table(dict(batch))
    mod = type(batch).__module__.split(".")[0]
    if mod == "pandas":
        return pa.Table.from_pandas(batch, preserve_index=False)
    if hasattr(batch, "to_arrow"):  # polars (not a dependency: duck-typed)
        t = batch.to_arrow()
        return pa.Table.from_batches([t]) if isinstance(t, pa.RecordBatch) else t
    try:
        return pa.table(batch)
    except (TypeError, ValueError, pa.ArrowInvalid) as e:
        raise TypeError(
            f"push() takes an Arrow table or record batch, a pandas or polars DataFrame or a dict of "
            f"columns (numpy arrays or lists), got {type(batch).__name__}"
        ) from e


def _per_lookup(answers: list[dict[str, Any]]) -> list[Any]:
    """One value per lookup: a per-key query's answers (one event per key, consecutive, each with
    ``keys``) become one dict key -> value; its answer while no key has an element is the
    event's value, an empty list."""
    out: list[Any] = []
    prev: dict[str, Any] | None = None
    for e in answers:
        if "keys" in e:
            k = e["keys"][0] if len(e["keys"]) == 1 else tuple(e["keys"])
            if prev is not None and prev["id"] == e["id"] and isinstance(out[-1], dict) and k not in out[-1]:
                out[-1][k] = e["value"]
            else:
                out.append({k: e["value"]})
        else:
            out.append(e.get("value"))
        prev = e
    return out


def _spec(spec: Mapping[str, Any] | str, ident: str | None = None) -> dict[str, Any]:
    """A spec from a dict, its JSON text or an SQL statement (compiled by :mod:`vigil.sql`, which
    needs ``ident``); ``ident``, when given, is the spec's id."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            if ident is None:
                raise ValueError(f"an SQL query needs an id: register(sql, id='q1'), got {spec[:80]!r}") from None
            from .sql import compile_sql  # sqlglot, loaded on first use

            return compile_sql(spec, ident)
    if not isinstance(spec, Mapping):
        raise ValueError(f"a query spec must be a JSON object, got {type(spec).__name__}")
    return dict(spec) if ident is None else {**spec, "id": ident}


class Monitor:
    """Standing queries over a stream, in process: register queries, push batches of rows, get
    the output events back (see the module docstring for an example).

    ``algos`` picks implementations per family (``{"threshold": "dt"}``, as ``--algo``);
    ``quantile_epsilon``, ``join_output`` and ``join_history`` are ``vigil replay``'s options of
    the same names. ``columns``: the stream's columns if known ahead (then a query referencing
    another column is rejected at registration, as in a replay); by default not checked.
    """

    def __init__(
        self,
        algos: Mapping[str, str] | None = None,
        quantile_epsilon: float = 0.005,
        join_output: Literal["pairs", "affected"] = "pairs",
        join_history: str | None = None,
        columns: Iterable[str] | None = None,
    ) -> None:
        self.engine = Engine(dict(algos or {}), quantile_epsilon, join_output,
                             columns=None if columns is None else set(columns), join_history=join_history)

    # ------------------------------------------------------------------ state
    @property
    def position(self) -> int:
        """The seq of the last element pushed (0 before any): where operations apply."""
        return self.engine.position

    @property
    def counts(self) -> dict[str, int]:
        """Rows and operations in / applied / rejected (as ``vigil replay``'s summary)."""
        return dict(self.engine.counts)

    @property
    def alive(self) -> list[str]:
        """The ids of the queries alive (registered, not matured or terminated), in order."""
        eng = self.engine
        return [eng.ids[q] for q in sorted(eng.where)]

    # ------------------------------------------------------------------ operations
    def _ops(self, ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Apply ``ops`` at the current position; their output events as contract dicts."""
        self.engine.add_operations(ops)
        return output_rows(self.engine.take_outputs())

    @staticmethod
    def _raise(events: list[dict[str, Any]]) -> None:
        bad = [e for e in events if e["event"] == "rejected"]
        if bad:
            raise ValueError("; ".join(e["reason"] for e in bad))

    def register(self, spec: Mapping[str, Any] | str, id: str | None = None) -> str:  # noqa: A002
        """Register one query (a spec as a dict or JSON text, or an SQL statement with its ``id``,
        docs/queries.md); it counts the elements pushed after this call. Returns its id; raises
        ``ValueError`` with the reason a replay would give in its ``rejected`` event (invalid
        spec, duplicate id, ...) or why the SQL maps to no query type."""
        q = _spec(spec, id)
        self._raise(self._ops([{"op": "register", "at": self.position, "query": q}]))
        return q["id"]

    def register_many(self, specs: Iterable[Mapping[str, Any] | str]) -> list[dict[str, Any]]:
        """Register many queries at once (one engine call: the fast path for thousands to
        millions). The valid ones are registered; returns the ``rejected`` events of the others
        (contract dicts with ``id`` and ``reason``), empty when all registered."""
        ops = [{"op": "register", "at": self.position, "query": _spec(s)} for s in specs]
        return [e for e in self._ops(ops) if e["event"] == "rejected"]

    def terminate(self, ident: str) -> None:
        """End a query now (a matured or terminated one: no-op); unknown ids raise ``ValueError``."""
        self._raise(self._ops([{"op": "terminate", "at": self.position, "id": ident}]))

    def lookup(self, ident: str) -> Any:
        """The current answer of a query (window, substream, quantile): a number, ``None`` (no
        element in its window yet) or, for a substream filter, the list of keys; for a query with
        ``group_by``, a dict key -> value (the key's text, or a tuple of texts for several
        columns; an empty list while no key has an element). Raises ``ValueError`` (unknown id, query not alive, a family without lookups)."""
        return self.lookup_many([ident])[0]

    def lookup_many(self, idents: Iterable[str]) -> list[Any]:
        """The answers of several queries, in order (one engine call)."""
        ids = list(idents)
        events = self._ops([{"op": "lookup", "at": self.position, "id": i} for i in ids])
        self._raise(events)
        values = _per_lookup([e for e in events if e["event"] == "answer"])
        if len(values) != len(ids):  # only if operations wait (a snapshot of a replay's engine)
            raise RuntimeError(f"{len(ids)} lookups gave {len(values)} answers: operations are pending")
        return values

    # ------------------------------------------------------------------ elements
    def push(self, batch: Any, *, output: Output = "arrow") -> Any:
        """Apply a batch of stream rows (see :func:`to_table` for the kinds accepted); rows take
        seq = position + 1, + 2, ... in row order, or the batch's ``seq`` column (docs/contract.md).
        Returns the output events the rows caused: an Arrow table in the contract's output schema
        (``output="arrow"``), a pandas DataFrame (``"pandas"``) or the contract's JSON objects
        (``"rows"``, as ``vigil replay`` writes them)."""
        out = self.engine.process(to_table(batch))
        if output == "arrow":
            return out
        if output == "pandas":
            return out.to_pandas()
        if output == "rows":
            return output_rows(out)
        raise ValueError(f"output must be 'arrow', 'pandas' or 'rows', got {output!r}")

    @staticmethod
    def rows(events: pa.Table) -> list[dict[str, Any]]:
        """Output events (``push``'s table) as the contract's JSON objects, as written by
        ``vigil replay --out x.jsonl``."""
        return output_rows(events)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> bytes:
        """Everything (queries, operator state, position, counts) as bytes, pickle-free."""
        return self.engine.snapshot()

    @classmethod
    def restore(cls, data: bytes) -> Monitor:
        """A monitor that continues exactly where ``snapshot()`` was taken."""
        m = cls.__new__(cls)
        m.engine = Engine.restore(data)
        return m

    def __repr__(self) -> str:
        return f"Monitor(position={self.position}, alive={len(self.engine.where)})"
