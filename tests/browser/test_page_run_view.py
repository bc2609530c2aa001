"""A run's own view (the Run tab): its name, identity, state, host, git, tags and config, its alerts and last
values, links to its charts by section; opened from the runs table, kept in the URL, current while it runs."""

from __future__ import annotations

import socket

from page_helpers import duckdb_bridge_with_rules, open_page, start_run, wait_chart, wait_stored
from servers import wait_until

RULES = """
rules:
  - {name: nonfinite, kind: nonfinite}
"""


def facts(page) -> dict[str, str]:
    """The Run tab's facts, by field."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('[data-testid="run-facts"] dd')]
        .map(d => [d.dataset.field, d.textContent]))""")


def table_rows(page, test_id: str) -> dict[str, str]:
    return page.evaluate("""id => Object.fromEntries([...document.querySelectorAll(`[data-testid="${id}"] tr`)]
        .map(r => [r.dataset.key, r.querySelector('td').textContent]))""", test_id)


def shown_run(page) -> str | None:
    view = page.get_by_test_id("run-view")
    return view.get_attribute("data-run") if view.is_visible() else None


def test_a_runs_view_shows_its_record_alerts_and_last_values_and_links_to_its_charts(
        page, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge_with_rules(bridge_factory, tmp_path, mosquitto, RULES)
    with start_run(mosquitto, bridge, spool_dir, "view", "other") as other:
        other.log({"loss": 1.0}, step=0)
    base = start_run(mosquitto, bridge, spool_dir, "view", "base-k3x9q2", run="base", tags=["baseline", "wide"],
                     group="sweep", config={"lr": 0.1, "opt": {"beta": 0.9}})
    try:
        for step in range(50):
            base.log({"train/loss": 1.0 / (step + 1), "train/acc": step / 50, "val/loss": 2.0 / (step + 1)}, step=step)
        wait_stored(bridge, "view", "base-k3x9q2", {"train/loss": 50, "val/loss": 50})
        open_page(page, bridge, runs=(("view", "other"),))
        page.wait_for_selector('[data-testid="chart-loss"][data-state="ready"]')

        # the run's name in the table opens its view; the run joins the selection
        page.locator('[data-testid="run-row"][data-run="base-k3x9q2"] [data-testid="run-open"]').click()
        wait_until(lambda: shown_run(page) == "base-k3x9q2" and facts(page).get("state") == "running", 30,
                   "the run's view")
        assert page.get_by_test_id("tab-run").get_attribute("aria-selected") == "true"
        assert page.get_by_test_id("chart-loss").is_hidden()
        assert "tab=run" in page.url and "focus=view%2Fbase-k3x9q2" in page.url
        assert page.evaluate("window.__curvestream.selected") == [{"project": "view", "run": "other"},
                                                                  {"project": "view", "run": "base-k3x9q2"}]
        shown = facts(page)
        assert shown["name"] == "base" and shown["run"] == "base-k3x9q2" and shown["project"] == "view"
        assert shown["host"] == socket.gethostname()
        assert shown["tags"] == "baseline, wide" and shown["group"] == "sweep"
        assert table_rows(page, "run-config") == {"lr": "0.1", "opt": '{"beta":0.9}'}
        wait_until(lambda: table_rows(page, "run-last-values") == {"train/acc": "0.98", "train/loss": "0.02",
                                                                   "val/loss": "0.04"}, 30, "the last values")
        links = page.get_by_test_id("run-charts-link")
        assert links.all_text_contents() == ["All 3 charts", "train (2)", "val (1)"]
        assert page.get_by_test_id("run-alerts-table").inner_text() == "No alerts."
        page.screenshot(path=str(output_dir / "page-run-view.png"))

        # while it runs: its alert, its new values, then its end, without a reload
        base.log({"train/loss": float("nan")}, step=50)
        alert = page.locator('[data-testid="run-alert"][data-kind="nonfinite"]')
        wait_until(lambda: alert.count() == 1 and alert.get_attribute("data-state") == "firing", 30, "the alert")
        assert alert.get_attribute("data-key") == "train/loss"
        for step in range(51, 60):
            base.log({"train/loss": 0.5, "val/loss": 0.25}, step=step)
        wait_until(lambda: table_rows(page, "run-last-values").get("val/loss") == "0.25", 30, "the new last values")
    finally:
        base.finish()
    wait_until(lambda: facts(page).get("state") == "finished", 30, "the pushed end")

    # a shared link opens the same view
    page.goto(page.url)
    wait_until(lambda: shown_run(page) == "base-k3x9q2" and facts(page).get("state") == "finished", 30,
               "the view after a reload")

    # a section's link: the charts of that section only, the run's curve drawn
    page.locator('[data-testid="run-charts-link"][data-section="val"]').click()
    wait_chart(page, "val/loss", lambda c: [s["name"] for s in c["series"]] == ["base-k3x9q2"] and
               c["series"][0]["points"] == 59, "the section's chart")
    assert page.get_by_test_id("run-view").is_hidden()
    assert [s["name"] for s in page.evaluate("window.__curvestream.sections")] == ["val"]
    assert page.get_by_test_id("metric-filter").input_value() == "/^val\\//"
    assert "tab=" not in page.url and "metric=" in page.url
    assert not page.page_errors, page.page_errors
