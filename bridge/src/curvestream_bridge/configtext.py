"""A run's config value as text, exactly as the page writes it.

The page filters and groups runs by a config value's text: a string as it is,
anything else as ``JSON.stringify`` writes it (``core/groups.ts``,
``configValueText``). The bridge filters and groups the same runs, so it must
write the same text: Python's ``json.dumps`` differs on numbers (``1e-05``
where JavaScript writes ``0.00001``, ``1.0`` where it writes ``1``) and on
spacing.

    >>> [config_text(v) for v in ("a b", 0.1, 1e-05, 1.0, 2e21, -0.0, True, None, [1, 0.5], {"k": "ü"})]
    ['a b', '0.1', '0.00001', '1', '2e+21', '0', 'true', 'null', '[1,0.5]', '{"k":"ü"}']
    >>> group_value({"config": {"lr": 0.001}, "group": ""}, "config:lr"), group_value({"group": ""}, "group")
    ('0.001', None)
"""

from __future__ import annotations

import decimal
import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["config_text", "js_json", "group_value", "group_label", "CONFIG_PREFIX"]

CONFIG_PREFIX = "config:"


def _js_number(x: float) -> str:
    """``Number.prototype.toString`` of a double (ECMA-262 Number::toString): the
    shortest digits that read back (Python's ``repr`` finds the same), placed as
    JavaScript places them."""
    if math.isnan(x) or math.isinf(x):
        return "null"  # what JSON.stringify writes for them
    if x == 0:
        return "0"
    sign, digits, exp = decimal.Decimal(repr(x)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    exp = int(exp) + len(digits) - len(ds)  # trailing zeros moved into the exponent
    k, n = len(ds), int(exp) + len(ds)  # x = 0.ds × 10^n
    if k <= n <= 21:
        text = ds + "0" * (n - k)
    elif 0 < n <= 21:
        text = ds[:n] + "." + ds[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + ds
    else:
        e = n - 1
        text = (ds[0] + ("." + ds[1:] if k > 1 else "")) + ("e+" if e >= 0 else "e-") + str(abs(e))
    return ("-" if sign else "") + text


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` of a value read from JSON."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int):
        return str(value) if abs(value) < 2**53 else _js_number(float(value))
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k), ensure_ascii=False)}:{js_json(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value), ensure_ascii=False)


def config_text(value: Any) -> str:
    """A config value as the page shows and compares it."""
    return value if isinstance(value, str) else js_json(value)


def group_value(run: Mapping[str, Any], group_by: str) -> str | None:
    """What a run (its JSON: ``group``, ``config``) is grouped by, as text; None when it has no such value.
    ``group_by``: ``group`` (the run's group) or ``config:<key>`` (a sweep's parameter)."""
    if group_by == "group":
        return run.get("group") or None
    if group_by.startswith(CONFIG_PREFIX):
        config = run.get("config") or {}
        key = group_by[len(CONFIG_PREFIX):]
        return config_text(config[key]) if isinstance(config, dict) and key in config else None
    return None


def group_label(group_by: str, value: str | None) -> str:
    """A group's name in legends: ``lr=0.1``, ``group=sweep-3``, ``no lr``."""
    name = "group" if group_by == "group" else group_by[len(CONFIG_PREFIX):] if group_by.startswith(CONFIG_PREFIX) \
        else group_by
    return f"no {name}" if value is None else f"{name}={value}"
