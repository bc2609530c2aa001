"""100 live runs on one chart of the page, over one WebSocket: every run's new
points reach the page (posted to the bridge's ingest endpoint, pushed as they
are decoded), none twice."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from curvestream_wire.v1 import batch_pb2, run_pb2

from fleet_store import T0
from page_helpers import drawn_series, open_page, page_context, wait_chart
from servers import wait_until

RUNS = [f"live-{i:03d}" for i in range(100)]
KEY = "loss"
FIRST = 10  # points before the page opens
ROUNDS, PER_ROUND = 5, 20

# every WebSocket the page opens, the subscriptions the bridge acknowledged, the steps each live "points"
# message brings, per run
SOCKETS_JS = """(() => {
  const log = { sockets: 0, subscribed: [], steps: {} };
  Object.defineProperty(window, '__sockets', { value: log });
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      log.sockets++;
      this.addEventListener('message', (event) => {
        const m = JSON.parse(event.data);
        if (m.type === 'subscribed') log.subscribed.push(m.runs);
        if (m.type !== 'points') return;
        for (const s of m.series) if (s.key === 'loss') (log.steps[m.run] ??= []).push(...s.step);
      });
    }
  };
})();"""


def _batch(run: str, seq: int, first: int, n: int, meta: bool = False) -> bytes:
    b = batch_pb2.Batch(version=1, producer_id=run.encode().ljust(16, b"."), seq=seq, project="fleet", run=run)
    steps = list(range(first, first + n))
    b.scalars.add(key=KEY, steps=steps, wall_ns=[T0 + s * 1_000_000 for s in steps],
                  values=[float(s) + RUNS.index(run) for s in steps])
    if meta:
        b.meta.CopyFrom(run_pb2.RunMeta(project="fleet", run=run, config_json="{}"))
    return b.SerializeToString()


def test_a_hundred_live_runs_reach_the_page_over_one_socket_every_point_once(browser, bridge_factory, tmp_path):
    # frames of a second: each holds points of every run (as 50 ms frames do when 100 runs log 100 steps/s)
    bridge = bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", "", live_frame_ms="1000")
    with httpx.Client(base_url=bridge.url, timeout=60) as http, ThreadPoolExecutor(8) as pool:
        def post(body: bytes) -> None:
            assert http.post("/api/v1/ingest", content=body,
                             headers={"Content-Type": "application/x-protobuf"}).status_code == 200

        def post_all(bodies: list[bytes]) -> None:  # side by side: the bridge stores them in a few rounds
            list(pool.map(post, bodies))

        post_all([_batch(run, 1, 0, FIRST, meta=True) for run in RUNS])
        with page_context(browser, 1280, 800, 1, init_script=SOCKETS_JS) as page:
            open_page(page, bridge, runs=tuple(("fleet", r) for r in RUNS))
            wait_chart(
                page,
                KEY,
                lambda c: len(c["series"]) == len(RUNS) and all(s["points"] == FIRST for s in c["series"]),
                "a hundred runs drawn",
                timeout=120,
            )
            # the chart's own legend: the top runs by last value, a search, the hovered run highlighted
            legend = page.get_by_test_id("card-legend")
            items = legend.get_by_test_id("legend-item")
            assert [items.nth(i).get_attribute("title") for i in range(items.count())] == RUNS[::-1][:10]
            legend.get_by_test_id("legend-search").fill("live-05")
            wait_until(lambda: sorted(items.nth(i).get_attribute("title") for i in range(items.count())) ==
                       [f"live-05{i}" for i in range(10)], 10, "the runs the search finds")
            items.first.hover()
            lit = items.first.get_attribute("data-id")
            wait_until(lambda: drawn_series(page, KEY)[f"{lit}|raw"]["lineOpacity"] == 1, 10, "the hovered run lit")
            assert {s["lineOpacity"] for k, s in drawn_series(page, KEY).items() if k != f"{lit}|raw"} == {0.08}
            legend.get_by_test_id("legend-search").fill("")
            page.mouse.move(5, 5)
            wait_until(lambda: page.evaluate("window.__curvestream.live") == "open", 30, "the live socket")
            wait_until(lambda: len(RUNS) in page.evaluate("window.__sockets.subscribed"), 30, "the 100 runs subscribed")
            for r in range(ROUNDS):  # a round at a time: each run's points in order
                post_all([_batch(run, 2 + r, FIRST + r * PER_ROUND, PER_ROUND) for run in RUNS])
            total = FIRST + ROUNDS * PER_ROUND
            wait_chart(page, KEY, lambda c: all(s["points"] == total for s in c["series"]), "every new point drawn",
                       timeout=120)
            log = page.evaluate("window.__sockets")
            drawn = page.evaluate("k => window.__curvestream.curvePoints(k)", KEY)
            errors = list(page.page_errors)
    assert log["sockets"] == 1, "one WebSocket for all the runs"
    for run in RUNS:
        assert sorted(log["steps"].get(run, [])) == list(range(FIRST, total)), f"{run}: each new point pushed once"
    assert len(drawn) == len(RUNS)
    for curve in drawn:
        assert curve["x"] == list(range(total)), f"{curve['run']}: every point drawn once, in order"
        assert curve["y"] == [float(s) + RUNS.index(curve["run"]) for s in range(total)]
    assert not errors, errors
