"""Every user error of the CLI is one line on stderr saying what is wrong and what to do, exit
code 2, found before any work starts (for `vigil run`: before Spark starts; these tests make
starting Spark, or processing a single element, fail loudly). No traceback unless --debug."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from vigil import registry
from vigil.cli import app
from vigil.events import read_outputs

OPS = [{"op": "register", "at": 0, "query": {"id": "w", "type": "window_aggregate", "agg": "sum",
                                            "column": "price", "rows": [2, 0]}},
       {"op": "lookup", "at": 3, "id": "w"}]


@pytest.fixture
def files(tmp_path, monkeypatch):
    """A good stream and queries file; no engine batch and no Spark session may start."""
    from vigil.engine import Engine
    from vigil.pipeline import driver, session

    def no_work(*a, **k):
        raise AssertionError("work started before the arguments were checked")

    monkeypatch.setattr(Engine, "process", no_work)
    monkeypatch.setattr(session, "get_session", no_work)
    monkeypatch.setattr(driver, "run", no_work)
    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"price": [1.0, 2.0, 3.0]}), "s.parquet")
    with open("q.jsonl", "w") as f:
        f.write("".join(json.dumps(o) + "\n" for o in OPS))
    return tmp_path


def one_line_error(args: list[str], code: int = 2, env: dict | None = None) -> str:
    r = CliRunner().invoke(app, args, env=env)
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == code, (r.exit_code, r.output, r.exception)
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.output and "│" not in r.output, r.output
    assert ": error: " in lines[0], lines[0]
    return lines[0]


REPLAY = ["replay", "--stream", "s.parquet", "--queries", "q.jsonl", "--out", "o.jsonl", "--quiet"]


def _with(args: list[str], **repl: str) -> list[str]:
    out = list(args)
    for k, v in repl.items():
        out[out.index("--" + k) + 1] = v
    return out


@pytest.mark.parametrize("case,args,words", [
    ("missing stream", _with(REPLAY, stream="nope.parquet"), ["--stream nope.parquet", "no such file"]),
    ("missing queries", _with(REPLAY, queries="nope.jsonl"), ["--queries nope.jsonl", "no such file"]),
    ("txt stream", _with(REPLAY, stream="s.txt"), ["'.txt'", ".parquet, .csv, .jsonl"]),
    ("stream is a folder", _with(REPLAY, stream="d.parquet"), ["is a folder"]),
    ("0-byte parquet", _with(REPLAY, stream="zero.parquet"), ["cannot read it as Parquet"]),
    ("batch 0", REPLAY + ["--batch", "0"], ["--batch must be >= 1, got 0"]),
    ("batch -5", REPLAY + ["--batch", "-5"], ["--batch must be >= 1, got -5"]),
    ("batch not a number", REPLAY + ["--batch", "x"], ["--batch", "integer"]),
    ("csv output", _with(REPLAY, out="o.csv"), ["--out o.csv", ".jsonl or .parquet"]),
    ("output in a file", _with(REPLAY, out="s.parquet/o.jsonl"), ["s.parquet is a file"]),
    ("unknown algo", REPLAY + ["--algo", "threshold=bogus"], ["'bogus'", "'dt'", "vigil algos"]),
    ("algo without =", REPLAY + ["--algo", "dt"], ["FAMILY=NAME", "threshold"]),
    ("bad epsilon", REPLAY + ["--quantile-epsilon", "0"], ["--quantile-epsilon", "(0, 1)"]),
    ("bad join output", REPLAY + ["--join-output", "all"], ["--join-output takes pairs or affected"]),
    ("bad join history", REPLAY + ["--join-history", "ts"], ["--join-history", "COLUMN:H"]),
    ("missing option", REPLAY[:3] + REPLAY[5:], ["Missing option '--queries'"]),
    ("unknown command", ["replai"], ["No such command", "replay"]),
])
def test_replay_user_errors_are_one_line_before_any_work(files, case, args, words):
    (files / "s.txt").write_text("price\n1\n")
    (files / "d.parquet").mkdir()
    (files / "zero.parquet").write_bytes(b"")
    line = one_line_error(args)
    assert line.startswith("vigil"), line
    for w in words:
        assert w in line, (case, line)
    assert not (files / "o.jsonl").exists() and not (files / "o.csv").exists()


RUN = ["run", "--stream", "sd", "--queries", "qd", "--out", "out", "--checkpoint", "ck", "--format", "json"]


@pytest.mark.parametrize("case,args,words", [
    ("missing stream folder", _with(RUN, stream="nowhere"), ["--stream nowhere", "no such folder"]),
    ("stream is a file", _with(RUN, stream="s.parquet"), ["is a file, not a folder", "vigil replay"]),
    ("no stream", RUN[:1] + RUN[3:], ["--stream DIR is required"]),
    ("empty stream folder", _with(RUN, stream="empty"), ["no json files", "--schema"]),
    ("files of another format", RUN[:-1] + ["parquet"], ["no parquet files", "--format json"]),
    ("missing queries folder", _with(RUN, queries="noq"), ["--queries noq", "no such folder"]),
    ("trigger soon", RUN + ["--trigger", "soon"], ["--trigger", "'soon'", "10 seconds"]),
    ("unknown format", RUN[:-1] + ["xml"], ["--format takes parquet, json, csv or kafka"]),
    ("unknown mode", RUN + ["--mode", "cluster"], ["--mode takes driver or sharded"]),
    ("shards 0", RUN + ["--mode", "sharded", "--shards", "0"], ["--shards must be >= 1"]),
    ("max files 0", RUN + ["--max-files-per-batch", "0"], ["--max-files-per-batch must be >= 1"]),
    ("timeout 0", RUN + ["--timeout", "0"], ["--timeout must be > 0"]),
    ("bad algo", RUN + ["--algo", "joins=nope"], ["'nope'", "vigil algos"]),
    ("bad source option", RUN + ["--option", "x"], ["--option takes KEY=VALUE"]),
    ("out is a file", _with(RUN, out="s.parquet"), ["--out s.parquet", "not a folder"]),
])
def test_run_user_errors_are_one_line_before_spark_starts(files, case, args, words):
    for d in ("sd", "qd", "empty"):
        (files / d).mkdir()
    (files / "sd" / "part-0.jsonl").write_text('{"price": 1.0}\n')
    line = one_line_error(args)
    assert line.startswith("vigil run: error: "), line
    for w in words:
        assert w in line, (case, line)
    assert not (files / "out").exists() and not (files / "ck").exists()  # nothing created


def test_debug_shows_the_traceback(files):
    args = _with(REPLAY, stream="nope.parquet")
    for how in (["--debug"], []):
        r = CliRunner().invoke(app, how + args, env={} if how else {"VIGIL_DEBUG": "1"})
        assert r.exit_code != 0 and type(r.exception).__name__ == "UserError", (r.output, r.exception)


def test_an_internal_error_is_one_line_with_exit_code_1(files, monkeypatch):
    from vigil.engine import Engine

    def boom(self, batch):
        raise RuntimeError("boom")

    monkeypatch.setattr(Engine, "process", boom)
    line = one_line_error(REPLAY, code=1)
    assert "internal error: RuntimeError: boom" in line and "--debug" in line


def test_empty_csv_is_an_empty_stream(tmp_path):
    (tmp_path / "empty.csv").write_bytes(b"")
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(o) + "\n" for o in OPS))
    r = CliRunner().invoke(app, ["replay", "--stream", str(tmp_path / "empty.csv"), "--queries",
                                 str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert r.exit_code == 0, r.output
    assert read_outputs(tmp_path / "o.jsonl") == [{"event": "answer", "id": "w", "at": 3, "value": None}]


def test_malformed_operation_lines_are_rejected_with_their_file_line_number(tmp_path):
    pq.write_table(pa.table({"price": [1.0, 2.0, 3.0]}), tmp_path / "s.parquet")
    lines = [json.dumps(OPS[0]), "", '{"op": "register", "at": 0', "   ", json.dumps({"op": "explode", "at": 1}),
             json.dumps(OPS[1]), "[1, 2]"]
    (tmp_path / "q.jsonl").write_text("\n".join(lines) + "\n")
    r = CliRunner().invoke(app, ["replay", "--stream", str(tmp_path / "s.parquet"), "--queries",
                                 str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert r.exit_code == 0, r.output
    got = read_outputs(tmp_path / "o.jsonl")
    rej = [e["reason"] for e in got if e["event"] == "rejected"]
    assert [x.split(":")[0] for x in rej] == ["line 3", "line 5", "line 7"], rej
    assert "malformed JSON" in rej[0] and "line 1 column" not in rej[0]  # (the JSON decoder's own line)
    assert "unknown operation 'explode'" in rej[1]
    assert [e for e in got if e["event"] == "answer"] == [{"event": "answer", "id": "w", "at": 3, "value": 5}]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_nan_has_one_reason_in_every_format(tmp_path, fmt):
    """The same NaN reads 'NaN or infinite' in a CSV too (as in `vigil run`), not 'is null'."""
    s = tmp_path / f"s.{fmt}"
    if fmt == "csv":
        s.write_text("price,sym\n1.5,A\nNaN,B\n,C\n2.5,NA\n")
    elif fmt == "jsonl":
        s.write_text('{"price": 1.5, "sym": "A"}\n{"price": NaN, "sym": "B"}\n{"price": null, "sym": "C"}\n'
                     '{"price": 2.5, "sym": "NA"}\n')
    else:
        pq.write_table(pa.table({"price": [1.5, float("nan"), None, 2.5], "sym": ["A", "B", "C", "NA"]}), s)
    (tmp_path / "q.jsonl").write_text(json.dumps(OPS[0]) + "\n")
    r = CliRunner().invoke(app, ["replay", "--stream", str(s), "--queries", str(tmp_path / "q.jsonl"),
                                 "--out", str(tmp_path / "o.jsonl"), "--quiet"])
    assert r.exit_code == 0, r.output
    rej = {e["at"]: e["reason"] for e in read_outputs(tmp_path / "o.jsonl") if e["event"] == "rejected"}
    assert rej == {2: "column 'price' is NaN or infinite", 3: "column 'price' is null"}


def test_algos_lists_every_implementation_with_its_paper():
    r = CliRunner().invoke(app, ["algos"], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    for fam, impls in registry.IMPLEMENTATIONS.items():
        for name in impls:
            assert any(fam in ln and f" {name} " in ln for ln in r.stdout.splitlines()), (fam, name)
    assert "paper 000 §3.1" in r.stdout and "paper 004 §3.5.2" in r.stdout and "paper 003" in r.stdout
