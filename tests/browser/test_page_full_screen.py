"""A chart over the whole window (⤢): drawn again at its new width, kept live, left with Esc, kept in the URL."""

from __future__ import annotations

import urllib.parse

from page_helpers import duckdb_bridge, open_page, start_run, wait_chart, wait_stored
from servers import wait_until

N = 20_000


def card_box(page, key: str) -> dict:
    return page.get_by_test_id(f"chart-{key}").bounding_box()


def series_widths(page, key: str) -> list[int]:
    """The plot widths the page asks the bridge for this key's curves at, from now on."""
    widths: list[int] = []

    def seen(request) -> None:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(request.url).query)
        if "/api/v1/series" in request.url and query.get("key") == [key]:
            widths.append(int(query["width"][0]))

    page.on("request", seen)
    return widths


def test_a_chart_goes_full_screen_drawn_at_its_new_width_live_and_back_with_escape(
        page, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    run = start_run(mosquitto, bridge, spool_dir, "full", "r1")
    try:
        for step in range(N):
            run.log({"loss": 1.0 + (step % 97) / 97 - step / N}, step=step)
        run.log({"acc": 0.5}, step=0)
        wait_stored(bridge, "full", "r1", {"loss": N, "acc": 1})

        widths = series_widths(page, "loss")
        open_page(page, bridge, runs=(("full", "r1"),))
        in_grid = wait_chart(page, "loss", lambda c: c["series"] and c["series"][0]["points"] > 0, "the chart")
        grid_box = card_box(page, "loss")
        grid_points = in_grid["series"][0]["points"]
        assert widths and grid_box["width"] < 0.7 * 1280, (widths, grid_box)

        page.get_by_test_id("chart-loss").get_by_test_id("chart-full-screen").click()
        card = page.get_by_test_id("chart-loss")
        wait_until(lambda: card.get_attribute("data-full") == "true", 10, "the chart full screen")
        box = card_box(page, "loss")
        assert box["width"] > 1200 and box["height"] > 740, box
        assert "full=loss" in page.url
        # drawn again at the new width: asked for at it, more of the curve's detail drawn
        wait_until(lambda: max(widths) > 1.5 * widths[0], 30, f"a query at the wider plot: {widths}")
        wide = wait_chart(page, "loss", lambda c: c["series"][0]["points"] > grid_points, "more detail")
        assert wide["series"][0]["raw"] is False and wide["series"][0]["points"] <= 4 * max(widths)
        assert page.get_by_test_id("chart-acc").get_attribute("data-full") != "true"
        page.screenshot(path=str(output_dir / "page-full-screen.png"))

        # live points reach it while it is full screen
        for step in range(N, N + 50):
            run.log({"loss": -5.0}, step=step)
        wait_chart(page, "loss", lambda c: c["series"][0]["yMin"] == -5.0, "the pushed points")
        assert card.get_attribute("data-full") == "true"

        page.keyboard.press("Escape")
        wait_until(lambda: card.get_attribute("data-full") == "false", 10, "back in the grid")
        wait_until(lambda: abs(card_box(page, "loss")["width"] - grid_box["width"]) < 2, 10, "its place in the grid")
        assert "full=" not in page.url

        # a link keeps it: the chart opens full screen
        page.goto(page.url + "&full=loss")
        card = page.get_by_test_id("chart-loss")
        wait_until(lambda: card.get_attribute("data-full") == "true", 30, "full screen from the link")
        wait_chart(page, "loss", lambda c: c["series"][0]["yMin"] == -5.0, "the chart drawn")
        assert card_box(page, "loss")["width"] > 1200
        card.get_by_test_id("chart-full-screen").click()
        wait_until(lambda: card.get_attribute("data-full") == "false", 10, "the button leaves too")
    finally:
        run.finish()
    assert not page.page_errors, page.page_errors
