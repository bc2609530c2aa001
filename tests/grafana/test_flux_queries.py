"""The Flux flavour of every dashboard query, checked by InfluxData's own Flux
checker (flux-lsp: syntax and semantics) after Grafana's substitutions; and
proof that the checker is not a rubber stamp."""

from __future__ import annotations

import re
import textwrap
from typing import Any

import pytest

from curvestream_bridge.store.influx.ladder import LADDER_MS
from grafana_kit import (
    ALL,
    REPO,
    FluxChecker,
    flux_macros,
    interpolate_variables,
    query_library,
    with_flux_preamble,
)
from m4_golden import load_m4_vectors, window_queries

# Variable selections as a user makes them; names with the characters that need
# regex escaping (/ . ( ) [ ] + |), spaces, quotes, "=" and Unicode.
SELECTIONS: dict[str, dict[str, Any]] = {
    "single values": {"project": "mnist", "group": ["lr sweep"], "run": ["lr=0.1 bs=64"], "metric": ["train/loss"],
                      "system_metric": ["system/cpu_percent"]},
    "several runs": {"project": "mnist", "group": ALL, "run": ["lr=0.1", "lr=0.01 (warm-up)", "a|b [x]+y"],
                     "metric": ["val/acc"], "system_metric": ["system/gpu0/power_w", "system/process_rss_bytes"]},
    # "All" runs are the runs the run variable lists (those of the chosen groups), sent as their alternation;
    # "All" system metrics likewise the listed ones (that variable has no custom all value either)
    "all runs and metrics": {"project": "sweep.v2", "group": ALL, "run": ["a", "b.c", "d (e)"], "metric": ALL,
                             "system_metric": ["system/cpu_percent", "system/memory_percent"]},
    "hostile names": {"project": "ü/p", "group": ["g|h (1)"], "run": ["r^1$ {2}"],
                      "metric": ['val/loss, top-1 = "x" ü'], "system_metric": ["system/gpu10/temperature_c"]},
}
ALL_VALUES = {"group": ".*", "metric": ".*"}


@pytest.fixture(scope="module")
def checker() -> FluxChecker:
    return FluxChecker()


def flux_queries() -> dict[str, str]:
    return {name: flavours["flux"] for name, flavours in query_library().items()}


def _substituted(query: str, selection: dict[str, Any]) -> str:
    return interpolate_variables(query, selection, ALL_VALUES)


