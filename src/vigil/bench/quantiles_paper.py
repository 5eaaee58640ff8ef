"""``vigil bench quantiles --preset fig7|fig15|eager``: paper 004's remaining experiments.

* fig7 — OQC under query deletions (§5.1, second experiment, Fig. 7): 2M*F queries ((phi, eps_q)
  uniform or Zipf, eps_q in (0, 1) with eps_q < phi, eps = min eps_q as in §5.1), split at random
  into 10 or 20 batches (uni10, uni20, zipf10, zipf20). Batch 1 is inserted; then batch i's queries
  are inserted in random order while batch i-1's are dropped in random order between them (all of
  them by the end of batch i). Before inserting batch i (i >= 3: batch i-1 alive alone), QC_A and
  QC_B cluster the alive queries from scratch; Fig. 7a is the average over these points of
  clusters(QC_A) / clusters(OQC) and clusters(QC_B) / clusters(OQC), Fig. 7b the computation time:
  OQC's for all insertions and deletions, QC_A's and QC_B's summed over the points (what an offline
  algorithm pays to keep its clusters current at the measured points only).
* fig15 — CSU and CASU on a word stream (§5.7, Fig. 15: the paper's Reuters/TDT3 news words, "the
  second set of experiments in Section 5.5", i.e. Fig. 12's query batches dropped like a sliding
  window, uni10, uni20, zipf10, zipf20): the TDT3 archive is not redistributable, so the stream here
  is a synthetic stand-in with its statistics: word ids with Zipf(1.0) frequencies over a vocabulary
  of ``VOCAB`` terms (stop words removed: the ``STOP`` most frequent terms dropped), a term's value
  its position in a random ("alphabetical") order, so the stream has heavy duplicates and the
  quantiles are terms. 2M*F elements, 2M*F queries, eps_q in [0.005, 0.02], eps = 0.005.
* eager — the §2.4 baseline (:class:`vigil.quantiles.naive.Naive`: every notify query re-answered
  by first-hit at every element) beside SU, CSU and CASU: 1M*F semisort elements (Table 1's
  default stream), the paper's 1K, 5K, 10K, 50K, 100K predefined queries (eps_q in [0.005, 0.02],
  eps = 0.005). Like the paper, the summary's maintenance is subtracted (``query_seconds``: CPU
  minus GK alone at eps on the same elements). A run over ``budget`` CPU seconds stops at the end of
  the 100-element chunk that crossed it and is extrapolated (``extra["prefix"]``): the eager
  baseline by its cost model (per element: Q first-hit scans, proportional to the summary's size m,
  traced by GK alone over the whole stream), the others linearly from their last chunk (an upper
  bound: their fires thin out as N grows, Theorem 6).

All in process CPU (``time.process_time``), after an untimed warm-up run (fig7: the whole
sequence; fig15 and eager: a small input that compiles every kernel), ``repeat`` timed runs
interleaved across the algorithms, the fastest kept and the range recorded (every run's CPU
seconds in ``extra.cpu_s_samples``, with ``cpu_s_median``, ``cpu_s_range``, ``repeat``, ``warmed``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ..workloads.quantiles import data_stream, query_batches, query_set
from .common import Result, png_path, print_table, result_doc, sample_fields, write_json

EPS = 0.005
VOCAB = 200_000
STOP = 100
EAGER_QUERIES = (1000, 5000, 10_000, 50_000, 100_000)
CHUNK = 100


def word_stream(n: int, seed: int = 0) -> np.ndarray:
    """float64[n]: term values of a Zipf(1.0) word stream (module doc, fig15)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(STOP + 1, VOCAB + 1)
    value = rng.permutation(VOCAB - STOP).astype(np.float64)  # frequency rank -> value
    return value[rng.choice(VOCAB - STOP, n, p=w / w.sum())]


# ------------------------------------------------------------------------------------------ fig7


def _fig7_sequence(a: np.ndarray, b: np.ndarray, batches: list[np.ndarray], eps: float, seed: int) -> dict[str, Any]:
    """One pass of Fig. 7's experiment: CPU of OQC (all operations) and of QC_A / QC_B (summed over
    the points), and the cluster counts at each point."""
    from ..quantiles.clustering import qc_a, qc_b
    from ..quantiles.oqc import OQC

    rng = np.random.default_rng(seed)
    o = OQC()
    t_oqc = t_a = t_b = 0.0
    points: list[tuple[int, int, int, int]] = []  # (alive, oqc, qc_a, qc_b)
    al, bl = a.tolist(), b.tolist()
    prev: np.ndarray | None = None
    for i, bt in enumerate(batches):
        if i >= 2:  # batch i-1 alive alone
            alive = batches[i - 1]
            t0 = time.process_time()
            ka = len(qc_a(a[alive], b[alive], eps)[1])
            t1 = time.process_time()
            kb = len(qc_b(a[alive], b[alive])[1])
            t2 = time.process_time()
            t_a += t1 - t0
            t_b += t2 - t1
            points.append((len(alive), len(o), ka, kb))
        ins = rng.permutation(bt).tolist()
        drops = [] if prev is None else rng.permutation(prev).tolist()
        cut = (np.arange(1, len(ins) + 1) * len(drops)) // max(1, len(ins))  # drops done after insertion j
        t0 = time.process_time()
        d = 0
        for j, q in enumerate(ins):
            o.register(q, al[q], bl[q])
            while d < cut[j]:
                o.drop(drops[d])
                d += 1
        t_oqc += time.process_time() - t0
        prev = bt
    return {"oqc": t_oqc, "qc_a": t_a, "qc_b": t_b, "points": points}


