"""The HTTP API is built from routers by resource: no route, lifespan or
handler is registered inside a function (the app factory only assembles), each
function stays small, and the token check exists once."""

from __future__ import annotations

import ast
import pathlib

import curvestream_bridge

BRIDGE = pathlib.Path(next(iter(curvestream_bridge.__path__)))
API = BRIDGE / "api"
MAX_COMPLEXITY = 10


def _api_modules() -> list[pathlib.Path]:
    return sorted(API.glob("*.py")) if API.is_dir() else [BRIDGE / "api.py"]


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _complexity(fn: ast.AST) -> int:
    """McCabe's number, nested functions included: 1 + one per decision."""
    count = 1
    for node in ast.walk(fn):
        if isinstance(node, (ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.Assert,
                             ast.match_case)):
            count += 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
    return count


def test_no_route_or_lifespan_is_registered_inside_a_function():
    found = []
    for path in _api_modules():
        for fn in _functions(ast.parse(path.read_text())):
            for inner in _functions(fn):
                if inner is not fn and inner.decorator_list:
                    found.append(f"{path.name}: {fn.name} defines @{ast.unparse(inner.decorator_list[0])} {inner.name}")
    assert found == [], "routes belong to their resource's router, at module level"


def test_every_function_of_the_api_is_small():
    too_complex = {f"{path.name}:{fn.name}": _complexity(fn)
                   for path in _api_modules() for fn in _functions(ast.parse(path.read_text()))
                   if _complexity(fn) > MAX_COMPLEXITY}
    assert too_complex == {}


def test_the_token_check_is_written_once():
    """Comparing a given token with a configured one happens in one function of the bridge."""
    compares = [f"{p.relative_to(BRIDGE)}" for p in sorted(BRIDGE.rglob("*.py"))
                for n in ast.walk(ast.parse(p.read_text()))
                if isinstance(n, ast.Attribute) and n.attr == "compare_digest"]
    assert compares == ["api/deps.py"]
