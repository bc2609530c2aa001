"""A live page draws a point as soon as the bridge has decoded it: the store
write it would otherwise wait for is held back here (tests/held_bridge.py),
and the point is on the chart while that write has not finished."""

from __future__ import annotations

from held_bridge import HeldBridge
from page_helpers import chart, open_page, start_run, wait_chart, wait_stored
from servers import wait_until

KEY = "loss"
FIRST = 5


def test_a_live_page_draws_a_point_while_its_store_write_is_still_held_back(page, mosquitto, spool_dir, tmp_path):
    bridge = HeldBridge(tmp_path / "bridge", mosquitto.url)
    bridge.start()
    run = start_run(mosquitto, bridge, spool_dir, "live", "held", flush_interval_ms=50)
    try:
        for i in range(FIRST):
            run.log({KEY: float(i)}, step=i)
        wait_stored(bridge, "live", "held", {KEY: FIRST})
        open_page(page, bridge, runs=(("live", "held"),))
        wait_chart(page, KEY, lambda c: c["series"][0]["points"] == FIRST, "the stored points")
        wait_until(lambda: page.evaluate("window.__curvestream.live") == "open", 10, "the live socket")

        bridge.gate.touch()
        before = bridge.writes()
        run.log({KEY: 42.0}, step=FIRST)
        wait_until(lambda: bridge.writes()["begun"] > before["begun"], 30, "the write of the new point to begin")
        wait_chart(page, KEY, lambda c: c["series"][0]["points"] == FIRST + 1, "the new point drawn")
        assert bridge.writes()["finished"] == before["finished"], "the point was drawn before its write finished"
        assert chart(page, KEY)["series"][0]["yMax"] == 42.0

        bridge.gate.unlink()
        wait_stored(bridge, "live", "held", {KEY: FIRST + 1})
        assert bridge.writes()["finished"] > before["finished"]
    finally:
        bridge.gate.unlink(missing_ok=True)
        run.finish()
        bridge.stop()
    # the point now stored reaches the chart once, whatever the page reads again
    snap = wait_chart(page, KEY, lambda c: c["series"][0]["points"] == FIRST + 1, "the curve after the write")
    assert snap["raw"] is True
    assert not page.page_errors, page.page_errors
