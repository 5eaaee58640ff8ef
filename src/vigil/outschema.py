"""The output table's schema (every output event's columns, docs/contract.md "Outputs") and
putting a table into it; shared by the readers and writers of outputs (:mod:`vigil.events`,
:mod:`vigil.jsonl_out`)."""

from __future__ import annotations

import pyarrow as pa

OUTPUT_SCHEMA = pa.schema(
    [
        ("event", pa.string()),
        ("id", pa.string()),
        ("at", pa.int64()),
        ("value", pa.float64()),
        ("keys", pa.list_(pa.string())),
        ("r", pa.int64()),
        ("s", pa.int64()),
        ("reason", pa.string()),
        # a late lookup's answer: the position the lookup asked for (``at`` is where it was
        # evaluated); null on every other event
        ("asked_at", pa.int64()),
        # a join event of a query with ``select``: the selected values of r / s, a JSON object as
        # text (JSONL: the objects); null on every other event
        ("left", pa.string()),
        ("right", pa.string()),
    ]
)


def conform_outputs(table: pa.Table) -> pa.Table:
    """``table`` in :data:`OUTPUT_SCHEMA`: columns it lacks (outputs written before a column was
    added, e.g. ``asked_at``) are added as nulls."""
    for f in OUTPUT_SCHEMA:
        if f.name not in table.column_names:
            table = table.append_column(f, pa.nulls(table.num_rows, f.type))
    return table.select(OUTPUT_SCHEMA.names).cast(OUTPUT_SCHEMA)
