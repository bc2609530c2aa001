"""The examples in the modules' docstrings hold (they document the formats)."""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import curvestream_wire

import curvestream
import curvestream_bridge


def _modules() -> list[str]:
    names = []
    for package in (curvestream_wire, curvestream, curvestream_bridge):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".v1." not in info.name and not info.name.endswith(".v1"):
                names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize(
    "name", [n for n in _modules() if ">>>" in (importlib.util.find_spec(n).loader.get_source(n) or "")]
)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
