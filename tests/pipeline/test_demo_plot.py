"""The demo's picture without Spark: one panel per family (cumulative outputs per kind, linear
scale, labelled by what the events are), one of elements/s per micro-batch."""

import matplotlib

matplotlib.use("Agg")

from vigil.pipeline.demo import KIND_LABEL, plot_outputs  # noqa: E402


def test_plot_outputs_labels_and_panels(tmp_path, monkeypatch):
    import matplotlib.figure

    saved = {}
    real = matplotlib.figure.Figure.savefig

    def keep(fig, path, **kw):
        saved["fig"] = fig
        return real(fig, path, **kw)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    events = ([{"event": "matured", "id": "t1", "at": a} for a in (5, 40)]
              + [{"event": "join", "id": "j1", "at": a} for a in range(50, 90)]
              + [{"event": "late", "id": "t1", "at": 3}])
    fam = {"t1": "threshold", "j1": "joins", "w1": "windows"}
    metrics = [{"batch": 0, "rows_in": 50, "latency_s": 0.5, "elements_per_s": 100.0, "position": 50},
               {"batch": 1, "rows_in": 50, "latency_s": 0.25, "elements_per_s": 200.0, "position": 100},
               {"batch": 2, "final": True, "rows_in": 0, "latency_s": 0.0, "elements_per_s": 0.0}]
    path = tmp_path / "outputs.png"
    plot_outputs(events, fam, 100, metrics, path, title="t", families=["threshold", "windows", "joins"])
    assert path.stat().st_size > 5000
    axes = saved["fig"].axes
    assert len(axes) == 4
    legends = [[t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else [] for ax in axes]
    assert legends[0] == [f"{KIND_LABEL['matured']}: 2"]  # the late notice is not an output
    assert legends[1] == [] and "no outputs" in [t.get_text() for t in axes[1].texts]
    assert legends[2] == ["join pairs: 40"]  # join pairs are not called alerts
    assert axes[0].get_yscale() == "linear"
    line = axes[2].get_lines()[-1]
    assert line.get_ydata()[-1] == 40 and min(line.get_ydata()) == 0  # cumulative from 0, no floor
    bars = [p.get_height() for p in axes[3].patches]
    assert bars == [100.0, 200.0]  # the final batch is not a micro-batch of the stream
