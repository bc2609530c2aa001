"""A page opened with several runs named in its URL asks the bridge for their
keys once (``GET /api/v1/keys``), not once per run, and charts every key of
every run, hostile names and a run the store does not know included; a run
selected afterwards makes the keys of the selection be asked for once more.
The runs table and those keys are asked for while the page's main script is
still loading."""

from __future__ import annotations

import pathlib
import urllib.parse
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store import open_store
from page_helpers import drawn_series, open_page, page_context, page_url, wait_chart
from servers import wait_until

PROJECT = "once"
T0 = 1_700_000_000_000_000_000
# run -> its keys: a key all share, keys of their own, hostile names
RUNS = {"a": ["loss", "acc"], "lr/0.1 bs=64, 50%, ü": ["loss", 'grad "norm", a=b'], "c": ["loss"], "d": ["loss", "acc"],
        "e": ["loss"], "later": ["loss", "lr"]}
OPENED = ["a", "lr/0.1 bs=64, 50%, ü", "c", "d", "e", "nowhere"]


def _write(path: pathlib.Path) -> None:
    store = open_store(f"duckdb:///{path}")
    try:
        for r, (run, keys) in enumerate(RUNS.items()):
            steps = np.arange(50, dtype=np.int64)
            columns = [ScalarColumn(key, steps, T0 + steps * 1_000_000, np.cos(steps / (5.0 + r + k)))
                       for k, key in enumerate(keys)]
            store.write([DecodedBatch(f"once-{r}".encode(), 1, PROJECT, run, columns, [], [], None, None, 0)])
    finally:
        store.close()


def _runs_asked(url: str) -> list[str]:
    return [urllib.parse.unquote(v) for v in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["run"]]


@pytest.fixture
def bridge(bridge_factory, tmp_path):
    """A bridge on a store that holds the runs of ``RUNS``."""
    _write(tmp_path / "s.duckdb")
    return bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", "")


def test_a_page_opened_with_several_runs_asks_for_their_keys_once_and_charts_every_key(browser, bridge):
    with page_context(browser, 1280, 800, 1) as page:
        asked: list[str] = []
        page.on("request", lambda r: asked.append(r.url) if urllib.parse.urlsplit(r.url).path in
                ("/api/v1/keys", "/api/v1/metrics") or "/metrics" in r.url else None)
        open_page(page, bridge, runs=tuple((PROJECT, r) for r in OPENED))

        loss = wait_chart(page, "loss", lambda c: len(c["series"]) == len(OPENED) - 1
                          and all(s["points"] == 50 for s in c["series"]), "every known run's loss")
        assert sorted(s["run"] for s in loss["series"]) == sorted(r for r in OPENED if r != "nowhere")
        acc = wait_chart(page, "acc", lambda c: len(c["series"]) == 2, "the runs that have acc")
        assert sorted(s["run"] for s in acc["series"]) == ["a", "d"]
        wait_chart(page, 'grad "norm", a=b', lambda c: len(c["series"]) == 1, "a key of one run")
        assert len(asked) == 1, f"one keys request for all the runs: {asked}"
        assert urllib.parse.urlsplit(asked[0]).path == "/api/v1/keys"
        assert _runs_asked(asked[0]) == [f"{PROJECT}/{r}" for r in OPENED]

        # a run selected in the table: the keys of the selection, once
        page.locator('[data-testid="run-row"][data-run="later"] [data-testid="run-checkbox"]').check()
        wait_chart(page, "lr", lambda c: len(c["series"]) == 1, "the later run's own key")
        wait_until(lambda: len(asked) == 2, 10, "the selection's keys request")
        assert _runs_asked(asked[1]) == [f"{PROJECT}/{r}" for r in OPENED + ["later"]], asked
        wait_chart(page, "loss", lambda c: len(c["series"]) == len(OPENED), "the later run's loss too")
        assert len(asked) == 2, asked


class HeldAsset:
    """The answers to a page asset's requests held back until :meth:`release` (a slow link, as long as it
    takes): what the page asks for meanwhile, it asks for without that asset."""

    def __init__(self, page: Any, pattern: str) -> None:
        self.held: list[Any] = []
        self.released = False
        page.route(pattern, self._route)

    def _route(self, route: Any) -> None:
        if self.released:
            route.continue_()
        else:
            self.held.append(route)

    def release(self) -> None:
        self.released = True
        for route in self.held:
            route.continue_()


def _path_is(path: str) -> Callable[[Any], bool]:
    return lambda request: urllib.parse.urlsplit(request.url).path == path


def test_the_runs_table_and_the_urls_keys_are_asked_for_while_the_main_script_still_loads(browser, bridge):
    with page_context(browser, 1280, 800, 1) as page:
        asked: list[str] = []
        page.on("request", lambda r: asked.append(urllib.parse.urlsplit(r.url).path))
        app_js = HeldAsset(page, "**/assets/app.js")
        with page.expect_request(_path_is("/api/v1/runs/table")), page.expect_request(_path_is("/api/v1/keys")):
            page.goto(page_url(bridge, tuple((PROJECT, r) for r in OPENED)), wait_until="commit")
        app_js.release()  # both were asked for while the main script could not have run
        page.wait_for_function("() => window.__curvestream !== undefined")
        wait_chart(page, "loss", lambda c: len(c["series"]) == len(OPENED) - 1, "every known run's loss")
        # the app took the early answer (the runs table is read once more when the live socket opens)
        assert asked.count("/api/v1/keys") == 1, asked


def test_the_charts_queries_are_sent_while_echarts_still_loads_and_drawn_once_it_has(browser, bridge):
    with page_context(browser, 1280, 800, 1) as page:
        echarts_js = HeldAsset(page, "**/assets/echarts.js")  # ECharts, most of the page's script
        with page.expect_request(_path_is("/api/v1/series")):
            page.goto(page_url(bridge, tuple((PROJECT, r) for r in OPENED)), wait_until="commit")
        echarts_js.release()  # the query went out while ECharts could not have been there
        page.wait_for_function("() => window.__curvestream !== undefined")
        loss = wait_chart(page, "loss", lambda c: len(c["series"]) == len(OPENED) - 1
                          and all(s["points"] == 50 for s in c["series"]), "every known run's loss")
        assert loss["state"] == "ready"
        timings = page.evaluate("""() => performance.getEntriesByType('resource').map(
            e => new URL(e.name).pathname)""")
        assert len([t for t in timings if t.endswith("/assets/echarts.js")]) == 1, "a script of its own, fetched once"
        assert len(drawn_series(page, "loss")) == len(OPENED) - 1, "and the curves are drawn once it is there"
        assert not page.page_errors, page.page_errors
