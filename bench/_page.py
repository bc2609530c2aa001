"""What the page benchmarks share: Debian's Chromium driven by Playwright, and a
page-side recorder of when the page draws.

The recorder (``RECORDER_JS``, installed before the page's own scripts) keeps,
in ``window.__bench``:

- ``draws``: every change of a chart card's ``data-state`` / ``data-points``
  attributes, with the time. The page writes them in the same task as the
  ECharts ``setOption`` that draws the chart (ECharts draws synchronously
  unless ``lazyUpdate``; the page never asks for it), so the time is when the
  canvas holds the new data. ``points`` is the page's own JSON: series name ->
  points drawn in the visible x range;
- ``paints``: the first task after the rendering of the next animation frame
  after a draw (``frame``: when that frame's callbacks ran; a draw before it is
  in it): the canvas is rasterized in that frame's commit (on the main
  thread; with software raster, as here, that can take longer than the
  ``setOption`` itself), so by then the pixels are on their way to the screen;
- ``ws``: each live ``points`` message as it arrives (per series: its last step
  and how many points), from a listener added to the page's WebSocket;
- ``wheels``, ``clicks``: each wheel event and click on the page.

Times are ``performance.now()`` (ms since navigation start) and ``Date.now()``
(ms since the epoch, the clock a trainer's ``log()`` reads on this machine).
Nothing here changes what the page does.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import sys
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "browser"))  # page_helpers: where a chart's plot is

from page_helpers import page_context  # noqa: E402
from query_m4 import machine  # noqa: E402,F401  (the load average and busiest processes, printed beside figures)

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

RECORDER_JS = r"""
(() => {
  const log = { draws: [], paints: [], ws: [], wheels: [], clicks: [] };
  Object.defineProperty(window, '__bench', { value: log });
  try { performance.setResourceTimingBufferSize(100000); } catch (e) { /* older browsers */ }
  // a draw before a frame's animation callbacks is rasterized in that frame's commit
  let paintAsked = false;
  const onFrame = () => {
    paintAsked = false;
    const frame = performance.now();
    setTimeout(() => log.paints.push({ frame, t: performance.now(), wall: Date.now() }), 0);
  };
  new MutationObserver((records) => {
    const t = performance.now(), wall = Date.now();
    const cards = new Set();
    for (const r of records) if (r.target.classList && r.target.classList.contains('chart-card')) cards.add(r.target);
    for (const card of cards) {
      log.draws.push({ t, wall, key: card.dataset.key, state: card.dataset.state, points: card.dataset.points });
    }
    if (cards.size && !paintAsked) { paintAsked = true; requestAnimationFrame(onFrame); }
  }).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-state', 'data-points'] });
  addEventListener('wheel', () => log.wheels.push(performance.now()), { capture: true, passive: true });
  addEventListener('click', () => log.clicks.push(performance.now()), { capture: true, passive: true });
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        const t = performance.now(), wall = Date.now();
        let m;
        try { m = JSON.parse(event.data); } catch (e) { return; }
        if (!m || m.type !== 'points' || !Array.isArray(m.series)) return;
        for (const s of m.series) {
          log.ws.push({ t, wall, run: m.run, key: s.key, last: s.step[s.step.length - 1], n: s.step.length });
        }
      });
    }
  };
})();
"""


@contextlib.contextmanager
def chromium() -> Iterator[Any]:
    """Debian's Chromium, headless (never ``playwright install``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def recorded_page(browser: Any, width: int = 1280, height: int = 800) -> contextlib.AbstractContextManager[Any]:
    """A page in a fresh context (empty cache) with the recorder installed; page errors are collected."""
    return page_context(browser, width, height, 1, init_script=RECORDER_JS)


def page_url(base: str, runs: list[tuple[str, str]], **params: str) -> str:
    """The page on a view, as a shared link gives it: runs selected through the URL state."""
    # each part encoded, then the value encoded again, as the page's own links are (urlState.ts)
    def q(s):
        return urllib.parse.quote(s, safe="")
    pairs = [("run", f"{q(p)}/{q(r)}") for p, r in runs] + list(params.items())
    return f"{base}/?{urllib.parse.urlencode(pairs)}"


def recorded(page: Any) -> dict[str, list[dict]]:
    return page.evaluate("() => JSON.parse(JSON.stringify(window.__bench))")


def resource_timings(page: Any, contains: str) -> list[dict]:
    """Resource Timing entries of the requests whose URL contains ``contains`` (ms since navigation start)."""
    return page.evaluate("""s => performance.getEntriesByType('resource').filter(e => e.name.includes(s)).map(e => ({
        name: e.name, start: e.startTime, requestStart: e.requestStart, responseStart: e.responseStart,
        responseEnd: e.responseEnd, bytes: e.encodedBodySize}))""", contains)


def get_json(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=60) as resp:
        return json.loads(resp.read())


def prometheus(base: str) -> dict[str, float]:
    """The bridge's /metrics, label-less samples summed by name."""
    with urllib.request.urlopen(base + "/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        out[name.split("{", 1)[0]] = out.get(name.split("{", 1)[0], 0.0) + float(value)
    return out


def pct(values: list[float], p: float) -> float:
    """The p-quantile (nearest rank) of values."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(p * len(s)) - 1))]


def latency_row(label: str, values: list[float], width: int = 44) -> str:
    """One line of latencies: p50, p95 and max, in ms."""
    return (f"  {label:<{width}} p50 {pct(values, 0.5):6.0f} ms   p95 {pct(values, 0.95):6.0f} ms   "
            f"max {max(values):6.0f} ms")


def med(values: list[float]) -> float:
    return statistics.median(values)


def painted(paints: list[dict], t: float, field: str = "t") -> float | None:
    """When a draw at ``t`` (ms since navigation start) was rasterized: the first paint whose frame came after it."""
    return next((p[field] for p in paints if p["frame"] > t), None)
