"""The page lists runs, overlays the ones a user picks, and the tooltip shows each one's value."""

from __future__ import annotations

from page_helpers import (
    chart,
    duckdb_bridge,
    hover_tooltip,
    open_page,
    rows_of_runs,
    start_run,
    wait_chart,
    wait_stored,
)
from servers import wait_until

STEPS = 200
RUNS = {"alpha": 1.0, "beta": 2.0, "gamma": 3.0, "delta": 4.0}


def loss(scale: float, step: int) -> float:
    return scale * 100.0 + step  # distinct per run, exact in any float formatting


def test_page_lists_runs_draws_three_selected_runs_overlaid_and_the_tooltip_shows_three_values(
        page, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    for name, scale in RUNS.items():
        with start_run(mosquitto, bridge, spool_dir, "overlay", name, config={"scale": scale}, tags=["t"]) as run:
            for i in range(STEPS):
                run.log({"loss": loss(scale, i)}, step=i)
        wait_stored(bridge, "overlay", name, {"loss": STEPS})

    open_page(page, bridge)
    wait_until(
        lambda: rows_of_runs(page, "overlay") == dict.fromkeys(RUNS, "finished"), 30, "four finished runs listed"
    )

    # pick alpha, beta and gamma like a user: tick their boxes, untick the run the page chose by itself
    wanted = {"alpha", "beta", "gamma"}
    rows = page.get_by_test_id("run-row")
    for i in range(rows.count()):
        row = rows.nth(i)
        box = row.get_by_test_id("run-checkbox")
        want = row.get_attribute("data-project") == "overlay" and row.get_attribute("data-run") in wanted
        if box.is_checked() != want:
            box.click()
    wait_until(lambda: {(r["project"], r["run"]) for r in page.evaluate("window.__curvestream.selected")}
               == {("overlay", n) for n in wanted}, 10, "three runs selected")
    snap = wait_chart(page, "loss", lambda c: len(c["series"]) == 3 and all(s["points"] == STEPS for s in c["series"]),
                      "three curves of 200 points")
    assert {s["run"] for s in snap["series"]} == wanted
    assert snap["raw"] is True

    shown = hover_tooltip(page, "loss", rows=3)
    page.screenshot(path=str(output_dir / "page-overlay-tooltip.png"))
    assert set(shown) == wanted
    for name, (step, value) in shown.items():
        assert 0 < step < STEPS - 1, "hovering the middle of the plot shows a point from the middle of the run"
        assert value == loss(RUNS[name], step), (name, step, value)
    assert chart(page, "loss")["window"] is None
    assert not page.page_errors, page.page_errors
