"""Hostile names as project, run and metric key: they come back exactly from
both engines, the points and rollups stay theirs, and they create no extra
series or tag values (nothing splits at a comma, a space, an ``=`` or a
newline, nothing escapes from a quoted literal)."""

from __future__ import annotations

import numpy as np
import pytest
from test_store_support import T0, Points, assert_same, batches, opener, reference, write_all

from curvestream_bridge.store.base import SeriesQuery
from curvestream_bridge.store.influx.ladder import time_plan
from curvestream_bridge.store.influx.lineproto import decode_tag
from curvestream_bridge.store.influx.rollup import BOTTOM_TARGET_POINTS

HOSTILE = [
    "a,b", "a=b", "a b", 'say "hi"', "it's", "back\\slash\\", "line\nbreak", "'; DROP TABLE series; --",
    '") |> drop(columns: ["_value"]) |> yield(name: "x', "\\n%0A%25", "tab\tand\r", "ünï cødé 😀",
    "€😀ü" * 1000 + "😀" * 250,  # 10,000 bytes of UTF-8
]


def influx_tag_values(store, measurement: str, tag: str) -> list[str]:
    rows = store._db.statements([f'SHOW TAG VALUES FROM "{measurement}" WITH KEY = "{tag}"'])[0]
    return [decode_tag(v[1]) for s in rows for v in s["values"]]


def influx_series_count(store) -> int:
    rows = store._db.statements(["SHOW SERIES"])[0]
    return sum(len(s["values"]) for s in rows)


def duckdb_series_count(store) -> int:
    return store._cursor().execute("SELECT count(*) FROM series").fetchall()[0][0]


@pytest.mark.parametrize("engine", ["duckdb", "influxdb"])
def test_hostile_names_round_trip_exactly_and_make_no_extra_series(engine, tmp_path, request):
    assert len(HOSTILE[-1].encode()) == 10_000
    store = opener(engine, tmp_path, request)()
    try:
        rng = np.random.default_rng(5)
        n = 600  # enough for rollups (they start at 64 points)
        points = Points(np.arange(n), T0 + np.arange(n) * 1_000_000, rng.standard_normal(n))
        write_all(store, batches(points, [200, 400], key="plain", project="plain", run="plain", producer=b"p0"))
        count = influx_series_count if engine == "influxdb" else duckdb_series_count
        before = count(store)
        for i, name in enumerate(HOSTILE):
            # each name is the project, the run and the key at once (and its neighbours' parts)
            key, project, run = name, HOSTILE[i - 1], HOSTILE[(i + 1) % len(HOSTILE)]
            write_all(store, batches(points, [300], key=key, project=project, run=run,
                                     producer=f"p{i + 1}".encode()))
        added = count(store) - before
        if engine == "duckdb":
            assert added == len(HOSTILE)  # one series row per key
        else:
            # per name: cs_scalar, cs_run, cs_rollup_plan, 8 step levels and the time levels (Grafana's
            # intervals from the series' bottom level up to a day); per producer: cs_batch
            time_levels = len(time_plan(points.walls, BOTTOM_TARGET_POINTS).ladder)
            assert added == len(HOSTILE) * (1 + 1 + 1 + 8 + time_levels) + len(HOSTILE)
            assert sorted(influx_tag_values(store, "cs_scalar", "metric")) == sorted(HOSTILE + ["plain"])
            assert sorted(influx_tag_values(store, "cs_scalar", "project")) == sorted(HOSTILE + ["plain"])
            assert sorted(influx_tag_values(store, "cs_rollup_step", "run")) == sorted(HOSTILE + ["plain"])
        runs = {(r.project, r.run) for r in store.runs()}
        for i, name in enumerate(HOSTILE):
            key, project, run = name, HOSTILE[i - 1], HOSTILE[(i + 1) % len(HOSTILE)]
            assert (project, run) in runs
            metrics = store.metrics(project, run)
            assert [m.key for m in metrics] == [key] and metrics[0].count == n
            for x, width in (("step", 1000), ("time", 20), ("relative", 3)):
                q = SeriesQuery(project, run, key, x, None, None, width)
                assert_same(store.series(q), reference(q, points), f"{name!r} {x}")
    finally:
        store.close()
