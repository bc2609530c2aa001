"""Zoom asks the bridge again: raw points up close, and the extremes are back when zoomed out."""

from __future__ import annotations

import numpy as np

from page_helpers import chart, duckdb_bridge, open_page, page_context, plot_center, start_run, wait_chart, wait_stored
from servers import wait_until

N = 1_000_000
KEY = "signal"


def _zoom_once(page, x: float, y: float, delta: float) -> None:
    """One wheel notch over the plot; wait for the page to settle on the new window."""
    before = page.evaluate("window.__curvestream.zoom")
    page.mouse.move(x, y)
    page.mouse.wheel(0, delta)
    wait_until(lambda: page.evaluate("window.__curvestream.zoom") != before, 10, "the zoom to follow the wheel")


def test_zooming_into_one_percent_of_a_million_points_shows_raw_points_and_zooming_out_shows_the_spike_again(
        browser, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    rng = np.random.default_rng(20251202)
    values = np.sin(np.arange(N) / 20_000.0) + rng.normal(0, 0.05, N)
    # the extremes sit away from the middle of the plot, where the zoom goes in
    spike_step = int(rng.integers(100_000, 300_000))
    dip_step = int(rng.integers(700_000, 900_000))
    values[spike_step] = 1000.0
    values[dip_step] = -1000.0

    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    with start_run(mosquitto, bridge, spool_dir, "zoom", "million") as run:
        for i, v in enumerate(values.tolist()):
            run.log({KEY: v}, step=i)
    wait_stored(bridge, "zoom", "million", {KEY: N}, timeout=300)

    # a wide high-DPI screen: the plot is ~2,900 device pixels, so a 1 % window (10,000 steps)
    # fits the bridge's raw limit of 4 points per pixel column
    with page_context(browser, 1600, 900, 2) as page:
        series_queries: list[str] = []
        page.on("request", lambda r: series_queries.append(r.url) if "/series?" in r.url else None)
        open_page(page, bridge, runs=(("zoom", "million"),))

        overview = wait_chart(page, KEY, lambda c: c["series"] and c["series"][0]["points"] > 0, "the overview")
        curve = overview["series"][0]
        assert overview["raw"] is False and curve["points"] <= 4 * 20_000, "the overview is M4, not a million points"
        assert curve["yMax"] == 1000.0 and curve["yMin"] == -1000.0, "M4 keeps the spike and the dip"
        page.screenshot(path=str(output_dir / "page-zoom-1-overview.png"))

        x, y = plot_center(page, KEY)
        for _ in range(60):
            _zoom_once(page, x, y, -200)
            window = page.evaluate("window.__curvestream.zoom")
            if window and window[1] - window[0] <= N / 100:
                break
        else:
            raise AssertionError(f"the wheel did not zoom into 1 % of the run: {window}")

        zoomed = wait_chart(page, KEY, lambda c: c["window"] == window and c["raw"] is True,
                            "raw points in the zoomed window")
        start, end = zoomed["window"]
        curve = zoomed["series"][0]
        steps_in_window = end - start + 1  # every step was logged: the window's raw points
        assert steps_in_window <= N / 100 + 1
        assert curve["points"] == steps_in_window, "every raw point of the window is drawn, no more"
        assert curve["yMax"] < 1000.0 and curve["yMin"] > -1000.0, "the extremes lie outside the window"
        assert any("start=" in u and "end=" in u for u in series_queries), "the zoom asked the bridge again"
        page.screenshot(path=str(output_dir / "page-zoom-2-one-percent-raw.png"))

        for _ in range(60):
            _zoom_once(page, x, y, 400)
            if page.evaluate("window.__curvestream.zoom") is None:
                break
        else:
            raise AssertionError("the wheel did not zoom all the way out")
        out = wait_chart(page, KEY, lambda c: c["window"] is None and c["raw"] is False, "the whole run again")
        curve = out["series"][0]
        assert curve["yMax"] == 1000.0, "the +1000 spike is drawn again"
        assert curve["yMin"] == -1000.0, "the -1000 dip is drawn again"
        assert chart(page, KEY)["window"] is None
        page.screenshot(path=str(output_dir / "page-zoom-3-zoomed-out.png"))
        assert not page.page_errors, page.page_errors
