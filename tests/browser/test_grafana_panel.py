"""The Grafana panel plugin (panels/echarts-plugin/src/grafana) in real Chromium.

No Grafana server runs here, so a harness page stands in for it: requirejs loads the
built ``dist/module.js`` as Grafana's plugin loader does (AMD, with React 18 and the
real ``@grafana/data`` provided), and the panel is rendered with PanelProps-shaped
data made by ``@grafana/data`` itself (``toDataFrame``, ``StreamingDataFrame``).
"""

from __future__ import annotations

import functools
import http.server
import json
import pathlib
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from servers import wait_until

pytestmark = pytest.mark.browser

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "panels" / "echarts-plugin"
DIST = PLUGIN_DIR / "dist"
HARNESS = pathlib.Path(__file__).resolve().parent / "grafana_harness"
PANEL = '[data-testid="curvestream-panel"]'
HOUR_START_MS = 1764669600000  # Date.UTC(2025, 11, 2, 10) in harness.js
SECOND_MS = 1000
BROWSER_ZONE = "Asia/Kolkata"  # UTC+05:30: the browser's own clock differs from UTC by more than whole hours
# every string the chart draws on its canvas (axis labels are drawn, not in the DOM)
RECORD_CANVAS_TEXT = """window.__drawnTexts = [];
const fillText = CanvasRenderingContext2D.prototype.fillText;
CanvasRenderingContext2D.prototype.fillText = function (text, ...rest) {
  window.__drawnTexts.push(String(text));
  return fillText.call(this, text, ...rest);
};"""


def _newest_source_mtime() -> float:
    sources = [PLUGIN_DIR / "build-grafana.mjs", PLUGIN_DIR / "package-lock.json"]
    # every folder the plugin's module imports from (the chart host and the timing table are shared with the page)
    for folder in ("src/grafana", "src/core", "src/types", "src/host", "src/utils", "src/constants"):
        sources.extend(p for p in (PLUGIN_DIR / folder).rglob("*") if p.is_file())
    return max(p.stat().st_mtime for p in sources)


