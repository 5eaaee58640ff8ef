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
