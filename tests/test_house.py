"""The house rules of DESIGN.md, checked on the source tree: no import cycle in ``src/vigil``
(module-level and function-level imports alike), no family package importing another family
package, algorithms knowing nothing of Spark, no module over ~600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "vigil"
FAMILIES = ("threshold", "windows", "joins", "quantiles")
MAX_LINES = 620  # "no module over ~600 lines"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in SRC.rglob("*.py"):
        parts = list(p.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def _imports(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = pkg.split(".")
                up = up[: len(up) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        for t in targets:
            while t and t not in mods:  # the deepest module of vigil it names
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def _graph() -> dict[str, set[str]]:
    mods = _modules()
    return {m: _imports(m, p, mods) for m, p in mods.items()}


def test_no_import_cycle():
    mods = _modules()
    g = {m: {d for d in deps if not (mods[m].name == "__init__.py" and d.startswith(m + "."))}
         for m, deps in _graph().items()}
    # a package's __init__ importing its own submodules is not a cycle of concern; edges from a
    # module to the package that contains it (its __init__) are
    color: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(m: str) -> None:
        color[m] = 1
        stack.append(m)
        for n in sorted(g.get(m, ())):
            if color.get(n, 0) == 0:
                visit(n)
            elif color[n] == 1:
                cycles.append(stack[stack.index(n):] + [n])
        stack.pop()
        color[m] = 2

    for m in sorted(g):
        if color.get(m, 0) == 0:
            visit(m)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles[:5])


def test_no_family_imports_another():
    bad = []
    for m, deps in _graph().items():
        parts = m.split(".")
        if len(parts) > 1 and parts[1] in FAMILIES:
            for d in deps:
                dp = d.split(".")
                if len(dp) > 1 and dp[1] in FAMILIES and dp[1] != parts[1]:
                    bad.append(f"{m} imports {d}")
    assert not bad, bad


def test_algorithms_know_nothing_of_spark():
    bad = []
    g = _graph()
    for m, p in _modules().items():
        parts = m.split(".")
        if len(parts) > 1 and parts[1] in FAMILIES + ("engine", "group", "arrays", "specs"):
            spark = any(
                a.name.startswith("pyspark") for node in ast.walk(ast.parse(p.read_text()))
                if isinstance(node, ast.Import | ast.ImportFrom)
                for a in ([ast.alias(node.module or "")] if isinstance(node, ast.ImportFrom) else node.names)
            )
            if spark or any(d.startswith("vigil.pipeline") for d in g[m]):
                bad.append(m)
    assert not bad, bad


def test_no_module_over_600_lines():
    big = {m: n for m, p in _modules().items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not big, big
