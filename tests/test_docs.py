"""The docs cannot drift: docs/queries.md is the rendering of the spec models, every example in it is
a valid query, and the docs, README and sources stand alone (no citation of files outside the
repository, no labels of internal work periods)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vigil import querydoc
from vigil.cli import app
from vigil.specs import SPEC_TYPES, parse_query

ROOT = Path(__file__).resolve().parents[1]


def test_queries_md_is_the_rendered_reference():
    text = (ROOT / "docs" / "queries.md").read_text()
    assert text == querydoc.markdown(), "docs/queries.md is stale: run `python -m vigil.querydoc > docs/queries.md`"


@pytest.mark.parametrize("qtype", list(SPEC_TYPES))
def test_every_type_has_a_valid_example_and_every_field_a_description(qtype):
    example = querydoc.EXAMPLES[qtype]
    assert parse_query(example).type == qtype
    props = SPEC_TYPES[qtype].model_json_schema()["properties"]
    undocumented = [f for f, s in props.items() if f != "type" and not s.get("description")]
    assert not undocumented, f"{qtype}: fields without description= in specs.py: {undocumented}"
    section = querydoc.markdown().split(f"## `{qtype}`")[1].split("\n## ")[0]
    for f in props:
        assert f"| `{f}` |" in section


def test_examples_in_queries_md_validate():
    text = (ROOT / "docs" / "queries.md").read_text()
    blocks = re.findall(r"```json\n(.*?)\n```", text, re.S)
    assert len(blocks) == len(SPEC_TYPES)
    for b in blocks:
        parse_query(json.loads(b))


def test_vigil_schema_prints_json_schema():
    runner = CliRunner()
    r = runner.invoke(app, ["schema", "window_join"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)
    assert s == querydoc.schema("window_join")
    assert {"window", "max_window", "left_range"} <= set(s["properties"])
    r = runner.invoke(app, ["schema"])
    assert r.exit_code == 0
    assert set(json.loads(r.output)["$defs"]) == {m.__name__ for m in SPEC_TYPES.values()}
    r = runner.invoke(app, ["schema", "--markdown"])
    assert r.exit_code == 0 and r.output == querydoc.markdown()
    r = runner.invoke(app, ["schema", "bogus"])
    assert r.exit_code == 2 and "unknown query type 'bogus'" in r.output


FORBIDDEN = [re.compile(re.escape("DESIGN.md")), re.compile(re.escape("../shared")),
             re.compile(r"\b[Ss]essions? [0-9]+"), re.compile(re.escape("target 6a"))]


def _doc_files():
    yield ROOT / "README.md"
    yield from sorted((ROOT / "docs").rglob("*.md"))
    yield from sorted((ROOT / "src" / "vigil").rglob("*.py"))


def test_docs_and_sources_stand_alone():
    """Nothing cites a file outside the repository, and no label of an internal work period."""
    hits = []
    for path in _doc_files():
        for no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            hits += [f"{path.relative_to(ROOT)}:{no}: {pat.pattern}" for pat in FORBIDDEN if pat.search(line)]
    assert not hits, "\n".join(hits)
