"""What the page's browser tests share: a bridge on DuckDB, runs logged with the
real client, and reads of what the page draws (its data attributes and
``window.__curvestream``), never of canvas pixels."""

from __future__ import annotations

import contextlib
import json
import re
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any

import curvestream
from helpers import get_json, run_path
from servers import wait_until

__all__ = ["duckdb_bridge", "duckdb_bridge_with_rules",
           "start_run", "stored_counts", "wait_stored", "page_url", "open_page", "chart", "drawn_series",
           "wait_chart", "plot_center", "hover_tooltip", "page_context", "rows_of_runs"]

# the plot's margins inside a chart (core/options.ts GRID)
GRID_LEFT, GRID_RIGHT, GRID_TOP, GRID_BOTTOM = 60, 18, 14, 62


def duckdb_bridge(bridge_factory: Any, tmp_path: Any, broker: Any) -> Any:
    return bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", broker.url)


def duckdb_bridge_with_rules(bridge_factory: Any, tmp_path: Any, broker: Any, rules: str) -> Any:
    """A bridge on DuckDB whose alert rules are ``rules`` (the YAML of a rules file)."""
    path = tmp_path / "rules.yaml"
    path.write_text(rules)
    return bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", broker.url, alert_rules=str(path))


def start_run(broker: Any, bridge: Any, spool_dir: Any, project: str, name: str, **kwargs: Any) -> Any:
    """A real client run streaming over the broker into the bridge."""
    return curvestream.init(project=project, id=name, mqtt_url=broker.url, bridge_url=bridge.url,
                            spool_dir=str(spool_dir), **kwargs)


def stored_counts(bridge: Any, project: str, run: str) -> dict[str, int]:
    body = get_json(bridge.url, run_path(project, run) + "/metrics")
    return {m["key"]: m["count"] for m in body["metrics"]}


def wait_stored(bridge: Any, project: str, run: str, counts: dict[str, int], timeout: float = 60) -> None:
    def arrived() -> bool:
        have = stored_counts(bridge, project, run)
        return all(have.get(k) == n for k, n in counts.items())

    wait_until(arrived, timeout, f"{counts} stored for {project}/{run}")


def page_url(bridge: Any, runs: tuple[tuple[str, str], ...] = (), **params: str) -> str:
    """The page's address on a view, as a shared link gives it: ``runs`` selected, other settings as parameters."""
    # each part encoded, then the value encoded again, as the page's own links are (urlState.ts)
    def q(s):
        return urllib.parse.quote(s, safe="")
    pairs = [("run", f"{q(p)}/{q(r)}") for p, r in runs] + list(params.items())
    return f"{bridge.url}/?{urllib.parse.urlencode(pairs)}"


def open_page(page: Any, bridge: Any, runs: tuple[tuple[str, str], ...] = (), **params: str) -> None:
    """Open the page on a view, as a shared link would: ``runs`` selected, other settings as URL parameters."""
    page.goto(page_url(bridge, runs, **params))
    page.wait_for_function("() => window.__curvestream !== undefined")


def chart(page: Any, key: str) -> dict | None:
    """The chart's snapshot: state, window, raw, smoothing, series (points, yMin, yMax …), groups."""
    return page.evaluate("k => window.__curvestream.chart(k)", key)


def drawn_series(page: Any, key: str) -> dict[str, dict]:
    """What ECharts holds for a chart, by series id."""
    return {s["id"]: s for s in page.evaluate("k => window.__curvestream.drawnSeries(k)", key) or []}


def wait_chart(page: Any, key: str, predicate: Callable[[dict], bool], what: str, timeout: float = 60) -> dict:
    """Wait until the chart's snapshot satisfies ``predicate``; return that snapshot."""
    seen: list[dict] = []

    def check() -> bool:
        snap = chart(page, key)
        if snap is not None and snap["state"] == "ready" and predicate(snap):
            seen.append(snap)
            return True
        return False

    try:
        wait_until(check, timeout, f"chart {key!r}: {what}", interval=0.1)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last snapshot: {json.dumps(chart(page, key))[:2000]}") from None
    return seen[-1]


def plot_center(page: Any, key: str) -> tuple[float, float]:
    """Viewport coordinates of the middle of a chart's plot area."""
    box = page.get_by_test_id(f"chart-{key}").locator(".chart-canvas").bounding_box()
    assert box is not None, f"chart {key!r} has no canvas on screen"
    x = box["x"] + GRID_LEFT + (box["width"] - GRID_LEFT - GRID_RIGHT) / 2
    y = box["y"] + GRID_TOP + (box["height"] - GRID_TOP - GRID_BOTTOM) / 2
    return x, y


def hover_tooltip(page: Any, key: str, rows: int) -> dict[str, tuple[int, float]]:
    """Hover the middle of a chart's plot like a user; read the tooltip's rows as name -> (step, value)."""
    x, y = plot_center(page, key)
    page.mouse.move(x - 40, y)
    page.mouse.move(x, y)
    found = page.get_by_test_id(f"chart-{key}").locator(".cs-tt-rows tr")
    wait_until(lambda: found.count() == rows and found.first.is_visible(), 10, f"a tooltip with {rows} rows")
    shown = {}
    for i in range(rows):
        row = found.nth(i)
        where = row.locator(".cs-tt-where").inner_text()
        step = int(re.search(r"step ([\d,]+)", where).group(1).replace(",", ""))
        shown[row.locator(".cs-tt-name").inner_text()] = (step, float(row.locator(".cs-tt-value").inner_text()))
    return shown


@contextlib.contextmanager
def page_context(browser: Any, width: int, height: int, scale: float, init_script: str | None = None) -> Iterator[Any]:
    """A page with its own viewport and device pixel ratio (the ``page`` fixture is 1280×800 at 1×), in a
    fresh context (empty cache); ``init_script`` runs before the page's own scripts."""
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=scale)
    if init_script is not None:
        context.add_init_script(init_script)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.page_errors = errors
    try:
        yield pg
    finally:
        context.close()


def rows_of_runs(page: Any, project: str) -> dict[str, str]:
    """The runs of one project in the runs table, as run name -> state badge text. (The session's broker
    keeps other tests' runs as retained messages, so the table may list more projects.)"""
    return page.evaluate("""p => Object.fromEntries([...document.querySelectorAll('[data-testid="run-row"]')]
        .filter(r => r.dataset.project === p)
        .map(r => [r.dataset.run, r.querySelector('[data-testid="run-state"]').textContent]))""", project)
