"""A sweep grouped by a config key, drawn from the bridge's groups
(``GET /api/v1/groups/series``) without loading one run's curve: each group's
band equals, per pixel column, the min–max of its runs' raw points, whole and
zoomed, and a click on a band lists its runs."""

from __future__ import annotations

import json
import math
import urllib.parse

import numpy as np

from curvestream_wire.v1 import run_pb2

from curvestream_bridge.decode import DecodedBatch, ScalarColumn
from curvestream_bridge.store import open_store
from curvestream_bridge.store.m4.kernel import pixel_columns
from fleet_store import T0
from page_helpers import open_page, plot_center
from servers import wait_until

KEY = "val/loss"
POINTS = 6_000  # 5 a pixel column: each run's answer is its M4, not its points
SWEEP = {"0.1": 4, "0.01": 3}  # lr -> runs


def _write(path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Noisy decaying curves with a spike and a dip each, NaN in some, the two lrs' 20 apart;
    name -> (steps, values)."""
    rng = np.random.default_rng(29)
    store = open_store(f"duckdb:///{path}")
    curves, batches = {}, []
    try:
        for lr, n in SWEEP.items():
            for seed in range(n):
                name = f"lr={lr} seed={seed}"
                steps = np.arange(POINTS, dtype=np.int64)
                values = (20 if lr == "0.1" else 0) + 5 * np.exp(-steps / 1500) + 3 * rng.standard_normal(POINTS)
                values[rng.integers(0, POINTS, 3)] = np.nan
                values[rng.integers(0, POINTS)] += 50
                values[rng.integers(0, POINTS)] -= 50
                meta = run_pb2.RunMeta(
                    project="sweep", run=name, config_json=json.dumps({"lr": float(lr), "seed": seed})
                )
                col = ScalarColumn(KEY, steps, T0 + steps * 1_000_000, values)
                batches.append(DecodedBatch(name.encode(), 1, "sweep", name, [col], [], [], meta, None, 0))
                curves[name] = (steps, values)
        store.write(batches)
    finally:
        store.close()
    return curves


def _check_bands(bands: dict, curves: dict) -> int:
    """Each group's drawn band against its runs' raw points, column by column; the columns checked."""
    start, end, width = bands["start"], bands["end"], bands["width"]
    checked = 0
    for group in bands["groups"]:
        lo = np.full(width, np.inf)
        hi = np.full(width, -np.inf)
        for member in group["runs"]:
            steps, values = curves[member["run"]]
            inside = (steps >= start) & (steps <= end) & ~np.isnan(values)
            cols = pixel_columns(steps[inside].astype(np.float64), start, end, width)
            np.minimum.at(lo, cols, values[inside])
            np.maximum.at(hi, cols, values[inside])
        got = np.array(group["column"])
        assert len(got) > 0.9 * width, (group["name"], len(got), width)
        assert np.array_equal(np.array(group["lo"]), lo[got]), group["name"]
        assert np.array_equal(np.array(group["hi"]), hi[got]), group["name"]
        checked += len(got)
    return checked


def test_a_groups_band_equals_per_column_the_min_and_max_of_its_runs_curves(browser, bridge_factory, tmp_path):
    from page_helpers import page_context

    curves = _write(tmp_path / "s.duckdb")
    bridge = bridge_factory(f"duckdb:///{tmp_path / 's.duckdb'}", "")
    with page_context(browser, 1280, 800, 1) as page:
        asked: list[str] = []
        page.on("request", lambda r: asked.append(urllib.parse.urlsplit(r.url).path) if "/api/" in r.url else None)
        open_page(page, bridge, runs=tuple(("sweep", n) for n in curves), groupby="config:lr")
        card = page.get_by_test_id(f"chart-{KEY}")
        wait_until(lambda: card.get_attribute("data-state") == "ready"
                   and card.get_attribute("data-groups") is not None, 60, "the groups drawn")
        assert json.loads(card.get_attribute("data-groups")) == {"lr=0.01 (3 runs)": 3, "lr=0.1 (4 runs)": 4}
        bands = page.evaluate("k => window.__curvestream.groupBands(k)", KEY)
        assert bands["band"] == "minmax" and (bands["start"], bands["end"]) == (0, POINTS - 1)
        assert _check_bands(bands, curves) > 0
        assert "/api/v1/series" not in asked, "no run's curve was loaded: the bridge drew the groups"
        assert asked.count("/api/v1/groups/series") == 1

        # zoomed in: asked again for the window, exact again
        x, y = plot_center(page, KEY)
        page.mouse.move(x, y)
        for _ in range(12):
            page.mouse.wheel(0, -100)
        def settled() -> bool:  # the groups drawn are those of the window the gesture ended on
            zoom = page.evaluate("window.__curvestream.zoom")
            bands = page.evaluate("k => window.__curvestream.groupBands(k)", KEY) or {}
            return (zoom is not None and card.get_attribute("data-state") == "ready"
                    and (bands.get("start"), bands.get("end")) == (math.floor(zoom[0]), math.ceil(zoom[1])))

        wait_until(settled, 60, "the zoomed groups")
        zoomed = page.evaluate("k => window.__curvestream.groupBands(k)", KEY)
        assert zoomed["end"] - zoomed["start"] < POINTS / 2
        assert _check_bands(zoomed, curves) > 0

        # a click inside a band lists its runs
        band = next(g for g in zoomed["groups"] if g["name"] == "lr=0.1 (4 runs)")

        def overlap(i: int) -> tuple[float, float]:  # what the band holds at this column and its neighbours
            return max(band["lo"][i - 2:i + 3]), min(band["hi"][i - 2:i + 3])

        # where the band is widest around its column: a click a pixel off, either way, still lands in it
        mid = max(range(2, len(band["x"]) - 2), key=lambda i: overlap(i)[1] - overlap(i)[0])
        lo, hi = overlap(mid)
        def pixel(y):
            return page.evaluate("([k, x, y]) => window.__curvestream.pixelOf(k, x, y)",
                                 [KEY, band["x"][mid], y])
        assert pixel(lo)[1] - pixel(hi)[1] > 4, "a band at least 4 pixels high there"
        at = pixel((lo + hi) / 2)
        page.mouse.click(*at)
        listed = page.get_by_test_id("group-runs")
        wait_until(lambda: listed.is_visible(), 10, "the runs of the band clicked")
        assert listed.get_attribute("data-group") == "lr=0.1 (4 runs)"
        assert sorted(listed.locator("li").all_text_contents()) == [f"lr=0.1 seed={s}" for s in range(4)]
        assert not page.page_errors, page.page_errors