def _npm(*args: str) -> None:
    if not (PLUGIN_DIR / "node_modules").is_dir():
        raise RuntimeError(f"{PLUGIN_DIR}/node_modules is missing: run `npm ci` there (make test does)")
    proc = subprocess.run(["npm", *args], cwd=PLUGIN_DIR, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"npm {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """The harness page, the vendor modules Grafana would provide, and the built plugin, in one folder."""
    module = DIST / "module.js"
    if not module.exists() or module.stat().st_mtime < _newest_source_mtime():
        _npm("run", "build:grafana")
    root = tmp_path_factory.mktemp("grafana-harness")
    proc = subprocess.run(["node", str(HARNESS / "build_vendor.mjs"), str(root / "vendor")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"harness vendor build failed:\n{proc.stdout}\n{proc.stderr}"
    for name in ("index.html", "harness.js"):
        shutil.copy(HARNESS / name, root / name)
    shutil.copytree(DIST, root / "plugin")
    return root


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def base_url(site: pathlib.Path) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, name="grafana-harness-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def open_harness(page: Any, base_url: str) -> None:
    page.goto(base_url + "/index.html")
    page.wait_for_function("window.harnessReady === true || window.harnessError !== undefined", timeout=30_000)
    assert page.evaluate("window.harnessError ?? null") is None


def panel_state(page: Any) -> dict[str, Any]:
    state = page.evaluate(
        f"() => {{ const el = document.querySelector('{PANEL}'); return el ? {{...el.dataset}} : null }}"
    )
    assert state is not None, "the panel is not in the page"
    return state


def points(page: Any) -> dict[str, int]:
    return json.loads(panel_state(page).get("points") or "{}")


def wait_for_points(page: Any, expected: dict[str, int], what: str) -> None:
    wait_until(lambda: points(page) == expected, 20, f"{what}: points {expected}, have {points(page)}")


def coloured_pixels(page: Any, colour: str) -> int:
    """Pixels of the chart's canvas close to a series colour: proof that the curve is drawn, not just counted."""
    return page.evaluate(
        """([selector, hex]) => {
            const canvas = document.querySelector(selector + ' canvas');
            const ctx = canvas.getContext('2d');
            const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
            const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
            let n = 0;
            for (let i = 0; i < data.length; i += 4) {
              const off = Math.abs(data[i] - want[0]) + Math.abs(data[i + 1] - want[1])
                + Math.abs(data[i + 2] - want[2]);
              if (off < 40) n++;
            }
            return n;
        }""",
        [PANEL, colour],
    )


def test_module_is_an_amd_panel_plugin_with_its_options_and_a_migration(page, base_url):
    open_harness(page, base_url)
    info = page.evaluate("window.harness.pluginInfo()")
    assert info["isPanelPlugin"] and info["hasPanel"] and info["hasMigration"]
    assert info["defaults"] == {
        "xAxis": "time", "stepField": "step", "seriesName": "", "smoothing": 0, "smoothingKind": "ema",
        "showEnvelope": True, "logY": False, "ignoreOutliers": False, "zoomSlider": True, "zoomSetsTimeRange": True,
    }
    meta = json.loads((DIST / "plugin.json").read_text())
    assert meta["type"] == "panel" and meta["id"] == "curvestream-echarts-panel"
    assert (DIST / "README.md").exists()
    assert not page.page_errors, page.page_errors


def test_flux_frames_are_drawn_and_a_zoom_sets_the_dashboard_time_range(page, base_url, output_dir):
    open_harness(page, base_url)
    page.evaluate("window.harness.showQuery({ runs: 3, points: 600, options: { smoothing: 0.8 } })")
    wait_for_points(page, {"lr=0.1 train/loss": 600, "lr=0.2 train/loss": 600, "lr=0.3 train/loss": 600},
                    "three Flux frames")
    state = panel_state(page)
    assert state["instance"] and state["update"] == "structure"
    assert state["smoothing"] == "on" and state["envelope"] == "true" and state["xAxis"] == "time"
    assert coloured_pixels(page, "#4e79a7") > 200, "the first run's curve is not on the canvas"
    page.locator("#panel-frame").screenshot(path=str(output_dir / "grafana-panel.png"))

    # the tooltip lists every run at the hovered x
    box = page.locator(f"{PANEL} canvas").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] * 0.5)
    tooltip = page.locator(f"{PANEL} .cs-tt-rows")
    tooltip.wait_for(timeout=10_000)
    names = tooltip.locator(".cs-tt-name").all_inner_texts()
    values = [float(v.split("raw")[0]) for v in tooltip.locator(".cs-tt-value").all_inner_texts()]
    assert sorted(names) == ["lr=0.1 train/loss", "lr=0.2 train/loss", "lr=0.3 train/loss"]
    assert values == sorted(values, reverse=True), "tooltip rows are not sorted by value"

    # zooming with the wheel tells the dashboard the narrower time range
    instance = state["instance"]
    for _ in range(4):
        page.mouse.wheel(0, -300)
    wait_until(lambda: page.evaluate("window.harness.timeRangeChanges.length") > 0, 20, "onChangeTimeRange")
    change = page.evaluate("window.harness.timeRangeChanges[window.harness.timeRangeChanges.length - 1]")
    end_ms = HOUR_START_MS + 599 * SECOND_MS
    assert HOUR_START_MS <= change["from"] < change["to"] <= end_ms
    assert change["to"] - change["from"] < (end_ms - HOUR_START_MS) * 0.9
    zoomed = points(page)
    assert all(0 < n < 600 for n in zoomed.values()), zoomed

    # the dashboard follows: a new time range shows all the data again, in the same chart
    page.evaluate(f"window.harness.setTimeRange({change['from']}, {change['to']})")
    wait_until(lambda: panel_state(page)["window"] == "null", 10, "the zoom to reset on a new time range")
    assert panel_state(page)["instance"] == instance
    assert not page.page_errors, page.page_errors


def test_streaming_frames_are_appended_to_the_same_echarts_instance(page, base_url, output_dir):
    open_harness(page, base_url)
    page.evaluate("window.harness.startStream({ runs: 2, points: 300, maxLength: 400,"
                  " options: { xAxis: 'field', smoothing: 0.6 } })")
    names = ["lr=0.1 train/loss", "lr=0.2 train/loss"]
    wait_for_points(page, dict.fromkeys(names, 300), "the first live frame")
    first = panel_state(page)
    assert first["xAxis"] == "field" and first["update"] == "structure"

    page.evaluate("window.harness.push(50)")
    wait_for_points(page, dict.fromkeys(names, 350), "50 pushed rows")
    after = panel_state(page)
    assert after["instance"] == first["instance"], "the ECharts instance was re-created"
    assert after["update"] == "append"

    # the buffer holds 400 rows: older ones drop off the front, the chart follows
    page.evaluate("window.harness.push(100)")
    wait_for_points(page, dict.fromkeys(names, 400), "a full live buffer")
    assert panel_state(page)["instance"] == first["instance"]
    assert panel_state(page)["update"] == "append"

    page.evaluate("window.harness.setSize(700, 360)")
    wait_until(lambda: page.locator(f"{PANEL} canvas").first.bounding_box()["width"] == 700, 10, "the resize")
    assert panel_state(page)["instance"] == first["instance"]
    assert coloured_pixels(page, "#4e79a7") > 100
    page.locator("#panel-frame").screenshot(path=str(output_dir / "grafana-panel-streaming.png"))

    page.evaluate("window.harness.unmount()")
    assert page.locator(f"{PANEL}").count() == 0
    assert not page.page_errors, page.page_errors



