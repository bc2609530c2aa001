"""Alerts in the page: a marker on the chart at the step where the alert fired
(with its window), a badge in the runs table, the filter "runs with firing
alerts", and an alert pushed while the page is open."""

from __future__ import annotations

from page_helpers import drawn_series, duckdb_bridge_with_rules, open_page, start_run, wait_chart, wait_stored
from servers import wait_until

RULES = """
rules:
  - {name: loss-plateau, kind: plateau, key: loss, smoothing: 0, patience_steps: 100, min_delta: 0}
  - {name: nonfinite, kind: nonfinite}
"""


def badges(page) -> dict[str, str]:
    """Run name -> firing-alert badge text ("" without a badge), for project "alerting"."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('[data-testid="run-row"]')]
        .filter(r => r.dataset.project === 'alerting')
        .map(r => [r.dataset.run, r.querySelector('[data-testid="run-alerts"]')?.textContent ?? '']))""")


def test_the_page_marks_alerts_on_the_chart_badges_their_runs_and_filters_them(
        page, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge_with_rules(bridge_factory, tmp_path, mosquitto, RULES)
    with start_run(mosquitto, bridge, spool_dir, "alerting", "flat") as run:
        for step in range(400):  # improves until step 150, then flat: the plateau fires at 250
            run.log({"loss": 10.0 - min(step, 150) * 0.01}, step=step)
    with start_run(mosquitto, bridge, spool_dir, "alerting", "fine") as run:
        for step in range(400):
            run.log({"loss": 10.0 - step * 0.01}, step=step)
    wait_stored(bridge, "alerting", "fine", {"loss": 400})
    open_page(page, bridge, runs=(("alerting", "flat"),))
    snap = wait_chart(page, "loss", lambda s: len(s["markers"]) == 1, "the plateau marker")
    assert snap["markers"] == [{"series": "flat", "kind": "plateau", "x": 250, "window": [150, 250]}]
    drawn = drawn_series(page, "loss").values()  # what ECharts holds: the line and the window's band
    assert sum(s["markLines"] for s in drawn) == 1 and sum(s["markAreas"] for s in drawn) == 1
    wait_until(lambda: badges(page) == {"flat": "⚠ 1", "fine": ""}, 30, "a badge on the alerting run only")
    page.screenshot(path=str(output_dir / "page-alerts.png"))

    page.get_by_test_id("filter-alerts").check()
    wait_until(lambda: set(badges(page)) == {"flat"}, 10, "only runs with firing alerts")
    assert "alerts=firing" in page.url
    page.get_by_test_id("filter-alerts").uncheck()
    wait_until(lambda: set(badges(page)) == {"flat", "fine"}, 10, "every run again")

    # an alert of a run the page watches arrives over the live socket
    page.locator('[data-testid="run-row"][data-run="fine"] [data-testid="run-checkbox"]').check()
    wait_chart(page, "loss", lambda s: len(s["series"]) == 2, "both runs drawn")
    with start_run(mosquitto, bridge, spool_dir, "alerting", "fine") as run:
        run.log({"loss": float("nan")}, step=400)
    wait_until(lambda: badges(page).get("fine") == "⚠ 1", 30, "the pushed alert's badge")
    wait_chart(page, "loss", lambda s: {(m["series"], m["kind"]) for m in s["markers"]} ==
               {("flat", "plateau"), ("fine", "nonfinite")}, "the pushed alert's marker")


NONFINITE = "rules:\n  - {name: nonfinite, kind: nonfinite}\n"


def selected(page) -> set[str]:
    return {r["run"] for r in page.evaluate("window.__curvestream.selected")}


def drawn(page) -> set[str]:
    return {s["name"] for s in page.evaluate("window.__curvestream.chart('loss')")["series"]}


def test_select_all_takes_the_runs_the_filters_show_and_keeps_the_others_selection(
        page, bridge_factory, mosquitto, spool_dir, tmp_path):
    bridge = duckdb_bridge_with_rules(bridge_factory, tmp_path, mosquitto, NONFINITE)
    for name in ("ok-1", "ok-2", "bad-1", "bad-2"):
        with start_run(mosquitto, bridge, spool_dir, "rule", name) as run:
            for step in range(10):
                run.log({"loss": float("nan") if name.startswith("bad") and step == 9 else 1.0 / (step + 1)}, step=step)
    for name in ("ok-1", "ok-2", "bad-1", "bad-2"):
        wait_stored(bridge, "rule", name, {"loss": 10})
    # ok-1 is selected before any filter
    open_page(page, bridge, runs=(("rule", "ok-1"),))
    count = page.get_by_test_id("runs-count")
    wait_until(lambda: count.text_content().startswith("4 of 4 runs"), 30, "every run listed")
    wait_until(lambda: {r["run"] for r in page.evaluate("window.__curvestream.runs")
                        if r["project"] == "rule"} >= {"bad-1", "bad-2"}, 30, "the runs known")

    page.get_by_test_id("filter-alerts").check()
    wait_until(lambda: count.text_content() == "2 of 4 runs · 1 selected", 30, "the runs with firing alerts")
    select_all = page.locator('[data-testid="runs-table"] thead input[type="checkbox"]')
    assert not select_all.is_checked()
    hidden = page.get_by_test_id("runs-hidden-selected")
    assert hidden.is_visible() and hidden.text_content() == "1 selected run hidden by the filters"

    # "select all": the rows the filters show, not the runs they hide; the run selected before stays
    select_all.check()
    wait_until(lambda: selected(page) == {"ok-1", "bad-1", "bad-2"}, 10, "the shown rows selected")
    wait_chart(page, "loss", lambda c: {s["name"] for s in c["series"]} == {"ok-1", "bad-1", "bad-2"},
               "the selected runs drawn, the hidden unselected one not")
    assert count.text_content() == "2 of 4 runs · 3 selected"
    assert hidden.text_content() == "1 selected run hidden by the filters"
    assert "ok-2" not in drawn(page)

    # unchecked: the shown rows leave the selection, the hidden selected run does not
    select_all.uncheck()
    wait_until(lambda: selected(page) == {"ok-1"}, 10, "only the shown rows deselected")
    wait_chart(page, "loss", lambda c: [s["name"] for s in c["series"]] == ["ok-1"], "one curve again")

    # a filter that shows none of the selected runs: "select all" is unchecked, then takes only its rows
    page.get_by_test_id("filter-alerts").uncheck()
    page.get_by_test_id("run-search").fill("ok-2")
    wait_until(lambda: count.text_content() == "1 of 4 runs · 1 selected", 30, "the search")
    assert not select_all.is_checked() and not select_all.evaluate("e => e.indeterminate")
    select_all.check()
    wait_until(lambda: selected(page) == {"ok-1", "ok-2"}, 10, "the searched row selected")
    page.get_by_test_id("filter-clear").click()
    wait_until(lambda: count.text_content() == "4 of 4 runs · 2 selected", 30, "every run, two selected")
    assert select_all.evaluate("e => e.indeterminate")
    assert hidden.is_hidden(), "no selected run is hidden"
    assert not page.page_errors, page.page_errors
