"""Zoom asks the bridge again, once per chart: ten runs overlaid, each drawn
exactly as its raw points would draw (M4 of every pixel column, or every raw
point up close) at every zoom, on DuckDB and on InfluxDB (whose answers snap
their columns to rollup buckets: the chart shows the range they answer); a
zoom that a newer one supersedes is aborted."""

from __future__ import annotations

import contextlib
import pathlib
import urllib.parse
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store import open_store
from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.m4.query import frame, points_result
from page_helpers import chart, hover_tooltip, open_page, page_context, plot_center, wait_chart
from servers import wait_until

RUNS = 10
N = 100_000
KEY = "signal"
PROJECT = "zoom"
T0 = 1_700_000_000_000_000_000
MANY = "/api/v1/series?"


def _runs() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each run's (wall ns, values): a sine with noise, a +1000 spike and a -1000 dip away from the middle."""
    out = {}
    for r in range(RUNS):
        rng = np.random.default_rng(20251202 + r)
        values = np.sin(np.arange(N) / (2_000.0 + 300 * r)) + rng.normal(0, 0.05, N)
        values[int(rng.integers(N // 10, 3 * N // 10))] = 1000.0
        values[int(rng.integers(7 * N // 10, 9 * N // 10))] = -1000.0
        out[f"run-{r}"] = (T0 + np.arange(N, dtype=np.int64) * 1_000_000, values)
    return out


def _write(url: str, runs: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
    """Straight into the store (the page is what this test is about; the client's path has tests of its own)."""
    store = open_store(url)
    try:
        for r, (run, (walls, values)) in enumerate(runs.items()):
            steps = np.arange(N, dtype=np.int64)
            batches = [DecodedBatch(f"zoom-{r}".encode(), seq + 1, PROJECT, run,
                                    [ScalarColumn(KEY, steps[a:a + 20_000], walls[a:a + 20_000], values[a:a + 20_000])],
                                    [], [], None, None, 0)
                       for seq, a in enumerate(range(0, N, 20_000))]
            store.write(batches)
    finally:
        store.close()


# the x range the chart shows: its axis's extent, the zoom window applied
_SHOWN = """async (key) => {
  const echarts = await import(new URL('assets/echarts.js', document.baseURI).href);
  const chart = echarts.getInstanceByDom(document.querySelector(`[data-key="${key}"] .chart-canvas`));
  return chart.getModel().getComponent('xAxis', 0).axis.scale.getExtent();
}"""


def _assert_drawn_as_raw(page: Any, runs: dict, window: list[float] | None, width: int, what: str,
                         snap: bool = False) -> None:
    """Every curve, inside the window (as the bridge answered it: ``snap``, widened to whole grid units,
    and then the range the chart shows), holds exactly the M4 of its raw points at the plot width (all of
    them when few), and runs to the raw neighbours just outside it: the line is pixel for pixel the raw one."""
    drawn = {c["run"]: c for c in page.evaluate("k => window.__curvestream.curvePoints(k)", KEY)}
    assert set(drawn) == set(runs), what
    steps = np.arange(N, dtype=np.int64)
    for run, (walls, values) in runs.items():
        q = SeriesQuery(PROJECT, run, KEY, "step", *(window or (None, None)), width, snap)
        f = frame(q, int(walls[0]), (0, N - 1), None)
        if snap:
            assert page.evaluate(_SHOWN, KEY) == [f.start, f.end], f"{what}: the chart shows the answered range"
        ref = points_result(f, steps, walls, values)
        x, y = np.array(drawn[run]["x"]), np.array(drawn[run]["y"])
        inside = (x >= f.lo) & (x <= f.hi)
        lo = 1 if ref.before is not None else 0
        hi = len(ref.x) - (1 if ref.after is not None else 0)
        assert drawn[run]["raw"] == ref.raw, f"{what}: {run} raw"
        assert np.array_equal(x[inside], ref.x[lo:hi]) and np.array_equal(y[inside], ref.y[lo:hi]), f"{what}: {run}"
        if ref.before is not None:
            assert (x[~inside & (x < f.lo)][-1], y[~inside & (x < f.lo)][-1]) == (ref.x[0], ref.y[0]), what
        if ref.after is not None:
            assert (x[~inside & (x > f.hi)][0], y[~inside & (x > f.hi)][0]) == (ref.x[-1], ref.y[-1]), what


@pytest.mark.parametrize("engine", ["duckdb", "influxdb"])
def test_ten_runs_overlaid_ask_once_per_zoom_draw_their_raw_line_at_every_zoom_and_abort_superseded_zooms(
        engine, browser, bridge_factory, tmp_path, output_dir, request):
    runs = _runs()
    url = f"duckdb:///{tmp_path / 's.duckdb'}" if engine == "duckdb" else \
        request.getfixturevalue("influxd").store_url("page_zoom")
    _write(url, runs)
    bridge = bridge_factory(url, "")
    snap = engine == "influxdb"  # the bridge's default there: whole grid units a column, the range widened

    # a wide high-DPI screen: the plot is ~2,900 device pixels (raw points up to ~11,600 in view)
    with page_context(browser, 1600, 900, 2) as page:
        sent: list[str] = []
        failed: list[str] = []
        page.on("request", lambda r: sent.append(r.url) if "/series?" in r.url else None)
        page.on("requestfailed", lambda r: failed.append(r.url) if "/series?" in r.url else None)
        open_page(page, bridge, runs=tuple((PROJECT, r) for r in runs))

        def ready(predicate, what: str) -> dict:
            return wait_chart(page, KEY, lambda c: len(c["series"]) == RUNS and predicate(c), what)

        def width() -> int:
            return int(urllib.parse.parse_qs(urllib.parse.urlsplit(sent[-1]).query)["width"][0])

        overview = ready(lambda c: all(s["points"] > 0 for s in c["series"]), "ten overviews")
        assert [u for u in sent if MANY in u] == sent and len(sent) == 1, f"one request on open: {sent}"
        assert overview["raw"] is False
        assert all(s["yMax"] == 1000.0 and s["yMin"] == -1000.0 for s in overview["series"]), "M4 keeps extremes"
        _assert_drawn_as_raw(page, runs, None, width(), "the overview", snap)
        page.screenshot(path=str(output_dir / f"page-zoom-1-overview-{engine}.png"))

        x, y = plot_center(page, KEY)

        def notch(delta: float) -> list[float] | None:
            """One wheel notch; wait until its answer is drawn; exactly one request asked for it."""
            before, asked = page.evaluate("window.__curvestream.zoom"), len(sent)
            page.mouse.move(x, y)
            page.mouse.wheel(0, delta)
            wait_until(lambda: page.evaluate("window.__curvestream.zoom") != before, 10, "the zoom to follow the wheel")
            window = page.evaluate("window.__curvestream.zoom")
            ready(lambda c: c["window"] == window and len(sent) > asked, f"the answer for {window}")
            assert len(sent) == asked + 1 and MANY in sent[-1], f"one request per zoom: {sent[asked:]}"
            return window

        # a third of 100,000 steps is more than 4 points per pixel column (M4), a tenth is less (raw points)
        for target, name, raw in ((N / 3, "a third", False), (N / 10, "a tenth", True)):
            for _ in range(60):
                window = notch(-200)
                if window and window[1] - window[0] <= target:
                    break
            else:
                raise AssertionError(f"the wheel did not zoom into {name} of the runs: {window}")
            shown = chart(page, KEY)
            assert shown["raw"] is raw, f"{name}: raw {raw}"
            _assert_drawn_as_raw(page, runs, window, width(), f"zoomed to {name} {window}", snap)
        assert all(s["yMax"] < 1000.0 and s["yMin"] > -1000.0 for s in shown["series"]), "extremes lie outside"
        page.screenshot(path=str(output_dir / f"page-zoom-2-a-tenth-raw-{engine}.png"))

        # a zoom superseded before its answer came: its request is aborted, the newer one drawn
        held: list[Any] = []
        page.route("**/api/v1/series?*", lambda route: held.append(route))
        page.mouse.move(x, y)
        for n in (1, 2):
            page.mouse.wheel(0, 200)
            wait_until(lambda n=n: page.wait_for_timeout(20) or len(held) == n, 10, f"zoom request {n} to be sent")
        wait_until(lambda: page.wait_for_timeout(20) or held[0].request.url in failed, 10,
                   "the superseded zoom's request to be aborted")
        assert held[1].request.url not in failed
        held[1].continue_()
        page.unroute("**/api/v1/series?*")
        window = page.evaluate("window.__curvestream.zoom")
        ready(lambda c: c["window"] == window and not any(s["points"] == 0 for s in c["series"]), "the newer zoom")
        _assert_drawn_as_raw(page, runs, window, width(), f"after the superseded zoom {window}", snap)

        asked = len(sent)
        page.get_by_test_id(f"chart-{KEY}").get_by_test_id("chart-reset-zoom").click()
        out = ready(lambda c: c["window"] is None and c["raw"] is False, "the whole runs again")
        assert len(sent) == asked + 1, f"one request to zoom out: {sent[asked:]}"
        assert all(s["yMax"] == 1000.0 and s["yMin"] == -1000.0 for s in out["series"]), "the extremes are back"
        _assert_drawn_as_raw(page, runs, None, width(), "zoomed out", snap)
        page.screenshot(path=str(output_dir / f"page-zoom-3-zoomed-out-{engine}.png"))
        assert not page.page_errors, page.page_errors


@contextlib.contextmanager
def _one_run_overview(browser: Any, bridge_factory: Any, tmp_path: pathlib.Path) -> Iterator[Any]:
    """A page on the first run alone, its overview drawn."""
    runs = dict(list(_runs().items())[:1])
    _write(f"duckdb:///{tmp_path / 's.duckdb'}", runs)
    bridge = bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", "")
    with page_context(browser, 1280, 800, 1) as page:
        open_page(page, bridge, runs=tuple((PROJECT, r) for r in runs))
        wait_chart(page, KEY, lambda c: len(c["series"]) == 1 and c["series"][0]["points"] > 0, "the overview")
        yield page


def test_a_wheel_zoom_hides_the_tooltip_until_the_pointer_moves_again(browser, bridge_factory, tmp_path):
    """The values under the pointer change with the window: ECharts would lay its tooltip out again after
    every redraw of the gesture (a layout of the whole page each time); the tooltip goes instead."""
    with _one_run_overview(browser, bridge_factory, tmp_path) as page:
        hover_tooltip(page, KEY, 1)
        tooltip = page.get_by_test_id(f"chart-{KEY}").locator(".cs-tt-rows")
        before = page.evaluate("window.__curvestream.zoom")
        page.mouse.wheel(0, -200)
        wait_until(lambda: page.evaluate("window.__curvestream.zoom") != before, 10, "the zoom to follow the wheel")
        window = page.evaluate("window.__curvestream.zoom")
        wait_chart(page, KEY, lambda c: c["window"] == window, f"the answer for {window}")
        # ECharts fades a hidden tooltip out after its hide delay (100 ms: the answer may be drawn sooner), and
        # shows a kept one again a task after it redraws: gone, and still gone two frames and their tasks later
        wait_until(lambda: not tooltip.is_visible(), 10, "the tooltip to go with the zoom")
        page.evaluate("() => new Promise((r) => requestAnimationFrame(() => setTimeout(() => "
                      "requestAnimationFrame(() => setTimeout(r, 0)), 0)))")
        assert not tooltip.is_visible(), "the tooltip came back after the answer was drawn"
        assert len(hover_tooltip(page, KEY, 1)) == 1  # the pointer moves: it is back


# Counts the options the page sets on a chart's ECharts instance (reached through the module the page loaded),
# and keeps each one's dataZoom: what the page draws, apart from ECharts' own drawing of a gesture.
_COUNT_SET_OPTIONS = """async (key) => {
  const echarts = await import(new URL('assets/echarts.js', document.baseURI).href);
  const chart = echarts.getInstanceByDom(document.querySelector(`[data-key="${key}"] .chart-canvas`));
  window.__setOptions = [];
  if (chart.__counted) return; // wrapped by an earlier call: its list starts again
  chart.__counted = true;
  const setOption = chart.setOption.bind(chart);
  chart.setOption = (option, ...rest) => {
    window.__setOptions.push({ dataZoom: option.dataZoom ?? null });
    return setOption(option, ...rest);
  };
}"""


def _gesture_with_its_query_held(page: Any, delta: int) -> tuple[Any, list[dict], str, list[dict]]:
    """One wheel notch (``delta``) over the plot with the zoom's query held back: the new window, the options
    the page set on the chart before the answer came (two frames and their tasks after the gesture, when
    anything the page would set after it is set), the chart's state then, and the options set once the
    answer is drawn."""
    before = page.evaluate("window.__curvestream.zoom")
    page.evaluate(_COUNT_SET_OPTIONS, KEY)
    held: list[Any] = []
    def zooms(url):
        return MANY in url
    page.route(zooms, lambda route: held.append(route))
    x, y = plot_center(page, KEY)
    page.mouse.move(x, y)
    page.mouse.wheel(0, delta)
    wait_until(lambda: page.evaluate("window.__curvestream.zoom") != before and held, 10, "the zoom and its query")
    window = page.evaluate("window.__curvestream.zoom")
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => setTimeout(() => "
                  "requestAnimationFrame(() => setTimeout(r, 0)), 0)))")
    early, state = page.evaluate("window.__setOptions"), chart(page, KEY)["state"]
    for route in held:
        route.continue_()
    page.unroute(zooms)
    wait_chart(page, KEY, lambda c: c["state"] == "ready" and c["window"] == window, f"the answer for {window}")
    return window, early, state, page.evaluate("window.__setOptions")


def test_a_wheel_zoom_is_drawn_by_echarts_alone_until_its_answer_comes_and_the_answer_holds_the_window(
        browser, bridge_factory, tmp_path):
    """ECharts draws a gesture's window itself. While the zoom's query is out the page sets nothing on the
    chart (drawing the same lines once more would take tens of ms of a core the bridge needs meanwhile); the
    answer's drawing then holds the window in x values, so live points growing the axis cannot shift it."""
    with _one_run_overview(browser, bridge_factory, tmp_path) as page:
        window, early, state, sets = _gesture_with_its_query_held(page, -200)
        assert window is not None
        assert early == [], "the page drew the gesture's window again"
        assert state == "loading"
        assert len(sets) == 1, sets
        assert [{k: z[k] for k in ("startValue", "endValue")} for z in sets[0]["dataZoom"]] == \
            [{"startValue": window[0], "endValue": window[1]}] * 2, "the answer's drawing holds the window in x values"


def test_a_wheel_zoom_back_out_to_everything_is_drawn_by_echarts_alone_too(browser, bridge_factory, tmp_path):
    """One notch in, then one out: back to the whole run. The lines drawn for the zoomed window reach a
    window's width past each side of it, so here they hold every point: ECharts' own drawing of the gesture
    is the whole picture, and the page draws nothing more until the answer comes (it used to draw every
    line again at once, ~40 ms of ten runs' lines in the wheel's task, beside the bridge's answer)."""
    with _one_run_overview(browser, bridge_factory, tmp_path) as page:
        x, y = plot_center(page, KEY)
        page.mouse.move(x, y)
        page.mouse.wheel(0, -100)
        wait_until(lambda: page.evaluate("window.__curvestream.zoom") is not None, 10, "the zoom in")
        window = page.evaluate("window.__curvestream.zoom")
        wait_chart(page, KEY, lambda c: c["state"] == "ready" and c["window"] == window, f"the answer for {window}")
        window, early, state, sets = _gesture_with_its_query_held(page, 100)
        assert window is None, "one notch out after one in shows the whole run"
        assert early == [], "the page drew the lines again for the zoom back out"
        assert state == "loading"
        assert len(sets) == 1, sets
        assert [{k: z.get(k) for k in ("start", "end")} for z in sets[0]["dataZoom"]] == \
            [{"start": 0, "end": 100}] * 2, "the answer's drawing holds the whole run"
