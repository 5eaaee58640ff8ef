"""Command-line helpers shared by ``vigil``'s sub-commands (``vigil.cli``, ``vigil.bench.cli``,
``vigil.pipeline.cli``): a neutral module, so that the commands never import one another.

Errors: a user error (a file that does not exist, a bad option value, ...) is a :class:`UserError`,
raised before any work starts wherever it can be; :class:`VigilGroup` turns it, and every usage
error of the argument parser, into one line on stderr (``vigil <command>: error: <what is wrong>;
<what to do>``) and exit code 2. Any other exception becomes one line too (exit code 1), unless
``vigil --debug`` or ``VIGIL_DEBUG=1`` asks for the traceback."""

from __future__ import annotations

import os
import re
from pathlib import Path

import typer
from typer.core import TyperGroup

try:  # typer >= 0.29 vendors click
    from typer._click import exceptions as _cx
except ImportError:  # pragma: no cover - older typer
    from click import exceptions as _cx

STREAM_SUFFIXES = (".parquet", ".csv", ".jsonl", ".json", ".ndjson")
OUTPUT_SUFFIXES = (".jsonl", ".json", ".ndjson", ".parquet")
OPS_SUFFIXES = (".jsonl", ".json", ".ndjson")


class UserError(Exception):
    """A mistake of the user's: ``str(err)`` says what is wrong and what to do (one line)."""


def debug_wanted(ctx=None) -> bool:
    if os.environ.get("VIGIL_DEBUG", "").strip().lower() not in ("", "0", "false", "no"):
        return True
    while ctx is not None:
        if ctx.params.get("debug"):
            return True
        ctx = ctx.parent
    return False


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class VigilGroup(TyperGroup):
    """The ``vigil`` command group: errors become one line on stderr (see the module doc)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort, KeyboardInterrupt):
            raise
        except _cx.UsageError as e:
            if isinstance(e, getattr(_cx, "NoArgsIsHelpError", ())) or debug_wanted(ctx):
                raise
            path = _vigil(e.ctx.command_path) if e.ctx is not None else _path(ctx)
            _fail(path, f"{e.format_message()} (see '{path} --help')", 2)
        except UserError as e:
            if debug_wanted(ctx):
                raise
            _fail(_path(ctx), str(e), 2)
        except Exception as e:  # a defect, not the user's: one line unless --debug
            if debug_wanted(ctx):
                raise
            _fail(_path(ctx), f"internal error: {type(e).__name__}: {e} (run `vigil --debug ...` or set "
                  "VIGIL_DEBUG=1 for the traceback, and report it)", 1)


def _vigil(command_path: str) -> str:
    """The command as the user types it, whatever the program was called (``python -m``, tests)."""
    return " ".join(["vigil", *command_path.split()[1:]])


def _path(ctx) -> str:
    sub = ctx.invoked_subcommand
    return _vigil(f"{ctx.command_path} {sub}" if sub else ctx.command_path)


def _fail(path: str, msg: str, code: int):
    typer.echo(f"{path}: error: {_one_line(msg)}", err=True)
    raise typer.Exit(code)


# ----------------------------------------------------------------------------- argument checks


def parse_algos(algo: list[str] | None) -> dict[str, str]:
    """``--algo FAMILY=NAME`` options as {family: name}; a bad one is a :class:`UserError` that
    lists the valid names (``vigil algos`` lists them with their papers)."""
    from . import registry

    out: dict[str, str] = {}
    for a in algo or []:
        if "=" not in a:
            raise UserError(f"--algo takes FAMILY=NAME, got {a!r}; families: {', '.join(registry.FAMILIES)} "
                            "(`vigil algos` lists every implementation)")
        fam, name = a.split("=", 1)
        try:
            registry.resolve(fam, name)
        except KeyError as e:
            raise UserError(f"--algo {a}: {e.args[0]} (`vigil algos` lists them with their papers)") from None
        out[fam] = name
    return out


def input_file(path: Path, option: str, suffixes: tuple[str, ...] | None = None) -> Path:
    """An existing, readable regular file (with one of ``suffixes``, if given)."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{option} {path}: no such file; check the path")
    if path.is_dir():
        raise UserError(f"{option} {path}: is a folder, not a file; give a file "
                        "(`vigil run` reads folders)")
    if not os.access(path, os.R_OK):
        raise UserError(f"{option} {path}: not readable (permission denied); fix its permissions")
    if suffixes and path.suffix.lower() not in suffixes:
        raise UserError(f"{option} {path}: unsupported file type {path.suffix or '(no suffix)'!r}; "
                        f"use {', '.join(suffixes)} (rename the file if its content is one of these)")
    return path


