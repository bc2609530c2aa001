"""Hostile names travel exactly through MQTT topics, both stores and the API;
tokens guard reads and writes; an open bridge only listens on loopback."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request

import pytest

import curvestream
from helpers import get_json, metric_counts, run_path
from servers import free_port, wait_until

HOSTILE = [
    "comma,equals=space here",
    'quote"double',
    "quote'single",
    "back\\slash\\",
    "new\nline",
    "'; DROP DATABASE curvestream; --",
    '") |> drop(columns: ["_value"])',
    "slash/and%percent+plus#hash",
]


@pytest.mark.parametrize("engine", ["duckdb", "influxdb"])
def test_hostile_project_run_and_key_names_round_trip_exactly_through_mqtt_and_the_store(
        engine, tmp_path, mosquitto, influxd, bridge_factory, spool_dir):
    store = f"duckdb:///{tmp_path / 'store.duckdb'}" if engine == "duckdb" else influxd.store_url("hostile")
    bridge = bridge_factory(store, mosquitto.url)
    long_key = "ü" * 10_000
    names = HOSTILE[:4]
    keys = HOSTILE + [long_key]
    for i, project in enumerate(names):
        run_name = HOSTILE[(i + 4) % len(HOSTILE)]
        with curvestream.init(project=project, id=run_name, mqtt_url=mosquitto.url, bridge_url=bridge.url,
                              spool_dir=str(spool_dir)) as run:
            for step in range(10):
                run.log({k: float(step * (j + 1)) for j, k in enumerate(keys)}, step=step)
    # (the shared broker also hands this new bridge other tests' retained run metadata: ignore those projects)
    runs = {(r["project"], r["run"]) for r in get_json(bridge.url, "/api/v1/runs")["runs"] if r["project"] in names}
    expected_runs = {(p, HOSTILE[(i + 4) % len(HOSTILE)]) for i, p in enumerate(names)}
    assert runs == expected_runs, "exactly these runs, no mangled extra ones"
    for project, run_name in expected_runs:
        wait_until(lambda project=project, run_name=run_name: metric_counts(bridge.url, project, run_name)
                   == dict.fromkeys(keys, 10), 60,
                   "every key of the run, exactly")
        for j, key in enumerate(keys):
            ans = get_json(bridge.url, run_path(project, run_name) + "/series", key=key, width=100)
            assert ans["key"] == key and ans["project"] == project and ans["run"] == run_name
            assert ans["points"]["y"] == [float(s * (j + 1)) for s in range(10)]


def _status(url: str, token: str | None = None, data: bytes | None = None) -> int:
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        err.close()
        return err.code


def test_read_and_write_tokens_guard_the_api(tmp_path, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url, read_token="r3ad",
                            write_token="wr1te")
    runs = bridge.url + "/api/v1/runs"
    assert _status(runs) == 401
    assert _status(runs, "wrong") == 403
    assert _status(runs, "r3ad") == 200
    assert _status(runs + "?token=r3ad") == 200
    ingest = bridge.url + "/api/v1/ingest"
    assert _status(ingest, None, b"") == 401
    assert _status(ingest, "r3ad", b"") == 403
    assert _status(ingest, "wr1te", b"\x00garbage") == 400
    assert _status(bridge.url + "/healthz") == 200
    # a trainer with the write token gets through the HTTP fallback
    with curvestream.init(project="auth", id="r", mqtt_url="mqtt://127.0.0.1:1", bridge_url=bridge.url,
                          write_token="wr1te", fallback_after_ms=0, spool_dir=str(spool_dir)) as run:
        run.log({"x": 1.0}, step=0)
    assert run.finish().complete
    req = urllib.request.Request(bridge.url + run_path("auth", "r") + "/metrics",
                                 headers={"Authorization": "Bearer r3ad"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        assert b'"count":1' in resp.read()


def test_an_open_bridge_refuses_to_listen_beyond_loopback(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CURVESTREAM_")}
    env.update(CURVESTREAM_HTTP_ADDR=f"0.0.0.0:{free_port()}", CURVESTREAM_MQTT_URL="",
               CURVESTREAM_STORE=f"duckdb:///{tmp_path / 's.duckdb'}")
    proc = subprocess.run([sys.executable, "-m", "curvestream_bridge"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0
    assert "refusing to listen on 0.0.0.0" in proc.stderr + proc.stdout
    assert "CURVESTREAM_READ_TOKEN" in proc.stderr + proc.stdout


def test_names_with_a_slash_work_in_api_paths(tmp_path, mosquitto, bridge_factory, spool_dir):
    bridge = bridge_factory(f"duckdb:///{tmp_path / 'store.duckdb'}", mosquitto.url)
    with curvestream.init(project="team/vision", id="exp/1 %2F", mqtt_url=mosquitto.url, bridge_url=bridge.url,
                          spool_dir=str(spool_dir)) as run:
        run.log({"a/b": 1.0}, step=0)
    path = "/api/v1/runs/" + urllib.parse.quote("team/vision", safe="") + "/" + \
        urllib.parse.quote("exp/1 %2F", safe="") + "/metrics"
    wait_until(lambda: get_json(bridge.url, path)["metrics"], 30, "the run's metrics")
    assert get_json(bridge.url, path)["run"] == "exp/1 %2F"
