"""``vigil bench``: one command per query family (mounted by ``vigil.cli`` as ``vigil bench``).
Imports are lazy: loading the CLI never imports numba kernels."""

from __future__ import annotations

from pathlib import Path

import typer

bench_app = typer.Typer(no_args_is_help=True, add_completion=False,
                        help="Reproduce the papers' experiments (results JSON + PNG + table).")


@bench_app.callback()
def _bench() -> None:
    """Reproduce the papers' experiments."""


@bench_app.command("threshold")
def threshold(
    preset: str = typer.Option(..., "--preset", help="fig3|fig4|fig5|fig6|fig7|fig8 (paper 000, §8)"),
    scale: float = typer.Option(None, "--scale", help="fraction of the paper's sizes (m, tau, stream); "
                                "1.0 = paper; default 0.1"),
    algos: str = typer.Option(None, "--algos", help="comma-separated algorithms; default: the paper's "
                              "set for the dimension plus dt_floor"),
    dim: int = typer.Option(1, "--dim", help="1 or 2 (Fig. Xa / Xb)"),
    out: Path = typer.Option(Path("results/threshold.json"), "--out", help="result JSON; a PNG is written beside it"),
    budget: float = typer.Option(20.0, "--budget", help="seconds per baseline run before it is cut to a "
                                 "prefix and extrapolated (0 = no limit; dt, dt_floor never cut)"),
    batch: int = typer.Option(1000, "--batch", help="elements per push step"),
    seed: int = typer.Option(0, "--seed"),
    resolver: str = typer.Option(None, "--resolver", help="exact algorithm that generates the trace "
                                 "(default: dt if available, else the best baseline)"),
    points: str = typer.Option(None, "--points", help="override the sweep values (paper scale), comma-separated"),
    no_progress: bool = typer.Option(False, "--no-progress"),
) -> None:
    """Range thresholding on streams (paper 000, Qiao, Gan, Tao): Figs. 3-8."""
    from .threshold import PRESETS, run_preset

    if preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    run_preset(
        preset, scale=scale, algos=[a.strip() for a in algos.split(",") if a.strip()] if algos else None,
        dim=dim, out=out, budget=budget, batch=batch, seed=seed, resolver=resolver,
        points=[float(x) for x in points.split(",")] if points else None, progress=not no_progress,
    )


@bench_app.command("pipeline")
def pipeline(
    preset: str = typer.Option(..., "--preset", help="throughput | soak"),
    scale: float = typer.Option(None, "--scale", help="workload size factor (default: the preset's)"),
    algos: list[str] = typer.Option(None, "--algo", help="FAMILY=NAME (repeatable)"),
    out: Path = typer.Option(Path("results/pipeline.json"), "--out", help="result JSON; a PNG is written beside it"),
    minutes: float = typer.Option(None, "--minutes", help="soak: how long to run"),
) -> None:
    """The Spark pipeline end to end: throughput vs in-process replay, and a memory soak."""
    from ..cli import parse_algos
    from .pipeline import PRESETS, run_preset

    if preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    run_preset(preset, scale=scale, algos=parse_algos(algos), out=out, minutes=minutes)