def output_file(path: Path, option: str, suffixes: tuple[str, ...] = OUTPUT_SUFFIXES) -> Path:
    """A file that can be written: a supported suffix, not a folder, its folder creatable."""
    path = Path(path)
    if path.suffix.lower() not in suffixes:
        raise UserError(f"{option} {path}: unsupported output format {path.suffix or '(no suffix)'!r}; "
                        f"name the file .jsonl or .parquet")
    if path.is_dir():
        raise UserError(f"{option} {path}: is a folder; give a file name ending in .jsonl or .parquet")
    _writable_dir(path.parent, option, path)
    return path


def output_dir(path: Path, option: str) -> Path:
    """A folder that exists and is writable, or can be created."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise UserError(f"{option} {path}: exists and is not a folder; give a folder")
    _writable_dir(path if path.exists() else path.parent, option, path)
    return path


def _writable_dir(d: Path, option: str, target: Path) -> None:
    d = Path(d) if str(d) else Path(".")
    while not d.exists():  # the nearest existing ancestor must let us create the rest
        d = d.parent
    if not d.is_dir():
        raise UserError(f"{option} {target}: {d} is a file, not a folder; fix the path")
    if not os.access(d, os.W_OK | os.X_OK):
        raise UserError(f"{option} {target}: cannot write in {d} (permission denied); choose another place")


def input_dir(path: Path, option: str, what: str) -> Path:
    path = Path(path)
    if not path.exists():
        raise UserError(f"{option} {path}: no such folder; create it ({what}) or fix the path")
    if not path.is_dir():
        raise UserError(f"{option} {path}: is a file, not a folder; `vigil run` reads every file of a folder "
                        f"({what}); for one file use `vigil replay`")
    if not os.access(path, os.R_OK | os.X_OK):
        raise UserError(f"{option} {path}: not readable (permission denied); fix its permissions")
    return path


def at_least(value: float | None, lo: float, option: str, hint: str = "") -> None:
    if value is not None and value < lo:
        raise UserError(f"{option} must be >= {lo:g}, got {value:g}{'; ' + hint if hint else ''}")


def one_of(value: str, allowed: tuple[str, ...], option: str) -> None:
    if value not in allowed:
        names = ", ".join(allowed[:-1]) + f" or {allowed[-1]}" if len(allowed) > 1 else allowed[0]
        raise UserError(f"{option} takes {names}, got {value!r}")


def epsilon(value: float, option: str = "--quantile-epsilon") -> None:
    if not (0 < value < 1):
        raise UserError(f"{option} must lie in (0, 1), e.g. 0.005; got {value:g}")


def join_history(text: str | None) -> None:
    from .history import parse_horizon

    try:
        parse_horizon(text)
    except ValueError as e:
        raise UserError(f"--join-history: {e}") from None


def read_inputs(stream: Path, queries: Path):
    """(stream table, operation lines, their line numbers) of ``vigil replay``; a file that cannot
    be read as what its suffix says is a :class:`UserError`."""
    import pyarrow as pa

    from .events import read_operation_lines, read_stream

    kind = {".parquet": "Parquet", ".csv": "CSV"}.get(Path(stream).suffix.lower(), "JSON lines")
    try:
        table = read_stream(stream)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise UserError(f"--stream {stream}: cannot read it as {kind} ({_one_line(e)[:200]}); "
                        "check that the file is complete and its suffix matches its content") from None
    try:
        ops, lines = read_operation_lines(queries)
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"--queries {queries}: cannot read it as UTF-8 JSON lines ({_one_line(e)[:200]})") from None
    return table, ops, lines


# ----------------------------------------------------------------------------- vigil algos


def _doc_summary(text: str | None, width: int = 110) -> str:
    """A docstring's first paragraph on one line, without reST markup, cut at ``width``."""
    para = []
    for ln in (text or "").strip().splitlines():
        if not ln.strip() or ln.lstrip().startswith(("* ", "- ", "==")):
            break
        para.append(ln.strip())
    out = re.sub(r":\w+:`~?(?:[\w.]+\.)?([\w]+)`", r"\1", " ".join(para)).replace("``", "")
    out = out.rstrip(":")
    return out if len(out) <= width else out[: width - 1].rsplit(" ", 1)[0] + " ..."


