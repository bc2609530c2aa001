"""The never-arrows of docs/architecture.md hold: no module of a part reaches a
module of the part it never imports, directly or through others, in the
Python packages' import graph (:func:`test_import_graph.import_graph`) and in
the chart's TypeScript imports."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from test_import_graph import ROOT, import_graph

DOC = ROOT / "docs" / "architecture.md"
TS_SRC = ROOT / "panels" / "echarts-plugin" / "src"


def _within(*packages: str) -> Callable[[str], bool]:
    return lambda m: any(m == p or m.startswith(p + ".") for p in packages)


B = "curvestream_bridge"
INGEST_EDGE = (f"{B}.subscriber", f"{B}.api", f"{B}.replay", f"{B}.parked", f"{B}.clock_skew", f"{B}.decode")

PYTHON_PARTS: dict[str, Callable[[str], bool]] = {
    "client core": lambda m: _within("curvestream")(m) and not _within("curvestream.cli")(m),
    "client": _within("curvestream"),
    "wire": _within("curvestream_wire"),
    "bridge": _within(B),
    "store": _within(f"{B}.store"),
    "alerts": _within(f"{B}.alerts"),
    "store engines": _within(f"{B}.store.duckdb", f"{B}.store.influx"),
    "ingest edge": lambda m: _within(*INGEST_EDGE)(m) or m.startswith(f"{B}.ingest"),  # ingest.py, ingest_*, ingest/
    "M4 core": _within(f"{B}.store.m4"),
}
TS_PARTS: dict[str, Callable[[str], bool]] = {
    "chart core": lambda path: path.startswith("core/"),
    "hosts": lambda path: path.startswith(("page/", "grafana/", "host/")),
}


def documented_never_arrows() -> set[tuple[str, str]]:
    """(part, part it never imports) from the table of docs/architecture.md."""
    text = DOC.read_text()
    table = text[text.index("## Never-arrows"):]
    rows = re.findall(r"^\| ([^|]+?) \| ([^|]+?) \| [^|]+ \|$", table, flags=re.M)
    return {(a, b) for a, b in rows if (a, b) != ("part", "never imports") and not set(a) <= {"-", " "}}


def reach(graph: dict[str, frozenset[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for target in graph.get(todo.pop(), ()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def violations(graph: dict[str, frozenset[str]], source: Callable[[str], bool],
               target: Callable[[str], bool]) -> dict[str, list[str]]:
    """module of the source part -> the modules of the target part it reaches."""
    found = {m: sorted(t for t in reach(graph, m) if target(t)) for m in graph if source(m)}
    return {m: ts for m, ts in found.items() if ts}


_TS_IMPORT = re.compile(
    r"""(?:^|\n)\s*(?:import|export)\b[^'";]*?(?:from\s*)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]"""
)


@functools.cache
def ts_import_graph() -> dict[str, frozenset[str]]:
    """src-relative path (``core/m4.ts``) -> the src files it imports (relative imports only; packages left out)."""
    graph = {}
    for path in TS_SRC.rglob("*.ts"):
        targets = set()
        for m in _TS_IMPORT.finditer(path.read_text(encoding="utf-8")):
            spec = m.group(1) or m.group(2)
            if not spec.startswith("."):
                continue
            base = (path.parent / spec).resolve()
            for candidate in (base.with_name(base.name + ".ts"), base / "index.ts", base):
                if candidate.is_file() and TS_SRC in candidate.parents:
                    targets.add(candidate.relative_to(TS_SRC).as_posix())
                    break
        graph[path.relative_to(TS_SRC).as_posix()] = frozenset(targets)
    return graph


def test_the_documented_never_arrows_are_the_ones_checked():
    assert documented_never_arrows() == {(a, b) for a, b in NEVER_PYTHON} | {("chart core", "hosts")}


NEVER_PYTHON = [("client core", "bridge"), ("bridge", "client"), ("wire", "client"), ("wire", "bridge"),
                ("store", "alerts"), ("store engines", "ingest edge"), ("M4 core", "store engines")]


def test_every_part_names_modules_that_exist():
    graph = import_graph()
    for name, part in PYTHON_PARTS.items():
        assert any(part(m) for m in graph), name
    for name, part in TS_PARTS.items():
        assert any(part(p) for p in ts_import_graph()), name
    assert all(any(_within(e)(m) for m in graph) for e in INGEST_EDGE)


def test_no_python_part_reaches_a_part_it_never_imports():
    graph = import_graph()
    found = {f"{a} -> {b}": violations(graph, PYTHON_PARTS[a], PYTHON_PARTS[b]) for a, b in NEVER_PYTHON}
    assert {arrow: v for arrow, v in found.items() if v} == {}


def test_the_chart_core_reaches_no_host():
    assert violations(ts_import_graph(), TS_PARTS["chart core"], TS_PARTS["hosts"]) == {}


def test_the_checks_see_arrows_where_there_are_some():
    """The same checks on arrows that do exist (the hosts use the core, the CLI starts the bridge, the
    engines use the M4 core), and on a made-up core module importing the page, find them."""
    graph = import_graph()
    assert violations(graph, PYTHON_PARTS["client"], PYTHON_PARTS["bridge"]).keys() == {"curvestream.cli"}
    assert violations(graph, PYTHON_PARTS["store engines"], PYTHON_PARTS["M4 core"])
    assert violations(ts_import_graph(), TS_PARTS["hosts"], TS_PARTS["chart core"])
    assert "core/m4.ts" in ts_import_graph()["page/curveLoading.ts"], "a relative import is resolved"
    made_up = {**ts_import_graph(), "core/x.ts": frozenset({"core/m4.ts", "core/y.ts"}), "core/y.ts":
               frozenset({"page/api.ts"})}
    found = violations(made_up, TS_PARTS["chart core"], TS_PARTS["hosts"])
    assert found.keys() == {"core/x.ts", "core/y.ts"} and all("page/api.ts" in v for v in found.values())
    text = "import type { A } from '../page/api';\nexport * from './m4';\nconst m = await import('../host/zoom');"
    assert [m.group(1) or m.group(2) for m in _TS_IMPORT.finditer(text)] == ["../page/api", "./m4", "../host/zoom"]
