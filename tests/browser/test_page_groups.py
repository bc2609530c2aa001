"""A sweep grouped by a config key: one mean line and one band per value, from the member runs' points."""

from __future__ import annotations

import math

from page_helpers import (
    chart,
    drawn_series,
    duckdb_bridge,
    hover_tooltip,
    open_page,
    start_run,
    wait_chart,
    wait_stored,
)
from servers import wait_until

KEY = "val/loss"
STEPS = 100
# lr -> the runs' offsets: each run logs offset + step
SWEEP = {0.1: [10, 12, 17], 0.01: [30, 34]}


def test_grouping_a_sweep_by_a_config_key_draws_a_mean_line_and_a_band_per_value(
        page, bridge_factory, mosquitto, spool_dir, tmp_path, output_dir):
    bridge = duckdb_bridge(bridge_factory, tmp_path, mosquitto)
    names = []
    for lr, offsets in SWEEP.items():
        for seed, offset in enumerate(offsets):
            name = f"lr={lr} seed={seed}"
            names.append(name)
            with start_run(mosquitto, bridge, spool_dir, "sweep", name, config={"lr": lr, "seed": seed}) as run:
                for i in range(STEPS):
                    run.log({KEY: float(offset + i)}, step=i)
            wait_stored(bridge, "sweep", name, {KEY: STEPS})

    open_page(page, bridge, runs=tuple(("sweep", n) for n in names))
    wait_chart(page, KEY, lambda c: len(c["series"]) == 5 and all(s["points"] == STEPS for s in c["series"]),
               "five runs drawn one by one")

    page.get_by_test_id("group-by").select_option("config:lr")
    card = page.get_by_test_id(f"chart-{KEY}")
    wait_until(lambda: card.get_attribute("data-groups") is not None, 10, "groups drawn")
    assert "groupby=config%3Alr" in page.url
    snap = wait_chart(page, KEY, lambda c: len(c["groups"]) == 2, "two groups")
    groups = {g["name"]: g for g in snap["groups"]}
    assert set(groups) == {"lr=0.01 (2 runs)", "lr=0.1 (3 runs)"}
    low, high = groups["lr=0.01 (2 runs)"], groups["lr=0.1 (3 runs)"]
    assert sorted(high["runs"]) == ["lr=0.1 seed=0", "lr=0.1 seed=1", "lr=0.1 seed=2"]
    # the mean of offsets + step, and the members' min and max around it
    assert (high["yMin"], high["yMax"], high["points"]) == (13, 13 + STEPS - 1, STEPS)
    assert (high["bandMin"], high["bandMax"]) == (10, 17 + STEPS - 1)
    assert (low["yMin"], low["yMax"]) == (32, 32 + STEPS - 1)
    assert (low["bandMin"], low["bandMax"]) == (30, 34 + STEPS - 1)

    drawn = drawn_series(page, KEY)
    means = [s for s in drawn.values() if s["id"].endswith("|raw")]
    bands = [s for s in drawn.values() if s["id"].endswith("|env-hi")]
    assert len(means) == 2 and all(s["points"] == STEPS for s in means), "one mean line per group, not per run"
    assert len(bands) == 2 and all(s["area"] and s["points"] == STEPS for s in bands), "one filled band per group"
    assert card.get_attribute("data-envelope") == "true"

    shown = hover_tooltip(page, KEY, rows=2)
    page.screenshot(path=str(output_dir / "page-groups-min-max.png"))
    assert set(shown) == {"lr=0.01 (2 runs)", "lr=0.1 (3 runs)"}
    for name, (step, value) in shown.items():
        assert value == (13 if "0.1 " in name else 32) + step, (name, step, value)

    # ±1 standard deviation instead of min–max
    page.get_by_test_id("group-band").select_option("std")
    std_high = math.sqrt(((10 - 13) ** 2 + (12 - 13) ** 2 + (17 - 13) ** 2) / 3)
    snap = wait_chart(page, KEY, lambda c: c["groups"][0]["band"] == "std", "the std band")
    groups = {g["name"]: g for g in snap["groups"]}
    assert math.isclose(groups["lr=0.1 (3 runs)"]["bandMin"], 13 - std_high)
    assert math.isclose(groups["lr=0.1 (3 runs)"]["bandMax"], 13 + STEPS - 1 + std_high)
    assert math.isclose(groups["lr=0.01 (2 runs)"]["bandMin"], 30)
    page.mouse.move(5, 5)
    page.screenshot(path=str(output_dir / "page-groups-std.png"))

    # and back to one curve per run
    page.get_by_test_id("group-by").select_option("")
    wait_until(lambda: chart(page, KEY)["groups"] == [] and card.get_attribute("data-groups") is None, 10,
               "runs drawn one by one again")
    assert len([s for s in drawn_series(page, KEY) if s.endswith("|raw")]) == 5
    assert not page.page_errors, page.page_errors
