"""A run with 10,000 keys (``layer.0/…`` to ``layer.99/…``, 100 each): the bridge
lists its keys in sections, searched and paged (``GET /api/v1/keys``); the
page makes the charts near the screen only and disposes them far from it; a
search finds a key and its chart draws; sections fold, and the URL keeps
the folds."""

from __future__ import annotations

import numpy as np

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store import open_store
from fleet_store import T0, add_keys
from page_helpers import open_page, page_context, wait_chart
from servers import wait_until

LAYERS, STATS = 100, 100
KEYS = [f"layer.{i}/stat{j:02d}" for i in range(LAYERS) for j in range(STATS)]
DRAWN = {"layer.42/stat07": 300, "layer.0/stat00": 200, "layer.99/stat99": 100}  # keys with points: how many


def _store(path) -> None:
    store = open_store(f"duckdb:///{path}")
    try:
        columns = []
        for key, n in DRAWN.items():
            steps = np.arange(n, dtype=np.int64)
            columns.append(ScalarColumn(key, steps, T0 + steps * 1_000_000, np.cos(steps / 10.0)))
        store.write([DecodedBatch(b"wide", 1, "keys", "wide", columns, [], [], None, None, 0)])
    finally:
        store.close()
    add_keys(path, "keys", "wide", KEYS)


def sections(page) -> list[dict]:
    return page.evaluate("window.__curvestream.sections")


def cards(page) -> list[dict]:
    """The chart cards in the page now, with where they are."""
    return page.evaluate("""() => [...document.querySelectorAll('.chart-card')].map(c => {
        const r = c.getBoundingClientRect();
        return {key: c.dataset.key, top: r.top, bottom: r.bottom, canvas: c.querySelector('canvas') !== null};
    })""")


def test_a_run_with_ten_thousand_keys_lists_them_in_sections_and_makes_only_the_charts_near_the_screen(
        browser, bridge_factory, tmp_path):
    _store(tmp_path / "s.duckdb")
    bridge = bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", "")
    with page_context(browser, 1280, 800, 1) as page:
        open_page(page, bridge, runs=(("keys", "wide"),))
        wait_until(lambda: len(sections(page)) == LAYERS, 60, "a section per layer")
        laid = sections(page)
        assert [s["name"] for s in laid] == [f"layer.{i}" for i in range(LAYERS)], "natural order"
        assert all(s["keys"] == STATS and not s["folded"] for s in laid)
        assert page.get_by_test_id("charts-info").text_content() == f"{len(KEYS)} of {len(KEYS)} metrics · 1 run"
        wait_chart(page, "layer.0/stat00", lambda c: c["series"][0]["points"] == 200, "the first chart")

        # charts exist near the screen only: a few blocks' worth, none far below
        made = cards(page)
        assert 0 < len(made) <= 60, len(made)
        assert all(c["top"] < 800 + 2 * 2400 for c in made), "no chart far below the screen"
        assert sum(c["canvas"] for c in made) <= len(made)

        # the bottom of the page: the last layer's charts come, the first layer's go
        page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
        wait_chart(page, "layer.99/stat99", lambda c: c["series"][0]["points"] == 100, "the last chart", timeout=60)
        wait_until(lambda: page.evaluate("k => window.__curvestream.chart(k)", "layer.0/stat00") is None, 30,
                   "the first chart disposed far above")
        made = cards(page)
        assert 0 < len(made) <= 60 and all(c["bottom"] > -2 * 2400 for c in made), made[:3]
        holding = [i for i, s in enumerate(sections(page)) if s["charts"]]
        assert holding == list(range(LAYERS - len(holding), LAYERS)) and len(holding) <= 5, holding

        # a search on the bridge: words, a glob, a regular expression
        search = page.get_by_test_id("metric-filter")
        search.fill("layer.42/stat07")
        wait_until(lambda: [(s["name"], s["keys"]) for s in sections(page)] == [("layer.42", 1)], 30, "the key found")
        wait_chart(page, "layer.42/stat07", lambda c: c["series"][0]["points"] == 300, "the found key's chart")
        assert page.get_by_test_id("charts-info").text_content() == f"1 of {len(KEYS)} metrics · 1 run"
        search.fill("layer.4?/stat0[0-4]")
        wait_until(
            lambda: [(s["name"], s["keys"]) for s in sections(page)] == [(f"layer.{i}", 5) for i in range(40, 50)],
            30,
            "the glob's keys",
        )
        search.fill("/^layer\\.(7|77)/stat99$/")
        wait_until(lambda: [(s["name"], s["keys"]) for s in sections(page)] == [("layer.7", 1), ("layer.77", 1)],
                   30, "the regular expression's keys")
        search.fill("")
        wait_until(lambda: len(sections(page)) == LAYERS, 30, "every section again")

        # fold the first section: its charts go, the URL keeps it, a reload keeps it folded
        page.evaluate("window.scrollTo(0, 0)")
        wait_until(lambda: sections(page)[0]["charts"], 30, "the first section's charts again")
        page.locator('[data-testid="chart-section"][data-section="layer.0"] [data-testid="section-toggle"]').click()
        wait_until(lambda: sections(page)[0]["folded"] and not sections(page)[0]["charts"], 10, "layer.0 folded")
        assert "fold=layer.0" in page.url
        wait_until(lambda: any(k.startswith("layer.1/") for k in sections(page)[1]["charts"]), 30,
                   "the next section's charts move up")
        page.goto(page.url)
        wait_until(lambda: len(sections(page)) == LAYERS, 60, "the sections after a reload")
        assert sections(page)[0]["folded"] and not sections(page)[0]["charts"], "still folded after a reload"
        first = page.locator('[data-testid="chart-section"][data-section="layer.0"]')
        assert first.get_attribute("data-folded") == "true"
        assert not page.page_errors, page.page_errors
