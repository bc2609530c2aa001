"""What the Grafana kit's tests share: the repository's paths, Docker Compose's
variable interpolation, Grafana's template and macro substitution, and the Flux
checker (InfluxData's flux-lsp, run by Node).

Grafana substitutes in two places, and the helpers follow the same order:

1. the browser replaces dashboard variables. Every query here uses
   ``${name:regex}``: each value regex-escaped (``escapeRegex`` of
   @grafana/data), several values as ``(a|b)``, a custom "All" value as is;
2. the data source's backend replaces its macros: for InfluxQL ``$timeFilter``
   (``time >= <from>ms and time <= <to>ms``) and ``$__interval`` (``10s``,
   ``1m``); for Flux ``v.timeRangeStart``/``v.timeRangeStop`` (RFC 3339),
   ``v.windowPeriod`` (a Go duration such as ``1m0s``), ``v.defaultBucket`` and
   ``v.organization`` (quoted strings).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

REPO = pathlib.Path(__file__).resolve().parents[2]
COMPOSE_DIR = REPO / "compose"
GRAFANA_DIR = REPO / "grafana"
QUERIES_DIR = GRAFANA_DIR / "queries"
PROVISIONING_DIR = GRAFANA_DIR / "provisioning"
CHECKS_DIR = pathlib.Path(__file__).resolve().parent  # package.json of the Flux checker

FLAVOURS = ("flux", "influxql")

VariableValue = str | Sequence[str]


# --------------------------------------------------------------------------- the query library
def query_library() -> dict[str, dict[str, str]]:
    """``{name: {"flux": text, "influxql": text}}`` from grafana/queries/."""
    library: dict[str, dict[str, str]] = {}
    for path in sorted(QUERIES_DIR.iterdir()):
        if path.suffix.lstrip(".") in FLAVOURS:
            library.setdefault(path.stem, {})[path.suffix.lstrip(".")] = path.read_text(encoding="utf-8").strip()
    return library


# --------------------------------------------------------------------------- Docker Compose
def read_env_file(path: pathlib.Path) -> dict[str, str]:
    """KEY=VALUE lines as Compose reads a .env file (comments and blank lines skipped)."""
    env: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ValueError(f"{path}: not KEY=VALUE: {line!r}")
        env[key.strip()] = value.strip().strip("'\"")
    return env


_COMPOSE_VAR = re.compile(r"\$(?:(?P<escaped>\$)|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?])?(?P<arg>[^}]*)\}"
                          r"|(?P<plain>[A-Za-z_][A-Za-z0-9_]*))")


def compose_variables(text: str) -> set[str]:
    """Names of the variables a Compose file interpolates."""
    return {m.group("braced") or m.group("plain") for m in _COMPOSE_VAR.finditer(text) if not m.group("escaped")}


def compose_interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Compose's interpolation of every string in a parsed file: ``$$``, ``$VAR``,
    ``${VAR}``, ``${VAR:-default}``, ``${VAR-default}``, ``${VAR:?error}``, ``${VAR?error}``."""
    if isinstance(value, dict):
        return {k: compose_interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [compose_interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        if m.group("escaped"):
            return "$"
        name = m.group("braced") or m.group("plain")
        op, arg = m.group("op") or "", m.group("arg") or ""
        present = name in env
        current = env.get(name, "")
        if op in (":-", "-"):
            use_default = not current if op == ":-" else not present
            return arg if use_default else current
        if op in (":?", "?"):
            missing = not current if op == ":?" else not present
            if missing:
                raise ValueError(f"required variable {name} is missing: {arg}")
            return current
        return current

    return _COMPOSE_VAR.sub(one, value)


# --------------------------------------------------------------------------- Grafana: variables
_GRAFANA_ESCAPE = re.compile(r"[\\^$*+?.()|\[\]{}/]")
_TEMPLATE_VAR = re.compile(r"\$(\w+)|\$\{(\w+)(?:\.[^}:]*)?(?::(\w+))?\}|\[\[(\w+)(?::(\w+))?\]\]")


def escape_regex(value: str) -> str:
    """@grafana/data's escapeRegex: a backslash before ``\\ ^ $ * + ? . ( ) | [ ] { } /``."""
    return _GRAFANA_ESCAPE.sub(lambda m: "\\" + m.group(0), value)


def format_regex(value: VariableValue) -> str:
    """Grafana's ``:regex`` format."""
    if isinstance(value, str):
        return escape_regex(value)
    escaped = [escape_regex(v) for v in value]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


ALL = object()  # a variable set to "All"


MACROS = frozenset({"timeFilter", "interval"})  # replaced by the InfluxQL backend, not dashboard variables


def referenced_variables(text: str) -> set[str]:
    """Names of the dashboard variables a text refers to (Grafana's ``__`` names and macros left out)."""
    names = set()
    for m in _TEMPLATE_VAR.finditer(text):
        name = m.group(1) or m.group(2) or m.group(4)
        if not name.startswith("__") and name not in MACROS:
            names.add(name)
    return names


def interpolate_variables(query: str, values: Mapping[str, Any], all_values: Mapping[str, str] | None = None) -> str:
    """Replace dashboard variables as Grafana's browser code does. ``values[name]`` is a
    string, a list of strings, or :data:`ALL` (sent as the variable's custom all value,
    unescaped). The queries here use only ``${name:regex}``: another form of a variable,
    or a variable without a value, is an error; macros are left for the backend."""
    all_values = all_values or {}

    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(4)
        if name.startswith("__") or name in MACROS:
            return m.group(0)
        if name not in values:
            raise KeyError(f"no value for dashboard variable {name!r}")
        if m.group(2) is None or m.group(3) != "regex":
            raise ValueError(f"unexpected variable syntax {m.group(0)!r}: use ${{{name}:regex}}")
        value = values[name]
        if value is ALL:
            return all_values[name]
        return format_regex(value)

    return _TEMPLATE_VAR.sub(one, query)


# --------------------------------------------------------------------------- Grafana: intervals
_ROUND_MS = [  # gtime.RoundInterval: (up to this many ms, use this interval)
    (10, 1), (15, 10), (35, 20), (75, 50), (150, 100), (350, 200), (750, 500), (1_500, 1_000), (3_500, 2_000),
    (7_500, 5_000), (12_500, 10_000), (17_500, 15_000), (25_000, 20_000), (45_000, 30_000), (90_000, 60_000),
    (210_000, 120_000), (450_000, 300_000), (750_000, 600_000), (1_050_000, 900_000), (1_500_000, 1_200_000),
    (2_700_000, 1_800_000), (5_400_000, 3_600_000), (9_000_000, 7_200_000), (16_200_000, 10_800_000),
    (32_400_000, 21_600_000), (86_400_000, 43_200_000),
]


def panel_interval_ms(from_ms: int, to_ms: int, max_data_points: int, min_interval_ms: int = 1) -> int:
    """The interval Grafana asks for: the range over the panel's width in pixels
    (maxDataPoints), at least the data source's minimum, rounded to a nice value."""
    raw = max((to_ms - from_ms) // max(1, max_data_points), min_interval_ms)
    for limit, interval in _ROUND_MS:
        if raw <= limit:
            return interval
    return 86_400_000


def format_interval(ms: int) -> str:
    """gtime.FormatInterval: ``$__interval`` as InfluxQL sees it (``500ms``, ``10s``, ``1m``)."""
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1_000)):
        if ms >= size:
            return f"{ms // size}{unit}"
    return f"{max(ms, 1)}ms"


def go_duration(ms: int) -> str:
    """Go's time.Duration.String(): ``v.windowPeriod`` as Flux sees it (``500ms``, ``10s``, ``1m0s``)."""
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest // 1000}" if rest % 1000 == 0 else f"{rest / 1000:g}"
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{minutes}m{seconds}s"
    return f"{seconds}s"


def influxql_macros(query: str, from_ms: int, to_ms: int, interval_ms: int) -> str:
    """The InfluxQL backend's macros, in its order (after the browser's global
    ``${__from}`` and ``${__to}``: the range in ms since the epoch)."""
    query = query.replace("${__from}", str(from_ms)).replace("${__to}", str(to_ms))
    text = format_interval(interval_ms)
    query = query.replace("$timeFilter", f"time >= {from_ms}ms and time <= {to_ms}ms")
    query = query.replace("$interval", text)
    query = query.replace("$__interval_ms", str(interval_ms))
    return query.replace("$__interval", text)


def influxql_series(url: str, database: str, query: str) -> list[dict[str, Any]]:
    """The series InfluxDB answers an InfluxQL query with (times in ms), as Grafana's backend
    sends it; a statement's error fails the test, naming the query."""
    import httpx

    resp = httpx.post(f"{url}/query", data={"db": database, "q": query, "epoch": "ms"}, timeout=60)
    resp.raise_for_status()
    (result,) = resp.json()["results"]
    assert "error" not in result, (result["error"], query)
    return result.get("series", [])


def sql_macros(query: str, from_ms: int, to_ms: int, interval_ms: int) -> str:
    """The InfluxDB SQL (FlightSQL) data source's substitutions: the browser's global
    ``${__from}``, ``${__to}`` and ``$__interval_ms``, then the backend's
    ``$__timeFilter(column)`` (grafana-plugin-sdk-go ``sqlutil``: RFC 3339 in whole
    seconds, both ends included)."""
    query = query.replace("${__from}", str(from_ms)).replace("${__to}", str(to_ms))
    query = query.replace("$__interval_ms", str(interval_ms))
    lo, hi = _rfc3339_seconds(from_ms), _rfc3339_seconds(to_ms)
    return re.sub(r"\$__timeFilter\(([^)]*)\)", lambda m: f"{m.group(1)} >= '{lo}' AND {m.group(1)} <= '{hi}'", query)


def _rfc3339_seconds(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms // 1000, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rfc3339(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).isoformat().replace("+00:00", "Z")


_FLUX_MACRO = re.compile(r"([a-zA-Z]+)\.([a-zA-Z]+)")


def flux_macros(query: str, from_ms: int, to_ms: int, interval_ms: int, bucket: str, organization: str) -> str:
    """The Flux backend's macros (``v.timeRangeStart`` and friends replaced as text)."""
    replacements = {"timeRangeStart": _rfc3339(from_ms), "timeRangeStop": _rfc3339(to_ms),
                    "windowPeriod": go_duration(interval_ms), "defaultBucket": json.dumps(bucket),
                    "organization": json.dumps(organization)}
    for m in set(_FLUX_MACRO.findall(query)):
        if m[1] in replacements:
            query = query.replace(f"{m[0]}.{m[1]}", replacements[m[1]])
    return query


FLUX_PREAMBLE = ('v = {timeRangeStart: -1h, timeRangeStop: now(), windowPeriod: 1m, '
                 'defaultBucket: "curvestream", organization: "curvestream"}')


def with_flux_preamble(script: str, preamble: str = FLUX_PREAMBLE) -> str:
    """Define Grafana's ``v`` record after the imports (Flux wants imports first)."""
    lines = script.splitlines()
    i = 0
    while i < len(lines) and (lines[i].startswith("import ") or not lines[i].strip()):
        i += 1
    return "\n".join(lines[:i] + [preamble] + lines[i:])


# --------------------------------------------------------------------------- the Flux checker
class FluxChecker:
    """InfluxData's flux-lsp (npm @influxdata/flux-lsp-node, pinned in package.json here)."""

    def __init__(self) -> None:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not installed: the Flux checker runs on Node 20")
        self.node = node
        if not (CHECKS_DIR / "node_modules" / "@influxdata" / "flux-lsp-node").is_dir():
            npm = shutil.which("npm")
            if npm is None:
                raise RuntimeError("npm is not installed: run `npm ci` in tests/grafana")
            subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=CHECKS_DIR, check=True,
                           stdout=subprocess.DEVNULL, timeout=300)

    def check(self, scripts: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """``{name: {"valid": bool, "diagnostics": [...]}}`` for every script."""
        payload = json.dumps([{"name": k, "script": v} for k, v in scripts.items()])
        proc = subprocess.run([self.node, str(CHECKS_DIR / "flux_check.cjs")], input=payload, cwd=CHECKS_DIR,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "NODE_NO_WARNINGS": "1"})
        if proc.returncode != 0:
            raise RuntimeError(f"flux_check.cjs failed ({proc.returncode}): {proc.stderr[-2000:]}")
        return {r["name"]: r for r in json.loads(proc.stdout)}


def walk_panels(panels: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from walk_panels(panel.get("panels", []))