def _table_row(doc: str, name: str) -> str:
    """The row of ``name`` in a reST simple table of ``doc`` (header: ``name  col1  col2 ...``) as
    ``col1 X, col2 Y`` (cells ``-`` left out); "" if there is none."""
    lines = doc.splitlines()
    head = next((ln.split() for ln in lines if ln.split()[:1] == ["name"]), None)
    row = next((ln.split() for ln in lines if ln.split()[:1] == [f"``{name}``"]), None)
    if not head or not row:
        return ""
    return ", ".join(f"{h} {c}" for h, c in zip(head[1:], row[1:], strict=False) if c != "-")


_PAPER = r"(paper \d{3})(?:[^§()]{0,40}?(§\s?\d[\d.]*))?"
_REF = _PAPER + r"|(issue \d+)"


def _section(*texts: str) -> str:
    """Where it comes from: the first ``paper NNN [§X]`` or ``issue N`` of the docstrings' first
    paragraphs, else the first ``paper NNN [§X]`` anywhere in them; ``-`` if none."""
    firsts = [_doc_summary(t, 10**6) for t in texts]
    for t, pat in [(t, _REF) for t in firsts] + [(" ".join((t or "").split()), _PAPER) for t in texts]:
        m = re.search(pat, t)
        if m:
            return m.group(3) if m.lastindex == 3 else m.group(1) + (f" {m.group(2)}" if m.group(2) else "")
    return "-"


def algo_rows() -> list[tuple[str, str, bool, str, str]]:
    """(family, name, is_default, section, summary) of every registered implementation, read from
    the docstrings of its class and module (without importing them: no kernel is compiled)."""
    import ast
    import importlib.util

    from . import registry

    cache: dict[str, ast.Module] = {}
    rows = []
    for fam, impls in registry.IMPLEMENTATIONS.items():
        for name, target in impls.items():
            mod, cls = target.split(":")
            if mod not in cache:
                spec = importlib.util.find_spec(mod)
                cache[mod] = ast.parse(Path(spec.origin).read_text()) if spec and spec.origin else ast.Module([], [])
            tree = cache[mod]
            mdoc = ast.get_docstring(tree) or ""
            cdoc = next((ast.get_docstring(n) or "" for n in tree.body
                         if isinstance(n, ast.ClassDef) and n.name == cls), "")
            summary = (_doc_summary(cdoc) if cdoc and "module doc" not in cdoc
                       else _table_row(mdoc, name) or _doc_summary(mdoc))
            rows.append((fam, name, registry.DEFAULTS.get(fam) == name, _section(cdoc, mdoc), summary))
    return rows


JOIN_HISTORY_HELP = (
    "COLUMN:H keeps the relation rows for joins registered later only within H of the newest COLUMN "
    "value of the same relation (memory O(rows within H)); once rows were dropped, a join needing a new "
    "group must be a window_join on COLUMN with max_window <= H whose kept rows cover its window (others "
    "are rejected with the reason). Default: keep all")
