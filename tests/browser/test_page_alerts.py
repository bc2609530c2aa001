"""Alerts in the page: a marker on the chart at the step where the alert fired
(with its window), a badge in the runs table, the filter "runs with firing
alerts", and an alert pushed while the page is open."""

from __future__ import annotations

from page_helpers import drawn_series, open_page, start_run, wait_chart, wait_stored
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
    rules = tmp_path / "rules.yaml"
    rules.write_text(RULES)
    bridge = bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", mosquitto.url, alert_rules=str(rules))
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
