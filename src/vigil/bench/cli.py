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
    preset: str = typer.Option(None, "--preset", help="fig3|fig4|fig5|fig6|fig7|fig8 (paper 000, §8); "
                               "batch (not in the paper: batch sizes 1..1M, dt/sweep/auto/baselines); "
                               "rearm (not in the paper: 100,000 re-arming queries vs the same without "
                               "re-arm on fig3's workload; --scale 1 = 100,000 queries, default algo dt)"),
    fit: bool = typer.Option(False, "--fit", help="refit auto's cost model on this machine and install it "
                             "as vigil/threshold/_auto_model.py (the samples go to --out)"),
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
    reps: int = typer.Option(3, "--reps", help="repetitions of each algorithm's run on each point, interleaved "
                             "(median CPU seconds and the range reported)"),
) -> None:
    """Range thresholding on streams (paper 000, Qiao, Gan, Tao): Figs. 3-8."""
    from ..cliutil import at_least
    from .threshold import PRESETS, run_preset

    at_least(reps, 1, "--reps")
    if preset == "rearm":
        from .threshold_rearm import run_rearm

        run_rearm(scale=scale, algos=[a.strip() for a in algos.split(",") if a.strip()] if algos else None,
                  dim=dim, out=out, batch=batch, seed=seed, reps=reps)
        return
    if fit:
        from .common import png_path, write_json
        from .threshold_fit import fit_auto_model, plot_winner_map, write_auto_model

        model = fit_auto_model(scale=1.0 if scale is None else scale, seed=seed)
        print(f"wrote {write_json(out, {'family': 'threshold', 'preset': 'fit', **model})}")
        print(f"installed {write_auto_model(model)}")
        print(f"wrote {plot_winner_map(model['tables'], png_path(out))}")
        return
    if preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)} (or --fit)")
    run_preset(
        preset, scale=scale, algos=[a.strip() for a in algos.split(",") if a.strip()] if algos else None,
        dim=dim, out=out, budget=budget, batch=batch, seed=seed, resolver=resolver,
        points=[float(x) for x in points.split(",")] if points else None, progress=not no_progress, reps=reps,
    )


@bench_app.command("windows")
def windows(
    preset: str = typer.Option(..., "--preset", help="fig9|fig10|fig11 (paper 002, §6.1-6.2); fig12 (§6.3, "
                               "substream filters)"),
    scale: float = typer.Option(None, "--scale", help="input size factor (default 0.1)"),
    algos: str = typer.Option(None, "--algos", help="comma-separated IMPL_AGG names (rint_sum, bint_max, "
                              "duckdb_max, ...); default: the preset's set"),
    out: Path = typer.Option(Path("results/windows.json"), "--out", help="result JSON; a PNG is written beside it"),
    batch: str = typer.Option(None, "--batch", help="comma-separated batch sizes (events per batch call)"),
    budget: float = typer.Option(10.0, "--budget", help="seconds per run before it is cut to a prefix and "
                                 "extrapolated (0 = no limit)"),
    seed: int = typer.Option(0, "--seed"),
    no_progress: bool = typer.Option(False, "--no-progress"),
    repeat: int = typer.Option(3, "--repeat", help="timed runs per algorithm and point, interleaved, after one "
                               "untimed warm-up run (median and range of CPU and wall seconds reported)"),
) -> None:
    """Shared sliding-window aggregates (paper 002, Arasu & Widom): Figs. 9-12."""
    from ..cliutil import at_least

    at_least(repeat, 1, "--repeat")
    names = [a.strip() for a in algos.split(",") if a.strip()] if algos else None
    if preset == "fig12":
        from .substream import run_preset as run_substream

        run_substream(preset, scale=scale, algos=names, out=out, seed=seed, progress=not no_progress, repeat=repeat)
        return
    from .windows import PRESETS, run_preset

    if preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}, fig12")
    run_preset(preset, scale=scale, algos=names, out=out, budget=budget, seed=seed, progress=not no_progress,
               batches=[int(b) for b in batch.split(",")] if batch else None, repeat=repeat)


@bench_app.command("joins")
def joins(
    preset: str = typer.Option(None, "--preset", help="fig7|fig8|fig9|fig10|fig11|fig12|fig15|fig18|appB "
                               "(paper 003, §5, App. B)"),
    scale: float = typer.Option(None, "--scale", help="fraction of Table I's sizes (100,000 tuples, "
                                "100,000 queries); default 0.1"),
    algos: str = typer.Option(None, "--algos", help="comma-separated strategies (ssi, hotspot, join_first, "
                              "select_first, vanilla, qouter, douter, mj, duckdb); default: the preset's set"),
    out: Path = typer.Option(Path("results/joins.json"), "--out", help="result JSON; a PNG is written beside it"),
    batch: str = typer.Option(None, "--batch", help="comma-separated batch sizes (default 1,1000,100000)"),
    budget: float = typer.Option(5.0, "--budget", help="CPU seconds per (strategy, point, batch size): sampling "
                                 "stops once spent"),
    seed: int = typer.Option(0, "--seed"),
    points: str = typer.Option(None, "--points", help="replace the preset's sweeps: KEY=V1,V2 (paper scale), "
                               "e.g. n_queries=100000"),
    repeats: int = typer.Option(5, "--repeats", help="samples per (strategy, point, batch size), interleaved "
                                "between strategies; median and range reported (fig12/fig15/fig18/fig9mix: slices "
                                "of the interleaved chunks; appB: builds per histogram)"),
    pairs: bool = typer.Option(True, "--pairs/--no-pairs", help="also time ssi and hotspot with the result "
                               "pairs materialised (rows ALGO+pairs)"),
    fit: bool = typer.Option(False, "--fit", help="fit the router's cost models (§5.4) on this machine; "
                             "writes --out (load it with VIGIL_JOIN_COSTS=FILE)"),
) -> None:
    """Continuous band / select joins (paper 003, Agarwal et al.): Figs. 7-20, App. B."""
    from .joins import PRESETS, run_preset

    if fit:
        from .joins_dynamic import run_fit

        run_fit(scale=0.1 if scale is None else scale, seed=seed, out=out)
        return
    if preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    run_preset(preset, scale=scale, algos=[a.strip() for a in algos.split(",") if a.strip()] if algos else None,
               out=out, batches=[int(b) for b in batch.split(",")] if batch else None, budget=budget, seed=seed,
               repeats=repeats, materialise=pairs, points={points.split("=")[0]: [float(v) for v in points.split("=")[1].split(",")]} if points else None)


