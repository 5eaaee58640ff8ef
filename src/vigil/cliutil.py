"""Command-line helpers shared by ``vigil``'s sub-commands (``vigil.cli``, ``vigil.bench.cli``,
``vigil.pipeline.cli``): a neutral module, so that the commands never import one another."""

from __future__ import annotations

import typer


def parse_algos(algo: list[str] | None) -> dict[str, str]:
    from . import registry

    out: dict[str, str] = {}
    for a in algo or []:
        if "=" not in a:
            raise typer.BadParameter(f"--algo takes FAMILY=NAME, got {a!r}")
        fam, name = a.split("=", 1)
        try:
            registry.resolve(fam, name)
        except KeyError as e:
            raise typer.BadParameter(str(e.args[0])) from None
        out[fam] = name
    return out

JOIN_HISTORY_HELP = (
    "COLUMN:H keeps the relation rows for joins registered later only within H of the newest COLUMN "
    "value (memory O(rows within H)); once rows were dropped, a join needing a new group must be a "
    "window_join on COLUMN with max_window <= H (others are rejected with the reason). Default: keep all")
