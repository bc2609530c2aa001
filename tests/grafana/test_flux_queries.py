"""The Flux flavour of every dashboard query, checked by InfluxData's own Flux
checker (flux-lsp: syntax and semantics) after Grafana's substitutions; and
proof that the checker is not a rubber stamp."""

from __future__ import annotations

from typing import Any

import pytest

from grafana_kit import (
    ALL,
    FluxChecker,
    flux_macros,
    interpolate_variables,
    query_library,
    with_flux_preamble,
)

# Variable selections as a user makes them; names with the characters that need
# regex escaping (/ . ( ) [ ] + |), spaces, quotes, "=" and Unicode.
SELECTIONS: dict[str, dict[str, Any]] = {
    "single values": {"project": "mnist", "run": ["lr=0.1 bs=64"], "metric": ["train/loss"]},
    "several runs": {"project": "mnist", "run": ["lr=0.1", "lr=0.01 (warm-up)", "a|b [x]+y"], "metric": ["val/acc"]},
    "all runs and metrics": {"project": "sweep.v2", "run": ALL, "metric": ALL},
    "hostile names": {"project": "ü/p", "run": ["r^1$ {2}"], "metric": ['val/loss, top-1 = "x" ü']},
}
ALL_VALUES = {"run": ".*", "metric": ".*"}


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
        "unknown function": good.replace("|> unique(", "|> uniq("),
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
