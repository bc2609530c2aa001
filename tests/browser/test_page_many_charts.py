"""Many charts stay cheap: live frames redraw only the charts on screen; the others catch up when shown."""

from __future__ import annotations

import threading
import time

from page_helpers import chart, drawn_series, duckdb_bridge, open_page, start_run, wait_chart, wait_stored
from servers import wait_until

KEYS = [f"metric/{i:02d}" for i in range(12)]
FIRST = 10
TOTAL = 200


def drawn_points(page, key: str) -> int:
    """Points of the run's line that ECharts holds now (what is drawn, not what the page has received)."""
    return drawn_series(page, key)['["many","twelve"]|raw']["points"]


def test_live_frames_redraw_only_the_charts_on_screen_and_the_others_catch_up_when_scrolled_to(
        page, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    run = start_run(mosquitto, bridge, spool_dir, "many", "twelve", flush_interval_ms=50)
    try:
        for i in range(FIRST):
            run.log({k: float(i * (j + 1)) for j, k in enumerate(KEYS)}, step=i)
        wait_stored(bridge, "many", "twelve", dict.fromkeys(KEYS, FIRST))
        open_page(page, bridge, runs=(("many", "twelve"),))
        top, bottom = KEYS[0], KEYS[-1]
        wait_chart(page, top, lambda c: c["series"][0]["points"] == FIRST, "the top chart")
        # every chart loads once it comes near the screen; then the user goes back to the top
        page.get_by_test_id(f"chart-{bottom}").scroll_into_view_if_needed()
        wait_chart(page, bottom, lambda c: c["series"][0]["points"] == FIRST, "the bottom chart")
        page.evaluate("window.scrollTo(0, 0)")
        wait_until(lambda: page.evaluate("window.scrollY") == 0, 10, "the page scrolled to the top")
        wait_until(lambda: page.evaluate("window.__curvestream.live") == "open", 10, "the live socket")
        renders_before = {k: chart(page, k)["renders"] for k in KEYS}

        def train() -> None:
            for i in range(FIRST, TOTAL):
                run.log({k: float(i * (j + 1)) for j, k in enumerate(KEYS)}, step=i)
                time.sleep(0.01)

        trainer = threading.Thread(target=train, name="trainer", daemon=True)
        trainer.start()
        wait_chart(page, top, lambda c: c["series"][0]["points"] == TOTAL, "live points in the top chart")
        trainer.join(30)
        wait_stored(bridge, "many", "twelve", dict.fromkeys(KEYS, TOTAL))
        page.screenshot(path=str(output_dir / "page-many-charts-top.png"))

        after = {k: chart(page, k)["renders"] for k in KEYS}
        assert after[top] > renders_before[top] + 1, "the chart on screen was redrawn as frames came"
        assert after[bottom] == renders_before[bottom], "the chart off screen was not drawn meanwhile"
        assert drawn_points(page, bottom) == FIRST, "ECharts still holds what it drew before"

        page.get_by_test_id(f"chart-{bottom}").scroll_into_view_if_needed()
        wait_until(lambda: drawn_points(page, bottom) == TOTAL, 30, "the bottom chart to catch up once shown")
        snap = chart(page, bottom)
        assert snap["renders"] == after[bottom] + 1, "one drawing brought it up to date"
        assert snap["series"][0]["yMax"] == float((TOTAL - 1) * len(KEYS))
        page.screenshot(path=str(output_dir / "page-many-charts-bottom.png"))
    finally:
        run.finish()
    assert not page.page_errors, page.page_errors