@bench_app.command("quantiles")
def quantiles(
    preset: str = typer.Option(..., "--preset", help="fig5|fig8|fig9|fig10|fig11|fig12|fig13|fig14 (paper 004, "
                               "§5); peers (GK vs KLL/REQ/t-digest, KLL re-answer); targets (1M notify "
                               "queries vs GK alone and the KLL re-answer peer); clustered (KLL peer answering one "
                               "phi per casu cluster, contract failures); matched (sketches at equal rank error); spark (Spark "
                               "SQL percentile_approx beside GK/casu); fig7, fig15, eager (§2.4 baseline)"),
    scale: float = typer.Option(None, "--scale", help="fraction of the paper's sizes (2M queries, 5M "
                                "elements); default 0.1"),
    algos: str = typer.Option(None, "--algos", help="comma-separated: casu, csu, su, naive, casu_noclust, "
                              "casu_qcb; default: the preset's set"),
    out: Path = typer.Option(Path("results/quantiles.json"), "--out", help="result JSON; a PNG is written beside it"),
    seed: int = typer.Option(0, "--seed"),
    notify: str = typer.Option("query", "--notify", help="query (an update per query), cluster (cluster / "
                               "cluster_update events), or query,cluster (both, side by side)"),
    repeat: int = typer.Option(3, "--repeat", help="timed runs per configuration, interleaved, after one untimed "
                               "warm-up run (every preset: the median CPU with every sample; fig7/fig15/eager "
                               "report the fastest, the median beside it)"),
) -> None:
    """Massive continuous quantile queries (paper 004, Lin et al.): Figs. 5-14, peers, targets."""
    from ..cliutil import at_least
    from .quantiles import PRESETS, run_preset

    if preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    at_least(repeat, 1, "--repeat")
    run_preset(preset, scale=scale, algos=[a.strip() for a in algos.split(",") if a.strip()] if algos else None,
               out=out, seed=seed, notify=notify, repeat=repeat)


@bench_app.command("engine")
def engine(
    preset: str = typer.Option(..., "--preset", help="tour (vigil gen's defaults: 20,000 trades, 200 queries) | "
                               "mixed (10x: 200,000 trades, 2,000 queries)"),
    scale: float = typer.Option(None, "--scale", help="multiplies the preset's rows and queries (default 1)"),
    repeat: int = typer.Option(3, "--repeat", help="timed runs per configuration, interleaved (after one "
                               "untimed warm-up run)"),
    batch: int = typer.Option(100_000, "--batch", help="elements per Engine.process call (replay's default)"),
    families: str = typer.Option(None, "--families", help="comma-separated subset of threshold, windows, "
                                 "substream, joins, quantiles (default: all)"),
    out: Path = typer.Option(Path("results/engine.json"), "--out", help="result JSON; a PNG is written beside it"),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """The user's path: vigil gen's workload through vigil replay's engine, per family and together,
    operator vs engine time, beside a per-query numpy floor."""
    from ..cliutil import at_least
    from .engine import PRESETS, run_preset

    if preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    at_least(repeat, 1, "--repeat")
    at_least(batch, 1, "--batch")
    run_preset(preset, scale=scale, out=out, repeat=repeat, batch=batch, seed=seed,
               families=[f.strip() for f in families.split(",") if f.strip()] if families else None)


@bench_app.command("pipeline")
def pipeline(
    preset: str = typer.Option(..., "--preset", help="throughput | soak | scaleout"),
    scale: float = typer.Option(None, "--scale", help="workload size factor (default: the preset's)"),
    algos: list[str] = typer.Option(None, "--algo", help="FAMILY=NAME (repeatable)"),
    out: Path = typer.Option(Path("results/pipeline.json"), "--out", help="result JSON; a PNG is written beside it"),
    minutes: float = typer.Option(None, "--minutes", help="soak: how long to run"),
    repeat: int = typer.Option(None, "--repeat", help="throughput: runs per side and point, interleaved, after an "
                               "untimed warm-up (median wall and every CPU/wall sample reported); default 2: the "
                               "mixed workload's 1M-row point takes ~15 min a run at scale 1"),
) -> None:
    """The Spark pipeline end to end: throughput vs in-process replay, a memory soak, and driver vs
    sharded mode on local-cluster with 1, 2 and 4 executors (scaleout)."""
    from ..cliutil import at_least, parse_algos
    from .pipeline import PRESETS, run_preset

    if preset not in PRESETS:
        raise typer.BadParameter(f"unknown preset {preset!r}; expected one of {', '.join(PRESETS)}")
    if repeat is not None:
        at_least(repeat, 1, "--repeat")
    run_preset(preset, scale=scale, algos=parse_algos(algos), out=out, minutes=minutes, repeat=repeat)