def run_fig7(f: float, seed: int, repeat: int) -> tuple[list[Result], dict[str, Any]]:
    from ..quantiles.clustering import query_interval

    nq = max(2000, int(2_000_000 * f))
    out: list[Result] = []
    for dist in ("uniform", "zipf"):
        phi, eq = query_set(nq, dist, (1e-4, 1.0), seed)
        eps = float(eq.min())
        a, b = query_interval(phi, eq, eps)
        for k in (10, 20):
            batches = query_batches(nq, k, seed)
            _fig7_sequence(a, b, batches, eps, seed)  # untimed warm-up
            runs = [_fig7_sequence(a, b, batches, eps, seed) for _ in range(repeat)]
            pts = np.array(runs[0]["points"], np.float64)
            ra, rb = pts[:, 2] / pts[:, 1], pts[:, 3] / pts[:, 1]
            pattern = f"{dist[:3]}{k}"
            best = {n: min(r[n] for r in runs) for n in ("oqc", "qc_a", "qc_b")}
            for name in ("oqc", "qc_a", "qc_b"):
                ops = nq * 2 - len(batches[-1]) if name == "oqc" else int(pts[:, 0].sum())
                ex: dict[str, Any] = {
                    "pattern": pattern, "dist": dist, "batches": k, "queries": nq, "eps": eps, "clock": "process_time",
                    "seconds_range": [best[name], max(r[name] for r in runs)], "points": len(pts),
                    "x_oqc_seconds": best[name] / best["oqc"],
                    **sample_fields([r[name] for r in runs], None, warmed=True)}
                if name == "oqc":
                    ex.update(clusters=pts[:, 1].tolist(), alive=pts[:, 0].tolist(), operations="insertions + deletions")
                else:
                    col = 2 if name == "qc_a" else 3
                    ex.update(clusters=pts[:, col].tolist(), avg_ratio_over_oqc=float((ra if name == "qc_a" else rb).mean()),
                              operations="queries re-clustered at the points")
                out.append(Result(f"{name}/{pattern}", best[name], ops, extra=ex))
    return out, {"queries": nq, "eps_q": [1e-4, 1.0], "eps": "min eps_q", "patterns": ["uni10", "uni20", "zip10", "zip20"]}


# ----------------------------------------------------------------------------------------- fig15


def run_fig15(f: float, seed: int, repeat: int, notify: str, hooks: dict[str, Any]) -> tuple[list[Result], dict[str, Any]]:
    run_processing, summary_seconds = hooks["run_processing"], hooks["summary_seconds"]
    n_x = max(2000, int(2_000_000 * f))
    nq = max(1000, int(2_000_000 * f))
    x = word_stream(n_x, seed)
    modes = [m.strip() for m in notify.split(",") if m.strip()]
    wq = query_set(500, "uniform", (0.005, 0.02), seed)
    for a in ("csu", "casu"):  # untimed warm-up: numba compiles (or loads) every kernel
        for md in modes:
            run_processing(a, x[:2000], *wq, drops=query_batches(500, 10, seed), summary_s=1.0, notify=md)
    gk_s = min(_cpu(lambda: summary_seconds(x, EPS)) for _ in range(repeat))
    out: list[Result] = []
    for dist in ("uniform", "zipf"):
        phi, eq = query_set(nq, dist, (0.005, 0.02), seed + 1)
        for k in (10, 20):
            drops = query_batches(nq, k, seed)
            runs: dict[str, list[Result]] = {}
            for _ in range(repeat):
                for a in ("csu", "casu"):
                    for md in modes:
                        lab = f"{a}:cluster" if md == "cluster" else a
                        runs.setdefault(lab, []).append(run_processing(a, x, phi, eq, drops=drops, summary_s=gk_s,
                                                                       notify=md, clock=time.process_time))
            pattern = f"{dist[:3]}{k}"
            for lab, rs in runs.items():
                r = min(rs, key=lambda r: r.seconds)
                r.extra.pop("curve", None)
                r.extra.update(pattern=pattern, stream="words", clock="process_time",
                               seconds_range=[r.seconds, max(o.seconds for o in rs)],
                               **sample_fields([o.seconds for o in rs], None, warmed=True))
                r.algo = f"{lab}/{pattern}"
                out.append(r)
            base = {r.algo.split("/")[0]: r.seconds for r in out[-len(runs):]}
            for r in out[-len(runs):]:
                r.extra["x_casu"] = r.seconds / base["casu:cluster" if r.algo.startswith(("casu:c", "csu:c")) else "casu"]
    return out, {"elements": n_x, "queries": nq, "eps": EPS, "stream": f"Zipf(1.0) words, vocabulary {VOCAB:,} "
                 f"minus the {STOP} most frequent, values in a random order (stand-in for TDT3)",
                 "distinct_values": int(np.unique(x).size), "summary_seconds": gk_s}