def _failures(results: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    return {name: r["diagnostics"] for name, r in results.items() if not r["valid"]}


def test_every_flux_query_is_valid_with_grafanas_v_record_for_every_selection(checker: FluxChecker) -> None:
    scripts = {f"{name} / {label}": with_flux_preamble(_substituted(query, selection))
               for name, query in flux_queries().items() for label, selection in SELECTIONS.items()}
    assert len(scripts) == len(flux_queries()) * len(SELECTIONS) >= 5 * 4
    assert _failures(checker.check(scripts)) == {}


def test_every_flux_query_is_valid_after_grafanas_backend_macros(checker: FluxChecker) -> None:
    """As the Grafana server sends it to InfluxDB: v.* replaced by literals."""
    hour = 3_600_000
    scripts = {}
    for name, query in flux_queries().items():
        for interval_ms in (1, 500, 10_000, 60_000, 2 * hour):
            text = flux_macros(_substituted(query, SELECTIONS["several runs"]), 1_767_225_600_000,
                               1_767_225_600_000 + 24 * hour, interval_ms, "curvestream", "curvestream")
            assert "v." not in text.replace("v: ", "")
            scripts[f"{name} every {interval_ms} ms"] = text
    assert _failures(checker.check(scripts)) == {}


def test_the_checker_rejects_broken_flux_so_the_checks_above_mean_something(checker: FluxChecker) -> None:
    m4 = flux_queries()["curves_m4"]
    tag_values = flux_queries()["run_values"]
    good = with_flux_preamble(_substituted(m4, SELECTIONS["single values"]))
    broken = {
        "unknown function": good.replace("|> first()", "|> frist()"),
        "unknown argument": good.replace("window(every:", "window(evry:"),
        "argument of the wrong type": good.replace("every: v.windowPeriod", 'every: "1m"'),
        "syntax error": good.replace("|> sort(columns: [\"_time\"])", "|> sort(columns: [\"_time\"]"),
        "unknown package member": with_flux_preamble(
            _substituted(tag_values, SELECTIONS["single values"])).replace("schema.tagValues(", "schema.tagValuez("),
        "variable left unsubstituted": with_flux_preamble(m4),
        "Grafana's v record missing": _substituted(m4, SELECTIONS["single values"]),
    }
    assert all(script != good for script in broken.values())
    results = checker.check({"good": good, **broken})
    assert results["good"]["valid"], results["good"]["diagnostics"]
    for name in broken:
        assert not results[name]["valid"], f"the checker accepted: {name}"
        assert results[name]["diagnostics"], f"no reason given for: {name}"


def test_the_panels_readme_examples_are_valid_flux_that_read_the_rollups_and_keep_spikes(checker: FluxChecker) -> None:
    readme = (REPO / "panels" / "echarts-plugin" / "src" / "grafana" / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```flux\n(.*?)```", readme, flags=re.S)
    assert len(blocks) >= 2
    for block in blocks:
        assert "cs_rollup_time" in block and "grafana_interval_ms" in block
        assert "aggregateWindow" not in block  # one value per window (last, mean) drops spikes
    scripts = {f"example {i}": with_flux_preamble(textwrap.dedent(b)) for i, b in enumerate(blocks)}
    assert _failures(checker.check(scripts)) == {}


def test_the_flux_and_influxql_curves_read_the_same_level_measurement_and_fields() -> None:
    """The two flavours are one query: the same rollup measurement, the level from the
    same tag and interval, and the same selector on the same field for each of the four
    (InfluxQL reads a level whose rows are the windows as it is: the field of the row is the
    selector's answer over a window of one row; see test_influxql_levels.py)."""
    flux, influxql = query_library()["curves_m4"]["flux"], query_library()["curves_m4"]["influxql"]
    flux_pairs = set(re.findall(r'r\._field == "(\w+)"\) \|> (first|last|min|max)\(\)', flux))
    influxql_pairs = {(field, selector) for selector, field in re.findall(r'(first|last|min|max)\("(\w+)"\)', influxql)}
    as_is = {(field, field) for field in re.findall(r'SELECT "(\w+)" AS "value" FROM', influxql)}
    assert flux_pairs == influxql_pairs == as_is == {("first", "first"), ("min", "min"), ("max", "max"),
                                                     ("last", "last")}
    assert re.findall(r'r\._measurement == "(\w+)"', flux) == ["cs_rollup_time"]
    assert set(re.findall(r'FROM "(\w+)"', influxql)) == {"cs_rollup_time"}
    assert 'strings.containsStr(v: r.grafana_interval_ms, substr: level)' in flux
    assert 'level = ":" + string(v: int(v: v.windowPeriod) / 1000000) + ":"' in flux  # the interval in ms
    assert influxql.count('"grafana_interval_ms" =~ /^:$__interval_ms:/') == 4  # the rows are the windows
    assert influxql.count('"grafana_interval_ms" =~ /.:$__interval_ms:/') == 4  # grouped into windows
    assert "window(every: v.windowPeriod)" in flux and influxql.count("GROUP BY time($__interval)") == 4


def test_the_flux_twins_of_the_golden_m4_windows_pass_the_checker(checker: FluxChecker) -> None:
    """The M4 golden vectors' windows (``tests/golden/m4/``) that the InfluxQL levels are held to on real
    InfluxDB 1.6.7 (``test_influxql_levels.py``), asked in Flux: no server here runs Flux (InfluxDB 1.6.7
    has none), so each script, as Grafana's backend sends it, is checked by InfluxData's checker only; the
    test above holds the two flavours to the same measurement, level and (selector, field) pairs."""
    scripts = {}
    for case in load_m4_vectors():
        for q, interval in window_queries(case, LADDER_MS):
            for name in ("curves_m4", "nonfinite_count"):
                text = _substituted(flux_queries()[name], {"project": "golden", "run": [case.name], "metric": ["m4"]})
                scripts[f"{name} {case.name} {q.start}..{q.end} every {interval} ms"] = flux_macros(
                    text, int(q.start), int(q.end), interval, "curvestream", "curvestream")
    assert len(scripts) >= 20
    assert _failures(checker.check(scripts)) == {}
