"""The import graph of the three packages (curvestream_wire, curvestream,
curvestream_bridge) has no cycle.

An edge is an import that runs: at module level or inside a function (a lazy
import closes a cycle as surely as an eager one, only later). Imports under
``if TYPE_CHECKING:`` are annotations and are left out. ``from a import b``
points at the module ``a.b`` when there is one, else at ``a``.
"""

from __future__ import annotations

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = {"curvestream_wire": ROOT / "proto" / "src", "curvestream": ROOT / "client" / "src",
            "curvestream_bridge": ROOT / "bridge" / "src"}


def modules() -> dict[str, pathlib.Path]:
    found = {}
    for package, src in PACKAGES.items():
        for path in (src / package).rglob("*.py"):
            parts = list(path.relative_to(src).with_suffix("").parts)
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import node outside ``if TYPE_CHECKING:`` bodies."""
    found, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            children = node.orelse
        todo.extend(children)
    return found


@functools.cache
def import_graph() -> dict[str, frozenset[str]]:
    """module -> the modules of the three packages it imports."""
    mods = modules()

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, frozenset[str]] = {}
    for module, path in mods.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets = set()
        for node in _runtime_imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(owner(a.name) for a in node.names)
                continue
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets.update(f"{base}.{a.name}" if f"{base}.{a.name}" in mods else owner(base) for a in node.names)
        graph[module] = frozenset(t for t in targets if t is not None and t != module)
    return graph


def cycles(graph: dict[str, frozenset[str]] | dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_lazy_imports_and_the_modules_of_each_package():
    graph = import_graph()
    assert {"curvestream_wire.topics", "curvestream.run", "curvestream_bridge.service"} <= graph.keys()
    assert "curvestream_bridge.service" in graph["curvestream_bridge.cli"]
    assert "curvestream_bridge.grafana_sync" in graph["curvestream_bridge.cli"], "an import inside a function"
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle_in_the_three_packages():
    assert cycles(import_graph()) == []