def _cpu(fn) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


# ----------------------------------------------------------------------------------------- eager


def _gk_trace(x: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """GK alone at eps over x in chunks of CHUNK: cumulative CPU and summary size after each."""
    from ..quantiles.gk import GKSummary

    g = GKSummary(eps)
    cpu, m = [], []
    c = 0.0
    for p in range(0, len(x), CHUNK):
        t0 = time.process_time()
        g.insert(x[p:p + CHUNK])
        c += time.process_time() - t0
        cpu.append(c)
        m.append(g.m)
    return np.array(cpu), np.array(m, np.float64)


def _run_budget(make_op, algo: str, x: np.ndarray, phi: np.ndarray, eq: np.ndarray, budget: float,
                stop: int | None) -> tuple[float, int, int, dict[str, int], list[float]]:
    """(CPU s, elements pushed, update events, stats, CPU of each chunk): predefined notify
    queries, chunks of CHUNK, stopping after the chunk that crosses ``budget`` (or at ``stop``)."""
    op = make_op(algo, EPS)
    op.register_many(np.arange(len(phi), dtype=np.int64), phi, eq, 0, notify=True)
    for ep in op.epochs.values():
        ep.flush()
    end = len(x) if stop is None else stop
    events, p, chunks = 0, 0, []
    t0 = time.process_time()
    while p < end:
        c0 = time.process_time()
        events += len(op.push(x[p:p + CHUNK], np.arange(p + 1, min(p + CHUNK, len(x)) + 1, dtype=np.int64))[0])
        p = min(p + CHUNK, len(x))
        chunks.append(time.process_time() - c0)
        if stop is None and time.process_time() - t0 > budget:
            break
    return time.process_time() - t0, p, events, {k: int(op.stats.get(k, 0)) for k in ("fires", "evaluations")}, chunks


def run_eager(f: float, seed: int, repeat: int, budget: float, queries: tuple[int, ...], hooks: dict[str, Any]) -> tuple[list[Result], dict[str, Any]]:
    n = max(10 * CHUNK, int(1_000_000 * f) // CHUNK * CHUNK)
    x = data_stream("semisort", n, seed)
    algos = ("naive", "su", "csu", "casu")
    wq = query_set(200, "uniform", (0.005, 0.02), seed + 1)
    for a in algos:  # untimed warm-up: numba compiles (or loads) every kernel
        _run_budget(hooks["op"], a, x[:2 * CHUNK], *wq, budget, None)
    gk_cpu, gk_m = min((_gk_trace(x, EPS) for _ in range(repeat)), key=lambda t: t[0][-1])
    out: list[Result] = []
    for nq in queries:
        phi, eq = query_set(nq, "uniform", (0.005, 0.02), seed + 1)
        runs: dict[str, list[tuple]] = {}
        stop: dict[str, int | None] = dict.fromkeys(algos)
        for _ in range(repeat):
            for a in algos:
                r = _run_budget(hooks["op"], a, x, phi, eq, budget, stop[a])
                stop[a] = r[1]  # later repetitions push the same prefix
                runs.setdefault(a, []).append(r)
        for a in algos:
            secs, p, events, stats, chunks = min(runs[a], key=lambda r: r[0])
            ex: dict[str, Any] = {"queries": nq, "point": {"queries": nq}, "stream": "semisort", "clock": "process_time",
                                  "update_events": events, **stats, "seconds_range": [secs, max(r[0] for r in runs[a])],
                                  "summary_seconds": float(gk_cpu[p // CHUNK - 1]),
                                  **sample_fields([r[0] for r in runs[a]], None, warmed=True)}
            est = secs
            if p < n:
                k = p // CHUNK
                j = max(0, k - 10)  # the last (up to) 10 chunks measured
                last = float(np.sum(chunks[j:k]))
                if a == "naive":  # per element: Q first-hit scans ~ m; the rest by GK's traced m
                    gk_jk = gk_cpu[k - 1] - (gk_cpu[j - 1] if j else 0.0)
                    q_per_m = max(0.0, last - gk_jk) / gk_m[j:k].sum()
                    est = secs + q_per_m * gk_m[k:].sum() + (gk_cpu[-1] - gk_cpu[k - 1])
                    how = "measured + the last chunks' query CPU per summary tuple x the summary sizes of the rest (GK trace)"
                else:
                    est = secs + last / (k - j) * (n - p) / CHUNK
                    how = "measured + the last chunks' CPU per element x the rest (upper bound: fires thin out)"
                ex.update(prefix=p, measured_seconds=secs, extrapolation=how)
            ex["query_seconds"] = est - float(gk_cpu[-1])
            out.append(Result(a, est, n, extra=ex))
        base = out[-1].extra["query_seconds"]
        for r in out[-len(algos):]:
            r.extra["x_casu_query_seconds"] = r.extra["query_seconds"] / base if base > 0 else None
    return out, {"elements": n, "queries": list(queries), "eps": EPS, "budget_cpu_seconds": budget,
                 "summary_seconds": float(gk_cpu[-1]), "summary_tuples_final": int(gk_m[-1])}


# ------------------------------------------------------------------------------------- the preset


def run_paper_preset(preset: str, scale: float | None, out: str | Path, seed: int, notify: str, hooks: dict[str, Any],
                     repeat: int = 2, budget: float = 10.0, queries: tuple[int, ...] = EAGER_QUERIES) -> dict[str, Any]:
    """``hooks``: run_processing, summary_seconds and op (the operator factory) of :mod:`.quantiles`,
    passed in by it (this module does not import it)."""
    f = {"fig7": 0.1, "fig15": 0.01, "eager": 0.1}[preset] if scale is None else float(scale)
    if preset == "fig7":
        results, params = run_fig7(f, seed, repeat)
    elif preset == "fig15":
        results, params = run_fig15(f, seed, repeat, notify, hooks)
    else:
        results, params = run_eager(f, seed, repeat, budget, queries, hooks)
    params.update(scale=f, repeat=repeat, notify=notify if preset == "fig15" else None)
    doc = result_doc("quantiles", preset, params, results)
    p = write_json(out, doc)
    print_table(doc, reference="casu" if preset == "eager" else results[0].algo)
    for r in results:
        e = r.extra
        keys = ("avg_ratio_over_oqc", "x_oqc_seconds", "x_casu", "query_seconds", "x_casu_query_seconds", "prefix",
                "fires", "update_events", "messages")
        print(f"{r.algo:22s} {r.seconds:10.3f} s  " + "  ".join(f"{k} {e[k]:.4g}" if isinstance(e[k], float)
                                                               else f"{k} {e[k]}" for k in keys if k in e))
    try:
        plot_paper(doc, png_path(out))
    except Exception as e:  # noqa: BLE001 - a plot must not lose the results
        print(f"plot skipped: {e}")
    print(f"wrote {p}")
    return doc


def plot_paper(doc: dict[str, Any], path: Path) -> None:
    """fig7: average cluster ratio and CPU per pattern; fig15: CPU and messages per algorithm and
    pattern; eager: query CPU (summary subtracted) against the number of queries, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res = doc["results"]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=80)
    if doc["preset"] == "eager":
        for algo in dict.fromkeys(r["algo"] for r in res):
            rs = [r for r in res if r["algo"] == algo]
            xs = [r["extra"]["queries"] for r in rs]
            a.plot(xs, [max(r["extra"]["query_seconds"], 1e-4) for r in rs], "o-", label=algo)
            b.plot(xs, [r["extra"]["update_events"] for r in rs], "o-", label=algo)
        for ax, lab in ((a, "query CPU s (summary subtracted; prefix runs extrapolated)"), (b, "update events (measured part)")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("predefined notify queries")
            ax.set_ylabel(lab)
            ax.legend()
    else:
        names = [r["algo"] for r in res]
        y = np.arange(len(res))
        a.barh(y, [r["seconds"] for r in res], color="C0")
        a.set_xscale("log")
        a.set_xlabel("CPU seconds")
        if doc["preset"] == "fig7":
            b.barh(y, [r["extra"].get("avg_ratio_over_oqc", 1.0) for r in res], color="C2")
            b.set_xlabel("average clusters / OQC's clusters (Fig. 7a)")
        else:
            b.barh(y, [r["extra"]["paper_messages"] for r in res], color="C2")
            b.set_xscale("log")
            b.set_xlabel("cluster re-evaluations (the paper's message number)")
        for ax in (a, b):
            ax.set_yticks(y, names)
            ax.invert_yaxis()
    fig.suptitle(f"quantiles / {doc['preset']} ({doc['machine']['date'][:16]}, {doc['machine']['git_commit']})")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
