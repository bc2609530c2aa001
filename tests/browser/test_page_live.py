"""A running run's curve grows in the open page, pushed over the WebSocket, without a reload."""

from __future__ import annotations

import threading
import time

from page_helpers import chart, duckdb_bridge, open_page, rows_of_runs, start_run, wait_chart, wait_stored
from servers import wait_until

KEY = "train/loss"
FIRST = 20
TOTAL = 400


def test_a_live_runs_curve_grows_in_the_open_page_without_reload(page, bridge_factory, mosquitto, spool_dir, tmp_path,
                                                                  output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    run = start_run(mosquitto, bridge, spool_dir, "live", "growing", flush_interval_ms=50)
    try:
        for i in range(FIRST):
            run.log({KEY: 1.0 / (i + 1)}, step=i)
        wait_stored(bridge, "live", "growing", {KEY: FIRST})

        navigations: list[str] = []
        page.on("framenavigated", lambda frame: navigations.append(frame.url) if frame == page.main_frame else None)
        open_page(page, bridge, runs=(("live", "growing"),))
        wait_chart(page, KEY, lambda c: c["series"] and c["series"][0]["points"] == FIRST, "the first points")
        wait_until(lambda: page.evaluate("window.__curvestream.live") == "open", 10, "the live socket")
        page.evaluate("window.__sameDocument = true")
        loads_before = len(navigations)

        def train() -> None:
            for i in range(FIRST, TOTAL):
                run.log({KEY: 1.0 / (i + 1)}, step=i)
                time.sleep(0.01)  # a slow training loop: points trickle in while the page watches

        trainer = threading.Thread(target=train, name="trainer", daemon=True)
        trainer.start()
        counts: list[int] = []

        def grown_to_all() -> bool:
            n = chart(page, KEY)["series"][0]["points"]
            if not counts or counts[-1] != n:
                counts.append(n)
            return n == TOTAL

        wait_until(grown_to_all, 60, f"the curve to grow to {TOTAL} points")
        trainer.join(30)
        page.screenshot(path=str(output_dir / "page-live-growing.png"))

        assert len([n for n in counts if FIRST < n < TOTAL]) >= 2, f"the curve grew in steps while open: {counts}"
        assert counts == sorted(counts), counts
        assert page.evaluate("window.__sameDocument") is True, "the page was not reloaded"
        assert len(navigations) == loads_before, navigations
        assert rows_of_runs(page, "live") == {"growing": "running"}
    finally:
        run.finish()

    # the run's end reaches the page too, and its curve stays whole
    wait_until(lambda: rows_of_runs(page, "live") == {"growing": "finished"}, 30, "the run shown as finished")
    snap = wait_chart(page, KEY, lambda c: c["series"][0]["points"] == TOTAL, "the finished curve")
    assert snap["raw"] is True
    assert page.evaluate("window.__sameDocument") is True
    assert not page.page_errors, page.page_errors
