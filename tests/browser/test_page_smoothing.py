"""Smoothing draws over the data, never instead of it: smoothed line, faint raw line and min/max band."""

from __future__ import annotations

import math

from page_helpers import drawn_series, duckdb_bridge, open_page, start_run, wait_chart, wait_stored
from servers import wait_until

KEY = "loss"
STEPS = 500


def test_smoothing_draws_the_smoothed_line_the_faint_raw_line_and_the_envelope(page, bridge_factory, mosquitto,
                                                                             spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    with start_run(mosquitto, bridge, spool_dir, "smooth", "noisy") as run:
        for i in range(STEPS):
            run.log({KEY: math.exp(-i / 150) + 0.2 * math.sin(i * 1.7)}, step=i)
    wait_stored(bridge, "smooth", "noisy", {KEY: STEPS})

    open_page(page, bridge, runs=(("smooth", "noisy"),))
    wait_chart(page, KEY, lambda c: c["series"][0]["points"] == STEPS and c["smoothing"] is False, "the raw curve")
    card = page.get_by_test_id(f"chart-{KEY}")
    assert card.get_attribute("data-smoothing") == "off"

    page.get_by_test_id("smoothing-slider").fill("0.9")
    wait_until(lambda: card.get_attribute("data-smoothing") == "on", 10, "smoothing on")
    assert card.get_attribute("data-envelope") == "true"
    assert page.get_by_test_id("smoothing-value").inner_text() == "0.9"

    curve_id = '["smooth","noisy"]'
    drawn = drawn_series(page, KEY)
    raw, smooth = drawn[f"{curve_id}|raw"], drawn[f"{curve_id}|smooth"]
    low, high = drawn[f"{curve_id}|env-lo"], drawn[f"{curve_id}|env-hi"]
    assert raw["points"] == STEPS and smooth["points"] == STEPS, "the smoothed line covers the whole raw line"
    assert raw["lineOpacity"] is not None and raw["lineOpacity"] < 1, "the raw line stays, faint"
    assert smooth["lineOpacity"] in (None, 1)
    assert low["points"] > 10 and high["points"] == low["points"], "the band has a low and a high edge"
    assert high["area"] is True and low["area"] is False, "the band is filled between its edges"
    assert "smooth=0.9" in page.url, "the smoothing is in the shared link"
    page.screenshot(path=str(output_dir / "page-smoothing.png"))

    # the band is a choice of its own
    page.get_by_test_id("envelope-toggle").uncheck()
    wait_until(lambda: card.get_attribute("data-envelope") == "false", 10, "the band off")
    drawn = drawn_series(page, KEY)
    assert drawn[f"{curve_id}|smooth"]["points"] == STEPS
    assert f"{curve_id}|env-lo" not in drawn and f"{curve_id}|env-hi" not in drawn, "no band series left behind"

    # smoothing off: the chart holds the raw line alone (every series costs ECharts a setup)
    page.get_by_test_id("smoothing-slider").fill("0")
    wait_until(lambda: card.get_attribute("data-smoothing") == "off", 10, "smoothing off")
    assert list(drawn_series(page, KEY)) == [f"{curve_id}|raw"]
    assert not page.page_errors, page.page_errors