def time_labels(page: Any) -> list[str]:
    """The "HH:MM" x labels of the canvas's latest paint (a paint draws its x labels one after another)."""
    latest: list[str] = []
    for text in reversed(page.evaluate("window.__drawnTexts")):
        if re.fullmatch(r"\d\d:\d\d", text):
            latest.append(text)
        elif latest:
            break
    return sorted(latest)


def wait_for_time_labels(page: Any, hour_minute: str, what: str) -> list[str]:
    """Wait until the x axis is drawn with labels of the ten minutes starting at ``hour_minute`` (e.g. "10:0")."""
    seen: list[str] = []

    def drawn() -> bool:
        seen[:] = time_labels(page)
        return len(seen) >= 3 and all(label.startswith(hour_minute) for label in seen)

    try:
        wait_until(drawn, 10, f"{what}: x labels {hour_minute}x")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; drawn {seen}") from None
    return seen


def hover_tooltip_text(page: Any, at: float) -> tuple[str, list[str]]:
    box = page.locator(f"{PANEL} canvas").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * at, box["y"] + box["height"] * 0.3)
    header = page.locator(f"{PANEL} .cs-tt-x")
    header.wait_for(timeout=10_000)
    return header.inner_text(), page.locator(f"{PANEL} .cs-tt-where").all_inner_texts()


def cursor_at(page: Any, above_bottom: int) -> str:
    """The mouse cursor ECharts shows at the middle of the panel, ``above_bottom`` pixels above its bottom edge."""
    box = page.locator(f"{PANEL} canvas").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] - above_bottom)
    return page.evaluate(f"""() => [...document.querySelectorAll('{PANEL} div')]
                             .map((d) => d.style.cursor).filter(Boolean).join()""")


@pytest.fixture
def zoned_page(browser) -> Iterator[Any]:
    """A page whose browser clock is in BROWSER_ZONE, recording the text drawn on canvases."""
    context = browser.new_context(viewport={"width": 1280, "height": 800}, device_scale_factor=1,
                                  timezone_id=BROWSER_ZONE)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.add_init_script(RECORD_CANVAS_TEXT)
    pg.page_errors = errors
    yield pg
    context.close()


def test_times_follow_the_dashboard_time_zone_and_the_zoom_slider_is_optional(zoned_page, base_url, output_dir):
    page = zoned_page
    open_harness(page, base_url)
    # 10:00..10:10 UTC, Flux frames without a step field
    page.evaluate("window.harness.showQuery({ runs: 1, points: 600, timeZone: 'utc' })")
    wait_for_points(page, {"lr=0.1 train/loss": 600}, "one Flux frame")
    instance = panel_state(page)["instance"]
    assert panel_state(page)["timeZone"] == "utc"
    labels = wait_for_time_labels(page, "10:0", "a dashboard in UTC")
    assert "10:05" in labels, labels
    header, places = hover_tooltip_text(page, 0.5)
    assert header.startswith("2025-12-02 10:0"), header
    # the frames have no step: the rows name the time only, never "step NaN"
    assert places and all(re.fullmatch(r"2025-12-02 10:0\d:\d\d", p) for p in places), places
    page.locator("#panel-frame").screenshot(path=str(output_dir / "grafana-panel-utc.png"))

    page.evaluate("window.harness.setTimeZone('browser')")  # the browser's clock: UTC+05:30
    assert wait_for_time_labels(page, "15:3", "a dashboard in the browser's time zone")
    assert hover_tooltip_text(page, 0.5)[0].startswith("2025-12-02 15:3")

    page.evaluate("window.harness.setTimeZone('Asia/Tokyo')")  # UTC+9, neither UTC nor the browser's
    assert wait_for_time_labels(page, "19:0", "a dashboard in Asia/Tokyo")
    assert hover_tooltip_text(page, 0.5)[0].startswith("2025-12-02 19:0")
    assert panel_state(page)["instance"] == instance, "a time zone change re-created the ECharts instance"

    # the slider sits in the bottom 10..28 px; without it the plot reaches down to the x labels
    assert cursor_at(page, 19) == "grab" and cursor_at(page, 45) == "default"
    page.evaluate("window.harness.setOptions({ zoomSlider: false })")
    wait_until(lambda: cursor_at(page, 45) == "grab", 10, "the plot to take the slider's room")
    assert cursor_at(page, 19) == "default", "the zoom slider is still there"
    assert panel_state(page)["instance"] == instance
    # the wheel still zooms
    box = page.locator(f"{PANEL} canvas").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.4)
    for _ in range(4):
        page.mouse.wheel(0, -300)
    wait_until(lambda: page.evaluate("window.harness.timeRangeChanges.length") > 0, 20,
               "a wheel zoom without the slider")
    page.locator("#panel-frame").screenshot(path=str(output_dir / "grafana-panel-no-slider.png"))
    assert not page.page_errors, page.page_errors
