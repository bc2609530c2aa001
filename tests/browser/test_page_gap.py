"""Points the live socket did not deliver come back: a `gap` message makes the page query the run again."""

from __future__ import annotations

import json

from page_helpers import chart, duckdb_bridge, open_page, start_run, wait_chart, wait_stored
from servers import wait_until

KEY = "loss"


def test_a_gap_message_makes_the_page_query_the_points_it_missed(page, bridge_factory, mosquitto, spool_dir, tmp_path,
                                                                  output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    run = start_run(mosquitto, bridge, spool_dir, "gap", "r", flush_interval_ms=50)
    try:
        for i in range(50):
            run.log({KEY: float(i)}, step=i)
        wait_stored(bridge, "gap", "r", {KEY: 50})

        # the real socket to the real bridge, with points pushes dropped on demand, as the bridge does for a slow client
        drop_points = {"on": False}
        sockets = []

        def relay(ws) -> None:
            server = ws.connect_to_server()

            def to_page(message) -> None:
                if drop_points["on"] and json.loads(message).get("type") == "points":
                    return
                ws.send(message)

            server.on_message(to_page)
            sockets.append(ws)

        page.route_web_socket("**/api/v1/live", relay)
        series_queries: list[str] = []
        page.on("request", lambda r: series_queries.append(r.url) if "/series?" in r.url else None)
        open_page(page, bridge, runs=(("gap", "r"),))
        wait_chart(page, KEY, lambda c: c["series"][0]["points"] == 50, "the first 50 points")
        wait_until(lambda: page.evaluate("window.__curvestream.live") == "open" and sockets, 10, "the live socket")
        page.evaluate("window.__sameDocument = true")

        drop_points["on"] = True
        for i in range(50, 100):
            run.log({KEY: float(i)}, step=i)
        wait_stored(bridge, "gap", "r", {KEY: 100})
        assert chart(page, KEY)["series"][0]["points"] == 50, "the pushes were dropped"
        queries_before = len(series_queries)

        drop_points["on"] = False
        sockets[-1].send(json.dumps({"type": "gap", "project": "gap", "run": "r"}))
        snap = wait_chart(page, KEY, lambda c: c["series"][0]["points"] == 100, "the missed points")
        assert snap["raw"] is True and snap["series"][0]["yMax"] == 99.0
        assert len(series_queries) > queries_before, "the page asked the bridge again"
        assert page.evaluate("window.__sameDocument") is True, "without a reload"
        page.screenshot(path=str(output_dir / "page-gap-recovered.png"))
    finally:
        run.finish()
    assert not page.page_errors, page.page_errors
