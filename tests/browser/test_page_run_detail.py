"""The Histograms and Logs tabs show one selected run's distributions over steps and its text lines,
kept current by the live socket's pushes, or by polling for newer lines while the socket is down."""

from __future__ import annotations

import logging
import re
import urllib.parse
from typing import Any

import numpy as np

from page_helpers import chart, duckdb_bridge, open_page, page_context, start_run, wait_stored
from servers import wait_until

HIST_STEPS = 20
LINES = [(logging.INFO, "epoch 1 started"), (logging.DEBUG, "batch 17 took 31 ms"),
         (logging.WARNING, "lr reduced to 0.01"), (logging.ERROR, "loss is NaN, skipping batch"),
         (0, 'sample: "the cat sat"'), (logging.CRITICAL, "out of memory")]


def test_the_histograms_and_logs_tabs_show_a_runs_distributions_and_text_lines(
        page, browser, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    rng = np.random.default_rng(7)
    run = start_run(mosquitto, bridge, spool_dir, "detail", "r1")
    try:
        _check_tabs(page, bridge, run, rng, output_dir)
        _check_logs_without_the_socket(browser, bridge, run)
    finally:
        run.finish()
    assert not page.page_errors, page.page_errors


def _texts_requests(page: Any) -> list[str]:
    """The URLs of the page's GET …/texts requests from now on."""
    urls: list[str] = []
    page.on("request", lambda request: urls.append(request.url) if "/texts" in request.url else None)
    return urls


def _after_ms(url: str) -> float | None:
    values = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("after_ms")
    return float(values[0]) if values else None


def _check_tabs(page, bridge, run, rng, output_dir) -> None:
    for step in range(HIST_STEPS):
        run.log({"loss": 1.0 / (step + 1)}, step=step)
        # weights spread out as training goes on
        run.log_histogram("layer1/weights", rng.normal(0, 0.1 + step * 0.05, 2000), step=step)
    for i, (level, text) in enumerate(LINES):
        run.log_text("log" if level else "samples", text, step=100 + i, level=level)
    wait_stored(bridge, "detail", "r1", {"loss": HIST_STEPS, "layer1/weights": HIST_STEPS, "log": 5, "samples": 1})

    open_page(page, bridge, runs=(("detail", "r1"),))
    page.wait_for_selector('[data-testid="chart-loss"][data-state="ready"]')
    # histograms and texts are not curves: no chart of their own
    assert page.get_by_test_id("chart-layer1/weights").count() == 0
    assert page.get_by_test_id("chart-log").count() == 0

    page.get_by_test_id("tab-histograms").click()
    heatmap = page.get_by_test_id("histogram-layer1/weights")
    wait_until(lambda: heatmap.get_attribute("data-state") == "ready", 30, "the histogram heatmap")
    assert heatmap.get_attribute("data-steps") == str(HIST_STEPS)
    assert int(heatmap.get_attribute("data-bins")) > 10
    assert page.get_by_test_id("chart-loss").is_hidden()
    assert "tab=histograms" in page.url
    page.screenshot(path=str(output_dir / "page-histograms.png"))
    # a new histogram is pushed as a notice: the open heatmap loads it (no points are logged)
    run.log_histogram("layer1/weights", rng.normal(0, 1.2, 2000), step=HIST_STEPS)
    wait_until(lambda: heatmap.get_attribute("data-steps") == str(HIST_STEPS + 1), 30, "the pushed histogram")

    page.get_by_test_id("tab-logs").click()
    log = page.get_by_test_id("text-log")
    wait_until(lambda: log.get_attribute("data-count") == str(len(LINES)), 30, "every text line")
    rows = log.get_by_test_id("text-row")
    assert [rows.nth(i).get_attribute("data-step") for i in range(rows.count())] == [str(100 + i) for i in range(6)], \
        "oldest first, the newest at the bottom"
    assert [rows.nth(i).get_attribute("data-level") for i in range(rows.count())] == \
        ["info", "debug", "warning", "error", "text", "critical"]
    assert rows.nth(3).locator(".text-body").inner_text() == "loss is NaN, skipping batch"
    # the newest line is in view
    assert page.evaluate("""() => { const l = document.querySelector('[data-testid="text-log"]');
                                   return l.scrollTop + l.clientHeight >= l.scrollHeight - 2; }""")
    # level colours come from the level classes
    colours = page.evaluate("""() => [...document.querySelectorAll('[data-testid="text-row"] .text-body')]
                                     .map(e => getComputedStyle(e).color)""")
    assert colours[3] != colours[0], "an error line is coloured apart from an info line"
    page.screenshot(path=str(output_dir / "page-logs.png"))

    # the run goes on: its new line is pushed over the live socket and shows up at the bottom of the
    # open log without a request; the run's live points do not make the log load again either
    texts_requests = _texts_requests(page)
    run.log_text("log", "epoch 2 started", step=200, level=logging.INFO)
    run.log({"loss": 0.01}, step=200)
    wait_until(lambda: log.get_attribute("data-count") == str(len(LINES) + 1), 30, "the pushed line")
    assert rows.last.get_attribute("data-step") == "200"
    wait_until(lambda: chart(page, "loss")["series"][0]["drawn"] == HIST_STEPS + 1, 30, "the pushed point")
    assert texts_requests == [], f"the pushed line was fetched: {texts_requests}"

    # opening the log again asks only for the lines newer than the newest one shown
    newest_ms = float(rows.last.get_attribute("data-time-ms"))
    page.get_by_test_id("tab-charts").click()
    page.get_by_test_id("tab-logs").click()
    wait_until(lambda: len(texts_requests) == 1, 10, "the log's reload")
    assert _after_ms(texts_requests[0]) == newest_ms, texts_requests
    assert log.get_attribute("data-count") == str(len(LINES) + 1)

    page.get_by_test_id("text-level").select_option(label="warning and up")
    wait_until(lambda: log.get_attribute("data-count") == "3", 10, "warnings and worse")
    assert [rows.nth(i).get_attribute("data-level") for i in range(3)] == ["warning", "error", "critical"]
    page.get_by_test_id("text-search").fill("nan")
    wait_until(lambda: log.get_attribute("data-count") == "1", 10, "the NaN line")
    page.get_by_test_id("text-search").fill("")
    page.get_by_test_id("text-level").select_option("0")
    page.get_by_test_id("text-key").select_option("samples")
    wait_until(lambda: log.get_attribute("data-count") == "1", 10, "the samples key only")
    assert rows.first.get_attribute("data-level") == "text"

    page.get_by_test_id("tab-charts").click()
    page.wait_for_selector('[data-testid="chart-loss"][data-state="ready"]')
    assert "tab=" not in page.url
    assert len(texts_requests) == 1, f"only opening the log again asked the bridge: {texts_requests}"


def _check_logs_without_the_socket(browser, bridge, run) -> None:
    """With the live socket refused, the open log polls for the lines newer than its newest one."""
    with page_context(browser, 1280, 800, 1) as page:
        page.route_web_socket(re.compile(r"/api/v1/live"), lambda ws: ws.close())
        open_page(page, bridge, runs=(("detail", "r1"),), tab="logs")
        log = page.get_by_test_id("text-log")
        wait_until(lambda: log.get_attribute("data-count") == str(len(LINES) + 1), 30, "the lines so far")
        assert page.evaluate("window.__curvestream.live") != "open"
        newest_ms = float(log.get_by_test_id("text-row").last.get_attribute("data-time-ms"))
        texts_requests = _texts_requests(page)

        run.log_text("log", "epoch 3 started", step=300, level=logging.INFO)
        wait_until(lambda: log.get_attribute("data-count") == str(len(LINES) + 2), 40, "the polled line")
        assert log.get_by_test_id("text-row").last.locator(".text-body").inner_text() == "epoch 3 started"
        assert texts_requests and all(_after_ms(url) is not None for url in texts_requests), texts_requests
        assert _after_ms(texts_requests[0]) == newest_ms
        assert not page.page_errors, page.page_errors
